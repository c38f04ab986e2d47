"""The states a server holds in memory as `GameState` objects, by chain key: a warm turn neither parses a
snapshot's JSON nor rebuilds sheet views, since their caches follow the state object (S-11).

One `SnapshotCache` per server (`ServerContext`), owning its lock and its least-recently-used order: the
event loop and a worker thread replaying a long history (S-19) both use it. The chain reads and fills it,
the pages read it, and the store's pruning drops what it removed from the file (`drop_gone`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from ...state import GameState
from ..limits import SNAPSHOTS_HELD


class SnapshotCache:
    def __init__(self, size: int = SNAPSHOTS_HELD) -> None:
        self.size = size
        self._lock = threading.Lock()  # never held across a call out of this class
        self._states: OrderedDict[str, GameState] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._states)

    def newest(self, keys: Sequence[str]) -> tuple[int, GameState] | None:
        """The last of `keys[1:]` held (keys[0], a campaign's start, is never stored), and its state, now the
        most recently used; None when none is."""
        states = self._states
        with self._lock:
            for i in range(len(keys) - 1, 0, -1):
                state = states.get(keys[i])
                if state is not None:
                    states.move_to_end(keys[i])
                    return i, state
        return None

    def get(self, key: str) -> GameState | None:
        """The state under `key`, if held; its place in the order is left as it is (a page's look)."""
        return self._states.get(key)

    def put(self, key: str, state: GameState) -> None:
        """Hold `state` under `key`, the most recently used; the least recently used go past `size`."""
        states = self._states
        with self._lock:
            states[key] = state
            states.move_to_end(key)
            while len(states) > self.size:
                states.popitem(last=False)

    def drop_gone(self, existing: Callable[[list[str]], set[str]]) -> None:
        """Drop the states whose keys `existing` (the store's snapshots) no longer has: memory follows the
        file after a pruning. `existing` is called without this cache's lock held."""
        keys = self.keys()
        if not keys:
            return
        alive = existing(keys)
        with self._lock:
            for k in keys:
                if k not in alive:
                    self._states.pop(k, None)
