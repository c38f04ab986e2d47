"""`op="rest"`: a rest defined in `sheet.rests` (DEC-17, REST-1..8)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..sheet.rests import take_rest
from ..state import GameState
from ..tags import Tag
from .result import Outcome, Result, ok
from .target import Subject, character_op, find, subject


def summary(rs: Ruleset, state: GameState, name: str, touched: list[str]) -> str:
    """What the rest changed, as each target now reads (DEC-11), e.g. `Resolve 5/5; Harm 1/4 Scuffed`."""
    ev = subject(rs, state, name).ev
    out = []
    for item in touched:
        kind, tid = item.split(":", 1)
        if kind == "pool":
            p = ev.idx.pools.get(tid)
            out.append(f"{p.label} {ev.pool_cur(p)}/{ev.pool_max(p)}")  # type: ignore[union-attr]
        elif kind in ("track", "wound"):
            t = ev.idx.tracks.get(tid)
            out.append(f"{t.label} {ev.wound(t).now if t.is_wound else ev.plain_value(t)}")  # type: ignore[union-attr]
        elif kind == "state":
            st = ev.idx.states.get(tid)
            out.append(f"{st.label} {st.label_of(ev.state_value(tid) or st.start)}")  # type: ignore[union-attr]
        else:
            lst = ev.idx.lists.get(tid)
            out.append(f"{lst.label if lst else tid} restored")
    return "; ".join(out) or "no change"


@character_op("rest", required=["rest"])
def rest(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    r = find(rs.file.sheet.rests, tag.get("rest") or "", "rest")
    if isinstance(r, Result):
        return Outcome(r, state)
    new_state, touched = take_rest(rs, state, subj.name, r)
    return Outcome(ok(summary(rs, new_state, subj.name, touched)), new_state)
