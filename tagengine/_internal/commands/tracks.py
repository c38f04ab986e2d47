"""Plain tracks: `op="track"` with `by` or `to`, clamped to min..max (TRACK-1..7, WOUND-30)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..state import GameState, updated
from ..tags import Tag
from .numbers import parse_int
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


@character_op("track", required=["track"], choose_one=["by", "to"])
def track(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    t = find(subj.ev.idx.tracks, tag.get("track") or "", "track")
    if isinstance(t, Result):
        return Outcome(t, state)
    if t.is_wound:
        return refuse(state, "wound-track")  # WOUND-30: a number cannot say which kinds the marks are
    if subj.ev.hidden(t):
        return refuse(state, "hidden")
    cur = subj.ev.plain_value(t)
    if tag.has("by"):
        by = parse_int(tag.get("by"))
        if by is None:
            return refuse(state, "invalid-amount")
        new = cur + by
    else:
        to = parse_int(tag.get("to"))
        if to is None:
            return refuse(state, "invalid-value")
        new = to
    new = max(t.min, min(subj.ev.plain_max(t), new))
    live = subj.live.but(tracks=updated(subj.live.tracks, t.id, new))
    return Outcome(ok(str(new)), subj.with_live(state, live))
