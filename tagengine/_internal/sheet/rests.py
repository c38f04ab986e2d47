"""Rests (REST-1..8, WOUND-40..43, STATE-16, DEC-17): restore pools, heal wound tracks, reset states.

`take_rest` is the Python API a chat app calls; `op="rest"` calls it too. Pure: a new state comes back.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import NotFoundError
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.live import PoolDef
from ..ruleset.refs import ValueRefDef
from ..ruleset.sheet import FractionOfMaxDef, RestDef, RestStepDef
from ..state import GameState, WoundMarks
from . import marking
from .evaluator import Eval
from .ops import rounded


def fraction(f: FractionOfMaxDef, top: int) -> int:
    """DEC-17: `fractionOfMax` rounds down unless `round` says otherwise; `min` is the least it changes."""
    return max(rounded(f.fractionOfMax * top, f.round or "down"), f.min or 0)


def _moved(cur: int, top: int, bottom: int, step: RestStepDef, ev: Eval, *, of_max: int) -> int:
    if step.to is not None:
        target = {"max": top, "min": bottom}.get(step.to, step.to) if isinstance(step.to, str) else step.to
        return max(bottom, min(top, int(target)))
    if isinstance(step.by, FractionOfMaxDef):
        return max(bottom, min(top, cur + fraction(step.by, of_max)))
    if isinstance(step.by, ValueRefDef):
        return max(bottom, min(top, cur + ev.read(step.by)))
    return cur


TouchedKind = Literal["pool", "rows", "track", "wound", "state"]


@frozen(slots=True)
class Touched:
    """One target a rest changed: a pool, a list's row pools, a plain or wound track, or a live state."""

    kind: TouchedKind
    id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


class Resting:
    """Applies steps to one character, each step reading the state the previous one left."""

    def __init__(self, rs: Ruleset, state: GameState, name: str) -> None:
        self.rs, self.state, self.name = rs, state, name
        self.touched: list[Touched] = []

    @property
    def ev(self) -> Eval:
        return Eval(self.rs, self.state.cards[self.name], self.state.live_of(self.name))

    def _set_live(self, **changes: Any) -> None:
        self.state = self.state.with_live(self.name, self.state.live_of(self.name).but(**changes))

    def _set_pools(self, values: dict[str, int]) -> None:
        live = self.state.live_of(self.name)
        self._set_live(pools={**live.pools, **values})

    def pools(self, step: RestStepDef, pools: list[PoolDef]) -> None:
        ev = self.ev
        pools = [p for p in pools if not ev.hidden(p)]
        if not pools:
            return
        if step.shared and isinstance(step.by, FractionOfMaxDef):  # REST-7: one amount for the whole group
            left = fraction(step.by, sum(ev.pool_max(p) for p in pools))
            values = {}
            for p in pools:  # in the order the sheet lists them, each up to what it is missing
                cur, top = ev.pool_cur(p), ev.pool_max(p)
                give = min(left, top - cur)
                values[p.id] = cur + give
                left -= give
            self._set_pools(values)
        else:  # REST-6: each pool by its own fraction
            self._set_pools({p.id: _moved(ev.pool_cur(p), ev.pool_max(p), 0, step, ev, of_max=ev.pool_max(p))
                             for p in pools})
        self.touched += [Touched("pool", p.id) for p in pools]

    def list_pools(self, step: RestStepDef, list_id: str) -> None:
        ev = self.ev
        cells = ev.row_pools(list_id)
        if cells is None:
            return
        out = tuple(_moved(cur, top, 0, step, ev, of_max=top) for cur, top in cells)
        self._set_live(rows={**ev.live.rows, list_id: out})
        self.touched.append(Touched("rows", list_id))

    def track(self, step: RestStepDef, tid: str) -> None:
        ev = self.ev
        t = ev.idx.tracks.get(tid)
        if t is None or ev.hidden(t):
            return
        if not t.is_wound:
            new = _moved(ev.plain_value(t), ev.plain_max(t), t.min, step, ev, of_max=ev.plain_max(t))
            self._set_live(tracks={**ev.live.tracks, t.id: new})
            self.touched.append(Touched("track", t.id))
            return
        model, current, _ = ev.wound_marks(t)
        marks, overflow = current.marks, current.overflow
        if step.to is not None:
            if step.to == "max":
                return  # WOUND-43: it would add marks
            keep = 0 if step.to == "min" else int(step.to)
            marks, overflow = marking.reduce_to(model, marks, overflow, keep, step.kind)  # WOUND-40, WOUND-42
        elif isinstance(step.by, ValueRefDef):
            by = ev.read(step.by)
            if by >= 0:
                return  # WOUND-43: a rest never marks; a positive `by` is skipped silently
            marks, overflow = marking.heal(model, marks, overflow, -by, step.kind)  # WOUND-41
        else:
            return
        self._set_live(marks={**ev.live.marks, t.id: WoundMarks(marks, overflow)})
        self.touched.append(Touched("wound", t.id))

    def live_state(self, step: RestStepDef, sid: str) -> None:
        ev = self.ev
        st = ev.idx.states.get(sid)
        if st is None or ev.hidden(st) or step.to is None:
            return
        value = st.start if step.to == "default" else str(step.to)  # STATE-16
        if value not in st.values:
            return
        states = {k: v for k, v in ev.live.states.items() if k != sid}
        if value != st.start:
            states[sid] = value
        self._set_live(states=states)
        self.touched.append(Touched("state", sid))

    def step(self, step: RestStepDef) -> None:
        s = self.rs.sheet
        if step.pool is not None:
            pool = s.pools.get(step.pool)
            self.pools(step, [pool] if pool else [])
        elif step.poolGroup is not None:
            self.pools(step, [p for p in s.pools if p.group == step.poolGroup])
        elif step.listPools is not None:
            self.list_pools(step, step.listPools)
        elif step.track is not None:
            self.track(step, step.track)
        elif step.state is not None:
            self.live_state(step, step.state)


def take_rest(rs: Ruleset, state: GameState, name: str, rest: RestDef | str) -> tuple[GameState, list[Touched]]:
    """Apply a rest to the character `name`; returns the new state and what it touched, in step order.
    Raises NotFoundError for an unknown character or rest."""
    card = state.character(name)
    if card is None:
        raise NotFoundError("character", name, state.characters)
    if isinstance(rest, str):
        found = next((r for r in rs.file.sheet.rests if r.id == rest), None)
        if found is None:
            raise NotFoundError("rest", rest, tuple(r.id for r in rs.file.sheet.rests))
        rest = found
    r = Resting(rs, state, card)
    for step in rest.steps:
        r.step(step)
    return r.state, list(dict.fromkeys(r.touched))
