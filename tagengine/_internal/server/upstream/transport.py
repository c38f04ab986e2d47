"""The server's way to the upstream: an httpx transport for HTTP/1.1 on asyncio's own sockets, its answers
read by httptools (llhttp, the C parser uvicorn reads requests with).

Why not httpx's default (httpcore on anyio): on the benchmark machine it costs about 0.4 ms of CPU per request
(cancel scopes, a lock and a pool per call, h11's per-event Python), the larger half of what the server added
to a turn; this transport costs about 0.05 ms (SB-13). It is used only where it does what the default would:
the upstream is `http` or `https` and no proxy from the environment applies (`Upstream` picks it). The rest
of the server still speaks httpx: requests, responses, streaming and errors are httpx's own types.

What it does: keep-alive connections, pooled per origin (at most POOL_IDLE idle ones each), reused only after
a complete answer; answers with Content-Length, chunked, or read to the end of the connection; 1xx answers
skipped; the request's timeouts (connect, read: each wait for the answer's head or a piece of its body);
errors as httpx's (ConnectError, ConnectTimeout, ReadTimeout, RemoteProtocolError). A pooled connection
that the upstream closed before a byte of its answer (its keep-alive ran out as the request left) is retried
once on a new connection for an idempotent method only: a model's POST is never sent twice. Reading stops
while more than HIGH_WATER bytes of an answer wait to be read, so a slow client cannot make the server hold a
whole fast answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, cast

import httptools
import httpx

from ..limits import MAX_ANSWER_HEAD

POOL_IDLE = 32  # idle keep-alive connections kept per origin
HIGH_WATER = 256 * 1024  # bytes of an answer buffered before reading pauses
LOW_WATER = 64 * 1024
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})  # not HEAD: its answer has no body
IDEMPOTENT = frozenset({"GET", "PUT", "DELETE", "OPTIONS"})  # RFC 9110 9.2.2

Origin = tuple[str, str, int]


class _Closed(Exception):
    """The connection ended before any byte of the answer came."""


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: the answer in progress is parsed as its bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser: httptools.HttpResponseParser | None = None
        self.lost = False
        self._waiter: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_size = 0
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.to_close = False  # the body ends with the connection (neither Content-Length nor chunked)
        self.started = False  # a byte of the answer came
        self.error: Exception | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.bodiless = 0  # bytes parsed since the last piece of the body (head, chunk lines, trailers)

    # -- asyncio.Protocol ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass, but is one

    def data_received(self, data: bytes) -> None:
        if self.parser is None or self.complete:  # bytes nobody asked for: the connection cannot be trusted
            self.lost = True
            if self.transport is not None:
                self.transport.close()
            return
        self.started = True
        buffered = self.buffered  # grows only by the body's pieces parsed below
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.error = httpx.RemoteProtocolError("the upstream switched protocols")
        except httptools.HttpParserError as e:
            own = e.__context__  # raised by a callback here
            self.error = own if isinstance(own, httpx.RemoteProtocolError) else httpx.RemoteProtocolError(
                f"the upstream's answer is not HTTP/1.1: {e}")
        # llhttp keeps a header's name or value until it ends, outside the callbacks' count (_count): one
        # endless line of head or trailers is cut off here
        self.bodiless = 0 if self.buffered != buffered or self.complete else self.bodiless + len(data)
        if self.bodiless > 2 * MAX_ANSWER_HEAD and self.error is None:
            self.error = httpx.RemoteProtocolError(
                f"the upstream sent more than {2 * MAX_ANSWER_HEAD} bytes of head or trailers without an end")
        if self.error is not None and self.transport is not None:
            self.transport.close()
        self._wake()

    def eof_received(self) -> bool | None:
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.parser is not None and not self.complete and self.error is None:
            if self.head_done and self.to_close:
                self.complete = True  # a body read to the end of the connection
            elif not self.started:
                self.error = _Closed()
            else:
                self.error = httpx.RemoteProtocolError(
                    "the upstream closed the connection before its answer was complete")
        self._wake()

    # -- httptools callbacks ------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # a second answer in the bytes of the first: not merged into it, not trusted
            raise httpx.RemoteProtocolError("the upstream sent more than its answer")

    def on_status(self, status: bytes) -> None:
        self._count(len(status))
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        self.headers.append((name, value))

    def _count(self, size: int) -> None:
        self.head_size += size + 4
        if self.head_size > MAX_ANSWER_HEAD:  # an endless head (or trailers) is refused
            raise httpx.RemoteProtocolError(f"the upstream's answer has a head of more than {MAX_ANSWER_HEAD} bytes")

    def on_headers_complete(self) -> None:
        assert self.parser is not None
        self.status = self.parser.get_status_code()
        if self.status < 200:  # 1xx: an interim answer; the real one follows
            return
        self.head_done = True
        self.head_size = 0  # the trailers' own count
        # llhttp's framing of an answer: chunked, else Content-Length (when no other Transfer-Encoding), else the
        # connection's end (RFC 9112 6.3)
        coding = b",".join(v for k, v in self.headers if k.lower() == b"transfer-encoding").lower()
        framed = b"chunked" in coding if coding else any(k.lower() == b"content-length" for k, _ in self.headers)
        self.to_close = not framed and self.status not in (204, 304)

    def on_body(self, body: bytes) -> None:
        self.chunks.append(bytes(body))
        self.buffered += len(body)
        if self.buffered > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self.status < 200:
            self.reason, self.headers = b"", []
            return
        assert self.parser is not None
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()

    # -- the client's side --------------------------------------------------------------------------

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait(self, timeout: float | None, request: httpx.Request) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._waiter
        except TimeoutError:
            raise httpx.ReadTimeout("the upstream did not answer in time", request=request) from None
        finally:
            self._waiter = None

    def begin(self, head: bytes, body: bytes) -> None:
        """Send a request; its answer is parsed from here on."""
        assert self.transport is not None
        if self.lost:  # closed before the request could go (uvloop would raise a RuntimeError writing to it)
            raise _Closed
        self._reset()
        self.parser = httptools.HttpResponseParser(self)
        self.transport.writelines((head, body))

    async def head(self, timeout: float | None, request: httpx.Request) -> None:
        while not self.head_done:
            if self.error is not None:
                raise self.error
            await self._wait(timeout, request)

    async def piece(self, timeout: float | None, request: httpx.Request) -> bytes | None:
        """The next piece of the body; None at its end."""
        while True:
            if self.chunks:
                chunk = self.chunks.popleft()
                self.buffered -= len(chunk)
                if self.paused and self.buffered < LOW_WATER and self.transport is not None:
                    self.paused = False
                    self.transport.resume_reading()
                return chunk
            if self.complete:
                return None
            if self.error is not None:
                raise self.error
            await self._wait(timeout, request)

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.lost and self.error is None and not self.chunks

    def readable(self) -> bool:
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        try:
            if hasattr(select, "poll"):  # select.select refuses a descriptor of 1024 or more (FD_SETSIZE)
                p = select.poll()
                p.register(sock, select.POLLIN)
                return bool(p.poll(0))
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):  # closed under us
            return True

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


class Body(httpx.AsyncByteStream):
    """An answer's body as it comes; the connection goes back to the pool once the body was read whole."""

    def __init__(self, pool: HTTP11Transport, origin: Origin, conn: Connection, request: httpx.Request,
                 timeout: float | None) -> None:
        self.pool, self.origin, self.conn, self.request, self.timeout = pool, origin, conn, request, timeout
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:  # (not _Closed: a body comes after a head, so a byte of the answer came)
            while (chunk := await self.conn.piece(self.timeout, self.request)) is not None:
                yield chunk
        except httpx.TransportError as e:
            e.request = self.request
            raise

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.release(self.origin, self.conn)

    def __del__(self) -> None:
        if not self.closed:  # an answer dropped unclosed (a stream never started): its connection is not kept
            self.closed = True
            with contextlib.suppress(RuntimeError):  # the event loop is closed: its sockets with it
                self.pool.release(self.origin, self.conn)


