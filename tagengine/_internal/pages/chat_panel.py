"""The SillyTavern extension's panel (decisions STX-4): the game sheet of the chat on screen, as JSON.

The same plain values as the game sheet page (`game_sheet.sheet_context`: characters, the party sheet, clocks
as SVG wedges, the last receipts) with each sheet's hand edits by path (`sheet_editor.play_context`), so the
extension draws what the page draws and posts the edits the page posts. No markup is made here: the extension
builds its elements from these values and sets every text as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ruleset import Ruleset
from ..sheet.form import play_controls
from ..state import GameState
from .game_sheet import sheet_context
from .sheet_editor import Ids, play_context


def panel_json(rs: Ruleset, state: GameState, receipts: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The panel's sheet at `state`: `sheet_context`'s values with each live value's control (`ctl`: its path,
    bounds, a wound track's boxes and kinds), and the checks each character can roll."""
    ids = Ids("te-")
    names: list[str | None] = [*state.characters, *((None,) if rs.party is not None else ())]
    controls = {name: play_context(play_controls(rs, state, name), ids) for name in names}
    values = sheet_context(rs, state, receipts=receipts, controls=controls)
    return {"ruleset": values["ruleset"], "characters": values["characters"], "party": values["party"],
            "clocks": values["clocks"], "clocks_enabled": values["clocks_enabled"], "receipts": values["receipts"],
            "dice_pool": rs.dice_pool, "words": words_of(rs)}


def words_of(rs: Ruleset) -> dict[str, Any]:
    """The ruleset's own words for what a receipt names by id (a tag may say `pool="stress"`): each pool's, track's
    and state's label by its id, and the party sheet's label ("Crew"), so a badge says what the sheet says."""
    labels: dict[str, str] = {}
    party = rs.file.party
    for d in [*rs.sheet.pools.items, *rs.sheet.tracks.items, *rs.sheet.states.items,
              *(party.pools if party is not None else ())]:
        labels.setdefault(d.id, d.label)
    return {"labels": labels, "party": party.label if party is not None else None}
