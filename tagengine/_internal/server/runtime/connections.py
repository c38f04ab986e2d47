"""Client connections that cannot take the server down (SEC-4): a request's head and body are timed, and the
connections are capped below the process's file-descriptor limit.

uvicorn times only the wait between two requests on a connection (keep-alive): one that sends half a request
line, or a body a byte a minute, is kept for ever, and each holds a file descriptor. With 256 of them, 300
such connections locked every new client out. `GuardedProtocol`, uvicorn's HTTP/1.1 protocol with
the head joiner (head_join.py), adds:

- a request's head must end within HEAD_TIMEOUT of its first byte (or of the connection's opening): else a
  408 and the connection closed (closed without a word when not a byte came: a browser's spare connection);
- its body must end within BODY_TIMEOUT of the head's end: else a 408 (when no answer has started) and the
  connection closed; the route reading it sees the client gone (one access line, 499, SEC-7);
- at most `Guard.max_connections` at once: a connection past the cap closes the one that has waited longest
  for a request (idle between requests, or still sending its head), else it is answered 503 and closed. A
  connection whose request is being read or answered is never the one closed, so the clients being served
  go on while slow ones come and go.

Below uvicorn's ASGI layer, so it costs a request nothing but three timer calls. It uses uvicorn's protocol
attributes `connections`, `cycle`, `transport`, `loop` and `client`, and its parser callbacks;
`tests/test_serve_uvicorn_contract.py` checks they are still there (SV-7).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from operator import attrgetter
from typing import ClassVar

from ..limits import BODY_TIMEOUT, FD_WANTED, HEAD_TIMEOUT, MAX_CONNECTIONS, connections_for
from .head_join import HeadJoiningProtocol

log = logging.getLogger("tagengine.serve")
WARN_EVERY = 10.0  # seconds between two log lines saying the cap was met (a flood would write one per connection)


def _answer(status: bytes, text: bytes, *headers: bytes) -> bytes:
    """A whole response the protocol writes itself, the connection closed after it."""
    head = [b"HTTP/1.1 " + status, b"content-type: text/plain; charset=utf-8", b"connection: close", *headers,
            b"content-length: %d" % len(text)]
    return b"\r\n".join(head) + b"\r\n\r\n" + text


TIMEOUT_408 = _answer(b"408 Request Timeout", b"the request did not come in time\n")
BUSY_503 = _answer(b"503 Service Unavailable", b"the server has too many connections open\n", b"retry-after: 1")
HEAD, BODY, BUSY = "head", "body", "busy"  # what a connection is doing: waiting for a head, sending a body, served


@dataclass
class Guard:
    """One server's connection limits, and when it last said the cap was met."""

    max_connections: int = MAX_CONNECTIONS
    head_timeout: float = HEAD_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    warned: float = field(default=-WARN_EVERY)

    def protocol(self) -> type[GuardedProtocol]:
        """The protocol class to give uvicorn (`http=`), bound to these limits."""
        return type("GuardedProtocol", (GuardedProtocol,), {"guard": self})


class GuardedProtocol(HeadJoiningProtocol):
    """uvicorn's protocol with the limits of `guard` (a class made by `Guard.protocol`, one per server)."""

    guard: ClassVar[Guard]
    phase: str  # HEAD, BODY or BUSY: what the connection is doing
    idle_since: float  # when it last began to wait for a request (time.monotonic)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.phase, self.idle_since, self._began = HEAD, time.monotonic(), False
        self._timer: asyncio.TimerHandle | None = None
        self._arm(self.guard.head_timeout)
        if len(self.connections) > self.guard.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.phase, self._began = HEAD, True
        self._arm(self.guard.head_timeout)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self.phase = BODY
        self._arm(self.guard.body_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.phase, self._began = BUSY, False
        self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.phase == BUSY:  # idle until the next request (uvicorn's keep-alive timer runs); a body that
            self.phase, self.idle_since = HEAD, time.monotonic()  # is still coming keeps its own timer

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self.phase == BODY or self._began:  # a request had begun: it is told why, unless answered already
            cycle = self.cycle
            if self.phase == HEAD or cycle is None or not cycle.response_started:
                self.transport.write(TIMEOUT_408)
            log.info("%s: a request's %s did not come within %g s; the connection is closed", self._who(),
                     self.phase, self.guard.body_timeout if self.phase == BODY else self.guard.head_timeout)
        self.transport.close()

    def _make_room(self) -> None:
        """Past the cap: the connection idle longest is closed, else this one is answered 503."""
        idle = [p for p in self.connections if isinstance(p, GuardedProtocol) and p is not self and p.phase == HEAD
                and not p.transport.is_closing()]
        now = time.monotonic()
        if now - self.guard.warned >= WARN_EVERY:
            self.guard.warned = now
            log.warning("%d client connections, the most this server keeps open (file descriptors): %s",
                        len(self.connections), "the one idle longest is closed" if idle else "new ones get a 503")
        if idle:
            min(idle, key=attrgetter("idle_since")).transport.close()
        else:
            self._disarm()
            self.transport.write(BUSY_503)
            self.transport.close()

    def _who(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"


def raise_fd_limit(wanted: int = FD_WANTED) -> int | None:
    """The soft limit on open files raised to the hard one (at most `wanted`), as servers do at their start:
    the soft limit is often 1024 (or 256 on macOS) where the hard one is far higher. The limit now in force,
    or None where there is none to read (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # not allowed here: the soft limit stays
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def guard_for_this_process() -> Guard:
    """The limits for `tagengine serve`: the file-descriptor limit raised, and the connections capped below
    it (limits.connections_for)."""
    fds = raise_fd_limit()
    return Guard(max_connections=MAX_CONNECTIONS if fds is None else connections_for(fds))
