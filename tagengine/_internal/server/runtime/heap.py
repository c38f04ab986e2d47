"""The server's long-lived objects kept out of the cyclic garbage collector's full passes (`gc.freeze`).

A full collection walks every tracked object, and on the development machine it walks them at about
300-450 ns each: with a loaded ruleset of 800 derived values (60 000 objects, most of them the ruleset's and
the imports') every full pass cost 30-90 ms of the request it fell in, about one editor page in ten (ED-23).
What a server keeps for its whole life (the modules, the loaded rulesets and their compiled programs) never
becomes garbage while it is loaded, so it is frozen once it is there: the start-up's imports, and again each
time a campaign's ruleset is (re)loaded. Each freeze collects first what is not frozen (what came since the
last one), so a request's garbage is never frozen. Only when a loaded ruleset was replaced (its file changed,
the campaign's start made again) is what was frozen put back and collected once, so the old ruleset's cycles
are freed: a full pass over the whole heap then, not at every load (ED-24: in a process with a large heap, as
the test suite's, that pass was most of a server's start-up).

`young_collections` spaces the collector's young passes for the server's process (PF-54), and `IdleTrim` hands the
C allocator's free pages back to the system once the server is idle (PF-47).
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import sys
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send


def freeze_long_lived(replaced: bool = False) -> None:
    """Collect what is garbage now, then freeze what is left; `replaced`: something frozen may have died since
    (a ruleset loaded again), so the earlier freeze's objects are collected too."""
    if replaced:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def young_collections(objects: int) -> None:
    """A young collection after `objects` more container objects live than at the last one, not Python's 700.
    Python counts every container it makes, tracked or not (a chat request's 200 message dicts among them), so at
    700 a young pass fell in 15 of 40 of the benchmark's turns, walking whatever the request held then, most of it
    freed a moment later by reference counts anyway, and moving what it walked to the middle generation to be
    walked there again. At `objects` the passes come when that many more objects stay alive, the cycles they are
    for (2 in 40 turns, PF-54). The older generations' thresholds stay Python's."""
    gc.set_threshold(objects, *gc.get_threshold()[1:])


# -- the freed heap handed back when the server is idle ------------------------------------------------------
# Python frees a request's objects to the C allocator, which keeps the pages: after 16 chat requests at once (a
# 78 KiB chat parsed, fitted and sent on by each) glibc held some 4 MB of free pages amid live ones that its own
# trimming (only the heap's top) never hands back. `malloc_trim(0)` does, in under a millisecond (PF-47).


def trimmer() -> Callable[[], object] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return functools.partial(trim, 0)


class IdleTrim:
    """ASGI middleware: counts the HTTP requests in flight, and once none has been for `seconds` after one ran,
    hands the heap's free pages back (`trim`). It runs on the event loop, which is idle then: 0.6 ms on a server
    of 100 MB, which a request that comes in that moment waits (a worker thread was a task and a thread hop to
    save that). A steady stream of requests never waits for it; a server that is never idle keeps its working
    set, which it is using."""

    def __init__(self, app: ASGIApp, trim: Callable[[], object] | None, seconds: float) -> None:
        self.app, self.trim, self.seconds = app, trim, seconds
        self.busy = 0
        self.timer: asyncio.TimerHandle | None = None  # set only as the last request in flight ends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.trim is None:
            await self.app(scope, receive, send)
            return
        self.busy += 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        try:
            await self.app(scope, receive, send)
        finally:
            self.busy -= 1
            if self.busy == 0:
                self.timer = asyncio.get_running_loop().call_later(self.seconds, self._idle, self.trim)

    def _idle(self, trim: Callable[[], object]) -> None:
        """The timer's callback: no request has started since it was set (a request that starts cancels it),
        and one ran before it, so an idle server is trimmed once, not again and again."""
        self.timer = None
        trim()
