"""Live states: `op="state"` by id or label (STATE-10..12, STATE-8)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from ..text import normalise
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


@character_op("state", required=["state", "value"])
def set_state(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    st = find(subj.ev.idx.states, tag.get("state") or "", "state")
    if isinstance(st, Result):
        return Outcome(st, state)
    if subj.ev.hidden(st):
        return refuse(state, "hidden")  # STATE-10: a hidden state is not set by any command
    key = normalise(tag.get("value") or "")
    hits = [v for v in st.values if key in (normalise(v), normalise(st.label_of(v)))]
    if len(hits) != 1:
        return refuse(state, "unknown-value" if not hits else "ambiguous")
    value = hits[0]
    states = {k: v for k, v in subj.live.states.items() if k != st.id}
    if value != st.start:
        states[st.id] = value  # STATE-8: saved only when off its default
    return Outcome(ok(st.label_of(value)), subj.with_live(state, subj.live.but(states=states)))
