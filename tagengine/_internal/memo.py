"""Caches keyed by the identity of immutable inputs (a ruleset model, a card, a snapshot).

Values computed from objects that never change stay right for as long as those objects live. Each
entry keeps its owners, so an id cannot be reused while the entry stands; the oldest entries go first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class IdentityCache(Generic[T]):
    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], T]] = OrderedDict()

    def get(self, owners: tuple[Any, ...], build: Callable[[], T]) -> T:
        key = tuple(id(o) for o in owners)
        hit = self._entries.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], owners, strict=True)):
            self._entries.move_to_end(key)
            return hit[1]
        value = build()
        self._entries[key] = (owners, value)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value
