"""Saving the shared party sheet from a chat app (PARTY-35..37, DEC-28).

Each save names the revision it was opened at. A save opened before someone else's save landed is
refused with `PartyConflict`, which carries the newer sheet; saving again with that revision is the
player's deliberate choice to replace it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import Problem, StateError, TagengineError
from ..ruleset import Ruleset
from ..state import PARTY, GameState, Reader
from .pools import clamp_maxima


class PartyConflict(TagengineError):
    """The party sheet changed since the draft was opened (PARTY-37)."""

    def __init__(self, sheet: Mapping[str, Any], revision: int) -> None:
        super().__init__(f"the party sheet was saved at revision {revision} after this draft was opened")
        self.sheet = sheet
        self.revision = revision


def save_party(rs: Ruleset, state: GameState, draft: Mapping[str, Any], opened_at: int) -> GameState:
    """The state with the draft party sheet saved and the revision incremented (PARTY-36). Raises
    PartyConflict when the draft is stale (PARTY-37), StateError when it does not fit the ruleset."""
    if rs.file.party is None:
        raise StateError([Problem("party", "no-party", "the ruleset has no party sheet", None)], "party save")
    if opened_at != state.party_revision:
        raise PartyConflict(state.party_sheet, state.party_revision)
    r = Reader(rs)
    sheet = {"fields": r.fields(rs.file.party.fields, draft.get("fields"), "fields"),
             "lists": r.lists(rs.file.party.lists, draft.get("lists"), "lists")}
    if r.warnings:
        raise StateError(r.warnings, "party save")
    saved = state.with_party_sheet(sheet, state.party_revision + 1)
    return clamp_maxima(rs, state, saved, [PARTY])  # PARTY-20: a lowered maximum clamps its pools
