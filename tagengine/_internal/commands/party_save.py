"""Saving the shared party sheet from a chat app (PARTY-35..37, DEC-28).

Each save names the revision it was opened at. A save opened before someone else's save landed is
refused with `PartyConflict`, which carries the newer sheet; saving again with that revision is the
player's deliberate choice to replace it. A save is an edit of the party sheet (`sheet_edits.edit_party`):
the draft is read as a whole sheet, and what differs from the sheet as it stands is what the edit changes,
so a chat can write the save as an edit receipt (docs/decisions.md ED-10).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import Problem, StateError, TagengineError
from ..ruleset import Ruleset
from ..sheet.edit_paths import Change
from ..sheet.fields import field_values
from ..state import GameState, Reader, thaw
from .sheet_edits import edit_party


class PartyConflict(TagengineError):
    """The party sheet changed since the draft was opened (PARTY-37)."""

    def __init__(self, sheet: Mapping[str, Any], revision: int) -> None:
        super().__init__(f"the party sheet was saved at revision {revision} after this draft was opened")
        self.sheet = sheet
        self.revision = revision


def draft_changes(rs: Ruleset, state: GameState, draft: Mapping[str, Any]) -> list[Change]:
    """The changes that make the party sheet the `draft`: a whole sheet, its fields and lists left out read as
    their defaults, as the state reader reads a sheet. A list that differs is written again row by row. Raises
    StateError naming every value the draft holds that the ruleset does not allow."""
    party = rs.file.party
    if party is None:
        raise StateError([Problem("party", "no-party", "the ruleset has no party sheet", None)], "party save")
    r = Reader(rs)
    fields = r.fields(party.fields, draft.get("fields"), "fields")
    lists = r.lists(party.lists, draft.get("lists"), "lists")
    if r.warnings:
        raise StateError(r.warnings, "party save")
    computed = {fm.field for fm in party.fromMembers}  # read from the members, never saved (PARTY-31)
    now = field_values(party.fields, state.party_sheet.get("fields") or {})
    changes = [Change("set", f"fields.{k}", v) for k, v in fields.items() if now.get(k) != v and k not in computed]
    for lst in party.lists:
        old = thaw((state.party_sheet.get("lists") or {}).get(lst.id) or [])
        if old == lists[lst.id]:
            continue
        changes += [Change("delete", f"lists.{lst.id}.{i}") for i in range(len(old) - 1, -1, -1)]
        for i, row in enumerate(lists[lst.id]):
            changes.append(Change("add", f"lists.{lst.id}"))
            changes += [Change("set", f"lists.{lst.id}.{i}.{k}", v) for k, v in row.items()]
    return changes


def save_party(rs: Ruleset, state: GameState, draft: Mapping[str, Any], opened_at: int) -> GameState:
    """The state with the draft party sheet saved and the revision incremented (PARTY-36). Raises
    PartyConflict when the draft is stale (PARTY-37), StateError when it does not fit the ruleset. A draft
    equal to the sheet saves nothing and leaves the revision where it is."""
    if rs.file.party is not None and opened_at != state.party_revision:
        raise PartyConflict(state.party_sheet, state.party_revision)
    edited = edit_party(rs, state, draft_changes(rs, state, draft), opened_at=opened_at)
    if not edited.ok:
        raise StateError(edited.problems, "party save")
    return edited.state  # PARTY-20: a lowered maximum clamped its pools (edit_party settles them, R-5)
