"""Pools: `spend`, `restore` and the pool form of `damage` (DESIGN.md section 5, PARTY-20), on a pool or
on one row of a list with row pools (SHEET-31); and the clamp a lowered maximum writes (PARTY-20)."""

from __future__ import annotations

from collections.abc import Iterable

from ..ruleset import Ruleset
from ..ruleset.live import PoolDef
from ..ruleset.sheet import ListDef
from ..sheet import Eval
from ..state import PARTY, GameState, updated
from ..tags import Tag
from ..text import normalise, prompt_unsafe
from .family import Shape
from .numbers import parse_int
from .result import Outcome, Result, ok, refuse, refused
from .subject import Subject, character_op, find, subject


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
    pools = updated(live.pools, pool.id, cur)
    if temp is None:  # the temporary points stay as they are: the same read-only mapping
        return subj.with_live(state, live.but(pools=pools))
    temps = dict(live.temp)
    if temp:
        temps[pool.id] = temp
    else:
        temps.pop(pool.id, None)
    return subj.with_live(state, live.but(pools=pools, temp=temps))


def _pool_and_amount(subj: Subject, tag: Tag) -> tuple[PoolDef, int] | Result:
    pool = pool_of(subj, tag)
    if isinstance(pool, Result):
        return pool
    if subj.ev.hidden(pool):
        return refused("hidden")
    amount = amount_of(tag)
    if amount is None or amount < 0:
        return refused("invalid-amount")
    return pool, amount


# written without `list`: it names the list of a `row`, needed only where several lists hold row pools
@character_op("spend", optional=["amount", "list"], choose_one=["pool", "row"], party=True,
              written=Shape(choose_one=("pool", "row"), optional=("amount",)))
