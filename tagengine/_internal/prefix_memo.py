"""Values worked out item by item along a sequence, kept for the last few sequences seen.

A chat app sends the whole history on every turn, and a turn's history starts as the one before did (a new
turn adds a reply and a message; a regenerate sends the same list again). What is worked out message by
message (a reply's chain key, a message's token count) is found again for that shared start by comparing
the two lists, in C, instead of one look-up per message in a large table: each such look-up hashed the
request's new string and compared it with the table's old one, whose memory the other processes on the
machine had pushed out of the cache by then (S-30).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


def shared_start(a: list[T], b: list[T]) -> int:
    """How many items `a` and `b` have in common from the start."""
    n = min(len(a), len(b))
    # the common case, in one comparison; a slice takes a reference to each item it holds, so a list is compared
    # whole where it can be: a start made of the very objects is then found without touching one of them (a
    # slice's references read each object's header, memory that other work has most often pushed out of the
    # CPU's caches by the next turn)
    if (a if len(a) == n else a[:n]) == (b if len(b) == n else b[:n]):
        return n
    if a[0] != b[0]:  # another chat's, most often
        return 0
    lo, hi = 1, n - 1  # they differ before n: the longest start they share, each guess one comparison in C
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# what a kept item holds beyond its text, counted as characters: the item (a tuple, or a message object that a
# history read may hold too), its value, its size
ITEM_CHARS = 256


def held_chars(text: str) -> int:
    """A kept text item's `size`: its characters and ITEM_CHARS, so a history of many short messages is held
    by what it holds (some 250 bytes an item), not by its few characters of text (PF-59)."""
    return len(text) + ITEM_CHARS


def held_message_chars(message: Mapping[str, str]) -> int:
    """`held_chars` of a kept chat message, a role/content object: its text and ITEM_CHARS."""
    return len(message["content"]) + ITEM_CHARS


# a kept sequence: its items, their values, the running total of their sizes
Run = tuple[list[T], tuple[V, ...], tuple[int, ...]]

# how many items a request's sequence has beyond its own kept one, most often: none (the same history again), one (a
# prefill more, or a reply where only replies are items), two (a reply and a message more)
GROWN_BY = (0, 1, 2)


def _own_run(by_last: dict[int, Run[T, V]], items: list[T]) -> Run[T, V] | None:
    """The kept run whose last item is the very object `items` holds at the same place, GROWN_BY items before its end:
    a few look-ups by identity, however many runs are kept. Another chat's runs cost nothing here, where
    `_alike_first` takes a step for each (on a server that holds many chats, 16 a memo and four memos a turn: some
    15 % of the engine's work on a turn, PF-71); None when no such run is kept."""
    for more in GROWN_BY:
        if more >= len(items):
            break
        run = by_last.get(id(items[-1 - more]))
        if run is not None and len(run[0]) == len(items) - more:
            return run
    return None


def _alike_first(runs: tuple[tuple[list[T], object, object], ...], items: list[T]) -> list[int]:
    """The runs' indices, first those whose start as long as `items` (or all of it) ends on the very object `items`
    has there: most likely made of the very objects, so compared by identity, without reading one of them. Another
    run may hold the same messages as other objects (another chat that started alike: a branch, or a chat app's
    second chat from the same card), and found first it would be compared by value, message by message."""
    alike: list[int] = []
    other: list[int] = []
    for i, (kept, _, _) in enumerate(runs):
        m = min(len(kept), len(items))
        (alike if m and kept[m - 1] is items[m - 1] else other).append(i)
    return alike + other


class PrefixMemo(Generic[T, V]):
    """`values(items, more)`: one value per item, where value i depends on items[0..i] only (so a shared
    start has the same values). Up to `keep` sequences are kept, the most recently used first, holding at
    most `max_size` in all by `size` (of an item; characters, say): a longer history is worked out each
    time. The table is replaced whole, never changed in place, so threads may share it: a race loses a
    sequence, never a value."""

    def __init__(self, size: Callable[[T], int], keep: int = 16, max_size: int = 16 * 1024 * 1024) -> None:
        self.size = size
        self.keep = keep
        self.max_size = max_size
        # the runs, (items, their values, the running total of their sizes), the most recently used first; and the
        # runs by the id of their last item, which the run holds (so no other live object has that id), the most
        # recent one where two end on the same object (the other is then found by the scan only): one attribute, so
        # a thread reads the runs and their index as one
        self._table: tuple[tuple[Run[T, V], ...], dict[int, Run[T, V]]] = ((), {})

    def __len__(self) -> int:
        """How many sequences are kept."""
        return len(self._table[0])

    def values(self, items: list[T], more: Callable[[list[V], list[T]], list[V]]) -> Sequence[V]:
        """The values of `items` (read-only: the kept ones themselves when `items` is a kept sequence or a start of
        one): a kept sequence's for the longest start they share, `more(known, items)` for the whole list from there
        (`known` a new list, more's to extend)."""
        return self.values_and_size(items, more)[0]

    def values_and_size(self, items: list[T], more: Callable[[list[V], list[T]], list[V]]) -> tuple[Sequence[V], int]:
        """`values`, and what the items hold by `size` in all (the kept start's sum is kept too)."""
        runs, by_last = self._table  # read once: another thread may replace it
        best, at = 0, -1
        mine = _own_run(by_last, items)  # the common case, found without a Python step per kept run (PF-71)
        if mine is not None:
            n = shared_start(items, mine[0])
            if n == len(mine[0]):  # all of it shared (it is no longer than `items`): the loop below stops at it too
                best, at = n, list(map(id, runs)).index(id(mine))  # by identity: `index` compares runs by value
        for i in _alike_first(runs, items) if at < 0 else ():
            kept = runs[i][0]
            if best and (len(kept) <= best or kept[best] != items[best]):  # it cannot share more than `best`
                continue
            n = shared_start(items, kept)
            if n > best:
                best, at = n, i
                if n == len(items) or n == len(kept):  # none can be longer, or this one is all used
                    break
        # the same objects where the shared start ends: the items' own run (else another's that holds equal ones, and
        # these get a run of their own, so their next look-up is by identity)
        own = best > 0 and runs[at][0][best - 1] is items[best - 1]
        if own and best == len(items):  # all of them kept (the same history again: a regenerate, a swipe)
            values, sizes = runs[at][1], runs[at][2]
            if best < len(values):  # a start of a kept sequence, which stays as it is
                return values[:best], sizes[best - 1]
            if at > 0:  # used again: it goes first; nothing is copied, so nothing it holds is touched
                self._table = ((runs[at], *runs[:at], *runs[at + 1:]), by_last)
            return values, sizes[-1]
        known = list(runs[at][1][:best]) if at >= 0 else []
        sizes = runs[at][2][:best] if at >= 0 else ()
        out = more(known, items) if best < len(items) else known
        if best < len(items):  # the running total goes on from the shared start's
            sizes += tuple(accumulate(map(self.size, items[best:]), initial=sizes[-1] if sizes else 0))[1:]
        total = sizes[-1] if sizes else 0
        if items and total <= self.max_size // 2:  # (an empty history has nothing to share)
            new = [(list(items), tuple(out), sizes)]
            for i, r in enumerate(runs):
                if i == at and own and best == len(r[0]):  # the new sequence starts with all of it: it is superseded
                    continue
                total += r[2][-1] if r[2] else 0
                if total > self.max_size or len(new) == self.keep:
                    break
                new.append(r)
            self._table = (tuple(new), {id(r[0][-1]): r for r in reversed(new)})
        return out, sizes[-1] if sizes else 0