class HTTP11Transport(httpx.AsyncBaseTransport):
    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._idle: dict[Origin, list[Connection]] = {}
        self._ssl = ssl_context
        self._open: set[Connection] = set()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    async def _connect(self, origin: Origin, timeout: float | None, request: httpx.Request) -> Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        tls: dict[str, Any] = {"ssl": self._context(), "server_hostname": host} if scheme == "https" else {}
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(Connection, host, port, **tls)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"cannot connect to {host}:{port} in time", request=request) from None
        except (OSError, ssl.SSLError) as e:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {e}", request=request) from None
        self._open.add(conn)
        return conn

    def release(self, origin: Origin, conn: Connection) -> None:
        idle = self._idle.setdefault(origin, [])
        if conn.reusable and len(idle) < POOL_IDLE:
            conn.parser = None
            idle.append(conn)
        else:
            self._drop(conn)

    def _idle_connection(self, origin: Origin) -> Connection | None:
        """A pooled connection still open: one with anything to read (the upstream's close, not yet seen by
        the event loop) cannot carry a request (httpcore looks the same way)."""
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.lost and not conn.readable():
                return conn
            self._drop(conn)
        return None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https", request=request)
        if request.method not in METHODS:
            raise httpx.LocalProtocolError(f"{request.method} is not sent by this transport", request=request)
        # the host as sent in Host (IDNA 2008): url.host is Unicode, which asyncio would encode by IDNA 2003
        origin = (url.scheme, url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), url.raw_path)]
        for k, v in request.headers.raw:
            if b"\r" in k or b"\n" in k or b"\r" in v or b"\n" in v or b":" in k or not k:
                raise httpx.LocalProtocolError(f"header {k!r} cannot be sent", request=request)
            lines.append(b"%s: %s\r\n" % (k, v))
        lines.append(b"\r\n")
        head = b"".join(lines)
        for attempt in range(2):
            conn = self._idle_connection(origin)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(origin, timeouts.get("connect"), request)
            try:
                conn.begin(head, body)
                await conn.head(timeouts.get("read"), request)
            except _Closed:
                self._drop(conn)
                if reused and attempt == 0 and request.method in IDEMPOTENT:
                    continue  # the upstream had closed this idle connection: nothing of an answer came
                raise httpx.RemoteProtocolError("the upstream closed the connection without answering",
                                                request=request) from None
            except httpx.TransportError as e:
                self._drop(conn)
                e.request = request
                raise
            except BaseException:  # cancelled (the client left): the answer in progress cannot be reused
                self._drop(conn)
                raise
            return httpx.Response(conn.status, headers=conn.headers,
                                  stream=Body(self, origin, conn, request, timeouts.get("read")),
                                  extensions={"http_version": b"HTTP/1.1", "reason_phrase": conn.reason.strip()})
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._open.discard(conn)

    def counts(self) -> tuple[int, int]:
        """Connections open, and of those idle in the pool."""
        return len(self._open), sum(len(v) for v in self._idle.values())

    async def aclose(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
