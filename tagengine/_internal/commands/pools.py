"""Pools: `spend`, `restore` and the pool form of `damage` (DESIGN.md section 5, PARTY-20)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..ruleset.live import PoolDef
from ..state import GameState
from ..tags import Tag
from .numbers import parse_int
from .result import Outcome, Result, ok, refuse, refused
from .target import Subject, character_op, find


def pool_of(subj: Subject, tag: Tag) -> PoolDef | Result:
    return find(subj.ev.idx.pools, tag.get("pool") or "", "pool")


def amount_of(tag: Tag) -> int | None:
    """`amount` defaults to 1 (DEC-9)."""
    raw = tag.get("amount")
    return 1 if raw is None else parse_int(raw)


def now(subj: Subject, pool: PoolDef, cur: int, temp: int = 0) -> str:
    text = f"{cur}/{subj.ev.pool_max(pool)}"
    return text + (f" +{temp} temp" if temp else "")


def set_pool(state: GameState, subj: Subject, pool: PoolDef, cur: int, temp: int | None = None) -> GameState:
    live = subj.live
    pools = {**live.pools, pool.id: cur}
    temps = dict(live.temp)
    if temp is not None:
        if temp:
            temps[pool.id] = temp
        else:
            temps.pop(pool.id, None)
    return subj.with_live(state, live.but(pools=pools, temp=temps))


def _target(subj: Subject, tag: Tag) -> tuple[PoolDef, int] | Result:
    pool = pool_of(subj, tag)
    if isinstance(pool, Result):
        return pool
    if subj.ev.hidden(pool):
        return refused("hidden")
    amount = amount_of(tag)
    if amount is None or amount < 0:
        return refused("invalid-amount")
    return pool, amount


@character_op("spend", required=["pool"], optional=["amount"], party=True)
def spend(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    got = _target(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    pool, amount = got
    cur = subj.ev.pool_cur(pool)
    if amount > cur:
        return refuse(state, "insufficient")
    temp = subj.live.temp.get(pool.id, 0)
    return Outcome(ok(now(subj, pool, cur - amount, temp)), set_pool(state, subj, pool, cur - amount))


@character_op("restore", required=["pool"], optional=["amount", "temp"], party=True)
def restore(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """Up to the pool's max. With the flag `temp`, grants temporary points instead (where `allowTemp`);
    temporary points do not stack: the larger grant stays (docs/decisions.md C-3)."""
    got = _target(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    pool, amount = got
    cur = subj.ev.pool_cur(pool)
    temp = subj.live.temp.get(pool.id, 0)
    if tag.has("temp"):
        if not pool.allowTemp or tag.get("temp") is not None:
            return refuse(state, "invalid-value")
        temp = max(temp, amount)
        return Outcome(ok(now(subj, pool, cur, temp)), set_pool(state, subj, pool, cur, temp))
    new = min(subj.ev.pool_max(pool), cur + amount)
    return Outcome(ok(now(subj, pool, new, temp)), set_pool(state, subj, pool, new))


def damage_pool(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """Temporary points first where `allowTemp`; the pool floors at 0."""
    if tag.has("kind") or tag.has("box"):
        return refuse(state, "unknown-attribute")
    got = _target(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    pool, amount = got
    cur = subj.ev.pool_cur(pool)
    temp = subj.live.temp.get(pool.id, 0) if pool.allowTemp else 0
    soaked = min(temp, amount)
    new = max(0, cur - (amount - soaked))
    return Outcome(ok(now(subj, pool, new, temp - soaked)), set_pool(state, subj, pool, new, temp - soaked))
