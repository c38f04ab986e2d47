"""Conditions: `op="condition"` with `to="on"` or `to="off"` (SHEET-35)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from ..text import normalise
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


@character_op("condition", required=["condition", "to"])
def condition(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    c = find(rs.file.sheet.live.conditions, tag.get("condition") or "", "condition")
    if isinstance(c, Result):
        return Outcome(c, state)
    to = normalise(tag.get("to") or "")
    if to not in ("on", "off"):
        return refuse(state, "invalid-value")
    conditions = subj.live.conditions | {c.id} if to == "on" else subj.live.conditions - {c.id}
    return Outcome(ok(to), subj.with_live(state, subj.live.but(conditions=frozenset(conditions))))
