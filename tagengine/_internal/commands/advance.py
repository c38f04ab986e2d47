"""The party sheet's `advance` (PARTY-11, PARTY-16..19, DEC-13..15): a permanent change by `by` or `to`."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..state import PARTY, GameState
from ..tags import Tag
from ..text import prompt_unsafe
from .numbers import parse_int
from .pools import clamp_maxima
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


@character_op("advance", required=["field"], choose_one=["by", "to"], party=True, character=False)
def advance(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    party = rs.file.party
    assert party is not None
    f = find(party.fields, tag.get("field") or "", "field")
    if isinstance(f, Result):
        return Outcome(f, state)
    computed = {fm.field for fm in party.fromMembers}  # read from the members, never stored (PARTY-31)
    if party.advancement is None or f.id not in party.advancement.fields or f.id in computed:
        return refuse(state, "not-advanceable")
    current = subj.ev.fields.get(f.id)
    if f.type == "number":
        if tag.has("by"):
            by = parse_int(tag.get("by"))
            if by is None:
                return refuse(state, "invalid-amount")
            value = (current or 0) + by
        else:
            value = parse_int(tag.get("to"))
            if value is None:
                return refuse(state, "invalid-value")
        if (f.min is not None and value < f.min) or (f.max is not None and value > f.max):
            return refuse(state, "invalid-value")  # DEC-15: outside the field's range
    else:
        if tag.has("by"):
            return refuse(state, "invalid-value")
        value = (tag.get("to") or "").strip()
        if (f.maxLength is not None and len(value) > f.maxLength) or prompt_unsafe(value, label=False):
            return refuse(state, "invalid-value")
    fields = {**(state.party_sheet.get("fields") or {}), f.id: value}
    sheet = {**state.party_sheet, "fields": fields}
    new = state.with_party_sheet(sheet, state.party_revision + 1)  # DEC-15
    return Outcome(ok(str(value)), clamp_maxima(rs, state, new, [PARTY]))  # PARTY-20: a lowered max clamps
