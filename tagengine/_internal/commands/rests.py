"""`op="rest"`: a rest defined in `sheet.rests` (DEC-17, REST-1..8)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..sheet.rests import Touched, take_rest
from ..state import GameState
from ..tags import Tag
from .result import Outcome, Result, ok
from .subject import Subject, character_op, find, subject


def summary(rs: Ruleset, state: GameState, name: str, touched: list[Touched]) -> str:
    """What the rest changed, as each target now reads (DEC-11), e.g. `Resolve 5/5; Harm 1/4 Scuffed`."""
    ev = subject(rs, state, name).ev
    out = []
    for item in touched:
        if item.kind == "pool" and (p := ev.idx.pools.get(item.id)) is not None:
            out.append(f"{p.label} {ev.pool_cur(p)}/{ev.pool_max(p)}")
        elif item.kind in ("track", "wound") and (t := ev.idx.tracks.get(item.id)) is not None:
            out.append(f"{t.label} {ev.wound(t).now if t.is_wound else ev.plain_value(t)}")
        elif item.kind == "state" and (st := ev.idx.states.get(item.id)) is not None:
            out.append(f"{st.label} {st.label_of(ev.state_value(item.id) or st.start)}")
        elif item.kind == "rows":
            lst = ev.idx.lists.get(item.id)
            out.append(f"{lst.label if lst else item.id} restored")
    return "; ".join(out) or "no change"


@character_op("rest", required=["rest"])
def rest(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    r = find(rs.file.sheet.rests, tag.get("rest") or "", "rest")
    if isinstance(r, Result):
        return Outcome(r, state)
    new_state, touched = take_rest(rs, state, subj.name, r)
    return Outcome(ok(summary(rs, new_state, subj.name, touched)), new_state)
