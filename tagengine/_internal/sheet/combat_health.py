"""What `combat.health` reads (WOUND-32..39): the pool or wound track a fight hits, what is left of it, and
whether the character is down (docs/decisions.md CB-4, CB-6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ruleset.live import PoolDef, TrackDef
from .views import HealthView

if TYPE_CHECKING:
    from .evaluator import Eval


def health_def(ev: Eval) -> PoolDef | TrackDef | None:
    """The pool or wound track `combat.health` names (import checks that it exists, WOUND-32); None when
    the ruleset declares none, for the party sheet, and when this sheet hides it."""
    combat = ev.rs.file.combat
    h = combat.health if combat is not None and not ev.party else None
    if h is None:
        return None
    found: PoolDef | TrackDef | None = ev.idx.pools.get(h.pool) if h.pool is not None else (
        ev.idx.tracks.get(h.track) if h.track is not None else None)
    return None if found is None or ev.hidden(found) else found


def health_view(ev: Eval) -> HealthView | None:
    """The health as it stands. A full track puts the character down (WOUND-34), and so does overflow: a mark
    no box could take (WOUND-36) or one past the highest severity; an empty pool does too (CB-4)."""
    t = health_def(ev)
    if isinstance(t, TrackDef):
        w = ev.wound(t)
        down = (f"{t.label} is full" if w.remaining <= 0 else
                f"{t.label} overflowed" if w.overflow else None)
        return HealthView(t.id, t.label, True, w.remaining, w.length, w.boxed, w.lowest, w.overflow, 0, down)
    if isinstance(t, PoolDef):
        cur = ev.pool_cur(t)
        temp = ev.live.temp.get(t.id, 0) if t.allowTemp else 0
        return HealthView(t.id, t.label, False, cur, ev.pool_max(t), temp=temp,
                          down=f"{t.label} is 0" if cur <= 0 else None)
    return None
