"""Live text: `op="text"` sets a short note such as concentration (SHEET-35); prompt-safe, length-limited."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from ..text import prompt_unsafe
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


@character_op("text", required=["text", "to"])
def set_text(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    t = find(rs.file.sheet.live.text, tag.get("text") or "", "field")
    if isinstance(t, Result):
        return Outcome(t, state)
    value = (tag.get("to") or "").strip()
    if len(value) > t.maxLength or prompt_unsafe(value) is not None:
        return refuse(state, "invalid-value")  # DEC-25
    text = {k: v for k, v in subj.live.text.items() if k != t.id}
    if value:
        text[t.id] = value
    return Outcome(ok(value), subj.with_live(state, subj.live.but(text=text)))
