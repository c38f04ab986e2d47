"""Heavy work off the event loop: in worker threads, at most WORKER_THREADS at once (SEC-2).

Every request and every page waits while the event loop's thread works, so a step whose work grows with
text it has not read before (a replay of new replies, the token count of new messages, a big reply applied
or counted) runs here once that text is over LOOP_CHARS characters; the common turn (a few new messages of
a chat the server knows) stays on the loop, where a thread hop would cost more than the work.

Threads, not processes: the work reads the server's own objects (the ruleset, the states, the counters'
memos), which a process would have to be sent and send back, and it keeps the loop answering either way.
Token counting (tiktoken's encoder, in Rust) lets go of the GIL, so it runs beside the loop on another core;
the engine's own work (replaying and applying tags, in Python) holds the GIL, and the interpreter hands it
to the loop's thread every switch interval (5 ms), so other requests wait a few milliseconds at a time,
never for the whole work (benchmarks/serve.py, "under attack").

The limiter keeps heavy steps from crowding each other out of the GIL and out of memory: past
WORKER_THREADS they wait their turn, while a light step never waits for them (it does not come here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from ..limits import WORKER_THREADS

T = TypeVar("T")


class Workers:
    """One server's heavy steps, `threads` at once (the limiter is made on first use, in the event loop)."""

    def __init__(self, threads: int = WORKER_THREADS) -> None:
        self.threads = threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, work: Callable[..., T], *args: object) -> T:
        """`work(*args)` in a worker thread, once one of the `threads` is free."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        return await anyio.to_thread.run_sync(work, *args, limiter=self._limiter)