def spend(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    if tag.has("row"):
        return _spend_row(state, subj, tag)
    if tag.has("list"):
        return refuse(state, "unknown-attribute")  # `list` picks the list of a `row` (docs/decisions.md R-1)
    got = _pool_and_amount(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    pool, amount = got
    cur = subj.ev.pool_cur(pool)
    if amount > cur:
        return refuse(state, "insufficient")
    temp = subj.live.temp.get(pool.id, 0)
    return Outcome(ok(now(subj, pool, cur - amount, temp)), set_pool(state, subj, pool, cur - amount))


@character_op("restore", optional=["amount", "temp", "list"], choose_one=["pool", "row"], party=True,
              written=Shape(choose_one=("pool", "row"), optional=("amount", "temp")))
def restore(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """Up to the pool's max. With the flag `temp`, grants temporary points instead (where `allowTemp`);
    temporary points do not stack: the larger grant stays (docs/decisions.md C-3)."""
    if tag.has("row"):
        return _restore_row(state, subj, tag)
    if tag.has("list"):
        return refuse(state, "unknown-attribute")
    got = _pool_and_amount(subj, tag)
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


# -- row pools (SHEET-31) ---------------------------------------------------------------------------
def row_of(subj: Subject, tag: Tag) -> tuple[ListDef, int] | Result:
    """The list (`list`, which may be left out when the sheet has one list with row pools) and the row
    whose name column reads `row` (DEC-8). Unknown lists and rows are `unknown-pool`, a name two rows
    share is `ambiguous`, a hidden list `hidden` (docs/decisions.md R-1..R-3)."""
    ev = subj.ev
    with_pools = [lst for lst in ev.idx.lists if lst.pools is not None]
    name = tag.get("list")
    if name is None:
        if len(with_pools) != 1:
            return refused("missing-attribute" if with_pools else "unknown-pool")
        lst = with_pools[0]
    else:
        found = find(ev.idx.lists, name, "pool")
        if isinstance(found, Result):
            return found
        if found.pools is None:
            return refused("unknown-pool")
        lst = found
    if ev.hidden(lst):
        return refused("hidden")
    key = normalise(tag.get("row") or "")
    hits = [i for i, names in enumerate(ev.row_names(lst.id)) if key and any(normalise(n) == key for n in names)]
    if not hits:
        return refused("unknown-pool")
    if len(hits) > 1:
        return refused("ambiguous")
    return lst, hits[0]


def _row_and_amount(subj: Subject, tag: Tag) -> tuple[ListDef, int, int, int, int] | Result:
    """(list, row index, current, max, amount)."""
    got = row_of(subj, tag)
    if isinstance(got, Result):
        return got
    lst, i = got
    amount = amount_of(tag)
    if amount is None or amount < 0:
        return refused("invalid-amount")
    cells = subj.ev.row_cells(lst.id) or []
    cur, top = cells[i]
    return lst, i, cur, top, amount


def set_rows(state: GameState, subj: Subject, list_id: str, values: dict[int, int]) -> GameState:
    """The stored uses of a list with some rows set; rows not named keep theirs (None: at start)."""
    live = subj.live
    stored = list(live.rows.get(list_id, ()))
    if values:
        stored += [None] * (max(values) + 1 - len(stored))
    for i, v in values.items():
        stored[i] = v
    return subj.with_live(state, live.but(rows={**live.rows, list_id: tuple(stored)}))


def _spend_row(state: GameState, subj: Subject, tag: Tag) -> Outcome:
    got = _row_and_amount(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    lst, i, cur, top, amount = got
    if amount > cur:
        return refuse(state, "insufficient")
    return Outcome(ok(f"{cur - amount}/{top}"), set_rows(state, subj, lst.id, {i: cur - amount}))


def _restore_row(state: GameState, subj: Subject, tag: Tag) -> Outcome:
    if tag.has("temp"):
        return refuse(state, "invalid-value")  # a row has no temporary uses (as a pool without allowTemp)
    got = _row_and_amount(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    lst, i, cur, top, amount = got
    new = min(top, cur + amount)
    return Outcome(ok(f"{new}/{top}"), set_rows(state, subj, lst.id, {i: new}))


# -- a lowered maximum (PARTY-20) -------------------------------------------------------------------
def clamp_maxima(rs: Ruleset, before: GameState, after: GameState, names: Iterable[str] | None = None) -> GameState:
    """`after` with every pool and row pool that held more than its new maximum written down to it, so
    raising the maximum again does not refill it (docs/decisions.md R-5). `before` is the state the
    maxima changed from; `names` are the card names to look at (`$party` for the party sheet), every
    sheet when None. Pools left at their start and within the new maximum stay unstored."""
    if names is None:
        names = [*after.cards, *([PARTY] if rs.party is not None else [])]
    state = after
    for name in names:
        party = name == PARTY
        if not party and (name not in after.cards or name not in before.cards):
            continue
        old, new = subject(rs, before, name, party=party), subject(rs, state, name, party=party)
        pools = {}
        for p in new.ev.idx.pools:
            top, stored = new.ev.pool_max(p), new.live.pools.get(p.id)
            if max(old.ev.pool_cur(p), stored or 0) > top:
                pools[p.id] = top
        if pools:
            state = new.with_live(state, new.live.but(pools={**new.live.pools, **pools}))
            new = subject(rs, state, name, party=party)
        for lst in new.ev.idx.lists:
            cells, held = new.ev.row_cells(lst.id), old.ev.row_cells(lst.id) or []
            stored_rows = new.live.rows.get(lst.id, ())
            lowered = {}
            for i, (_, top) in enumerate(cells or []):
                was = max(held[i][0] if i < len(held) else 0, (stored_rows[i] if i < len(stored_rows) else 0) or 0)
                if was > top:
                    lowered[i] = top
            if lowered:
                state = set_rows(state, new, lst.id, lowered)
                new = subject(rs, state, name, party=party)
    return state


def damage_pool(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """Temporary points first where `allowTemp`; the pool floors at 0."""
    if tag.has("kind") or tag.has("box"):
        return refuse(state, "unknown-attribute")
    got = _pool_and_amount(subj, tag)
    if isinstance(got, Result):
        return Outcome(got, state)
    pool, amount = got
    cur = subj.ev.pool_cur(pool)
    temp = subj.live.temp.get(pool.id, 0) if pool.allowTemp else 0
    soaked = min(temp, amount)
    new = max(0, cur - (amount - soaked))
    return Outcome(ok(now(subj, pool, new, temp - soaked)), set_pool(state, subj, pool, new, temp - soaked))


# -- teaching (DEC-18, SHEET-31) ------------------------------------------------------------------
def uses_label(lst: ListDef) -> str:
    """What a list's row pools are called: the label of its `maxColumn` (`Uses`)."""
    column = lst.pools.maxColumn if lst.pools is not None else ""
    return next((c.label for c in lst.columns if c.id == column), column)


def taught_rows(ev: Eval) -> list[dict[str, str]]:
    """SHEET-31, DEC-18: each list with row pools, what its uses are called, the column that names a row,
    and for the example the first row of this sheet (the one `who` names) that is visible and fits in a
    tag, else `...`."""
    out = []
    for lst in ev.idx.lists:
        if lst.pools is None:
            continue
        col = ev.name_column(lst.id)
        names = ev.row_names(lst.id) if ev.row_pools(lst.id) else []
        example = next((n[0] for n in names if n and "\\" not in n[0] and prompt_unsafe(n[0], label=True) is None),
                       "...")
        out.append({"list": lst.label, "uses": uses_label(lst), "name": col.label if col else "name",
                    "example": example})
    return out
