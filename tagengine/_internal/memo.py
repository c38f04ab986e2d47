"""Caches keyed by the identity of immutable inputs (a ruleset model, a card, a snapshot).

Values computed from objects that never change stay right for as long as those objects live, and the
state is read-only all the way down (state/values.py), so no caller can change a key's meaning. Each
entry keeps its owners, so an id cannot be reused while the entry stands; the oldest entries go first.
Changes to the table take a lock, so threads (a server's workers) can share the caches; a look-up is one
atomic dict read, and `build` runs outside the lock.
"""

from __future__ import annotations

from _thread import allocate_lock  # what threading.Lock is, without importing threading (PF-44)
from collections import OrderedDict
from collections.abc import Callable
from operator import is_
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class IdentityCache(Generic[T]):
    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], T]] = OrderedDict()
        self._lock = allocate_lock()

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, owners: tuple[Any, ...]) -> T | None:
        """The value kept for `owners`, or None; nothing is built or kept, nor moved in the order."""
        hit = self._entries.get(tuple(map(id, owners)))
        return hit[1] if hit is not None and all(map(is_, hit[0], owners)) else None

    def get(self, owners: tuple[Any, ...], build: Callable[[], T]) -> T:
        n = len(owners)
        if n == 1:  # one or two owners, the usual case: the key and the check without iterators
            key: tuple[int, ...] = (id(owners[0]),)
            hit = self._entries.get(key)  # a single dict read: atomic, no lock needed to look
            if hit is not None and hit[0][0] is not owners[0]:
                hit = None
        elif n == 2:
            key = (id(owners[0]), id(owners[1]))
            hit = self._entries.get(key)
            if hit is not None and (hit[0][0] is not owners[0] or hit[0][1] is not owners[1]):
                hit = None
        else:
            key = tuple(map(id, owners))
            hit = self._entries.get(key)
            if hit is not None and not all(map(is_, hit[0], owners)):
                hit = None
        if hit is not None:
            try:  # noqa: SIM105 - contextlib.suppress costs a microsecond here, on every look-up
                self._entries.move_to_end(key)
            except KeyError:  # another thread has just dropped it; the value is still right
                pass
            return hit[1]
        value = build()  # two threads may both build; both results are equal, the later one is kept
        with self._lock:
            self._entries[key] = (owners, value)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value
