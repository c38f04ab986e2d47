"""The server's upstream transport (server/upstream/transport.py, SB-13) against real loopback sockets: a scripted
HTTP/1.1 server per test answers each request with the bytes the test gives, so framing, keep-alive, faults
and timeouts are the real ones. Bounded: every wait has a timeout."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tagengine._internal.server.options import Options
from tagengine._internal.server.upstream.kinds import reach_upstream
from tagengine._internal.server.upstream.over_http import proxied
from tagengine._internal.server.upstream.transport import HIGH_WATER, HTTP11Transport

Answer = Callable[[int, bytes], bytes | None]  # (request number, request bytes) -> bytes to send, None: close


class Scripted:
    """A loopback HTTP/1.1 server: each request (head + Content-Length body) is answered by `answer`; counts
    connections and requests. `then_close`: close the connection after each answer."""

    def __init__(self, answer: Answer, then_close: bool = False) -> None:
        self.answer, self.then_close = answer, then_close
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                body = await r.readexactly(length)
                self.requests.append(head + body)
                out = self.answer(len(self.requests), head + body)
                if out is None:
                    break
                w.write(out)
                await w.drain()
                if self.then_close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            w.close()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def serve(handle: Handler, test: Callable[[str, HTTP11Transport], Awaitable[None]]) -> None:
    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = HTTP11Transport()
        try:
            async with asyncio.timeout(20):
                await test(f"http://127.0.0.1:{port}", transport)
        finally:
            await transport.aclose()
            server.close()
            await server.wait_closed()

    asyncio.run(main())


def run(answer: Answer, test: Callable[[str, HTTP11Transport, Scripted], Awaitable[None]],
        then_close: bool = False) -> Scripted:
    scripted = Scripted(answer, then_close)
    serve(scripted.handle, lambda url, t: test(url, t, scripted))
    return scripted


class Silent:
    """Reads a request's head and answers nothing until `hold` is set."""

    def __init__(self) -> None:
        self.hold = asyncio.Event()

    async def handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await r.readuntil(b"\r\n\r\n")
            await self.hold.wait()
        finally:
            w.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(body), extra, body)


async def post(transport: HTTP11Transport, url: str, body: bytes = b'{"q": 1}', *, read: float = 5.0,
               method: str = "POST") -> httpx.Response:
    request = httpx.Request(method, f"{url}/v1/chat/completions", content=body if method == "POST" else None,
                            headers={"content-type": "application/json"},
                            extensions={"timeout": {"connect": 5.0, "read": read, "write": 5.0, "pool": 5.0}})
    response = await transport.handle_async_request(request)
    await response.aread()
    return response


def test_keep_alive_one_connection_for_many_requests_and_the_request_as_sent() -> None:
    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        for n in range(3):
            r = await post(t, url, b'{"n": %d}' % n)
            assert (r.status_code, r.content, r.headers["content-type"]) == (200, b'{"ok": true}', "application/json")
            assert r.extensions["reason_phrase"] == b"OK"
        assert s.connections == 1
        assert s.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
        assert b"\r\nhost: 127.0.0.1:" in s.requests[0].lower()
        assert s.requests[2].endswith(b'\r\n\r\n{"n": 2}')

    run(lambda n, raw: ok(b'{"ok": true}'), test)


def test_chunked_and_read_to_the_end_and_interim_answers() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after a 100")
    to_close = b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end"
    answers = {1: chunked, 2: interim, 3: to_close}

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        assert (await post(t, url)).content == b"hello, world"
        r = await post(t, url)
        assert (r.status_code, r.content) == (200, b"after a 100")
        assert (await post(t, url)).content == b"until the end"

    s = run(lambda n, raw: answers[n], test, then_close=True)  # the last body ends with its connection
    assert len(s.requests) == 3


def test_a_connection_the_upstream_closed_is_not_reused() -> None:
    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        for _ in range(3):
            assert (await post(t, url)).content == b"x"
            await asyncio.sleep(0.05)  # the close reaches the idle connection
        assert s.connections == 3

    run(lambda n, raw: ok(b"x"), test, then_close=True)


def test_an_idle_connection_closed_without_an_answer_retries_only_an_idempotent_request() -> None:
    # the second request on a connection gets no answer, the connection closes: the keep-alive race
    def answer(n: int, raw: bytes) -> bytes | None:
        return None if n in (2, 5) else ok(b"fine")

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        assert (await post(t, url, method="GET")).content == b"fine"
        assert (await post(t, url, method="GET")).content == b"fine"  # retried on a new connection
        assert len(s.requests) == 3 and s.connections == 2
        assert (await post(t, url)).content == b"fine"
        with pytest.raises(httpx.RemoteProtocolError, match="without answering"):
            await post(t, url)  # a POST is never sent twice
        assert len(s.requests) == 5

    run(answer, test)


def test_faults_are_httpx_errors() -> None:
    answers = {1: b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part",
               2: b"this is not HTTP at all\r\n\r\n"}

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        with pytest.raises(httpx.RemoteProtocolError, match="before its answer was complete"):
            await post(t, url)
        with pytest.raises(httpx.RemoteProtocolError, match=r"not HTTP/1\.1"):
            await post(t, url)

    run(lambda n, raw: answers[n], test, then_close=True)


def test_a_silent_upstream_is_a_read_timeout_and_its_connection_is_dropped() -> None:
    silent = Silent()

    async def test(url: str, t: HTTP11Transport) -> None:
        with pytest.raises(httpx.ReadTimeout) as e:
            await post(t, url, read=0.2)
        assert e.value.request.url.path == "/v1/chat/completions"
        assert t.counts()[1] == 0
        silent.hold.set()

    serve(silent.handle, test)


def test_nobody_listening_is_a_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def main() -> None:
        t = HTTP11Transport()
        with pytest.raises(httpx.ConnectError, match=f"127.0.0.1:{port}"):
            await post(t, f"http://127.0.0.1:{port}")
        await t.aclose()

    asyncio.run(main())


def test_what_cannot_be_sent_is_refused_before_a_byte_leaves() -> None:
    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        bad = httpx.Request("POST", f"{url}/v1/x", headers={"x-bad": "a\r\nx-injected: 1"}, content=b"{}")
        with pytest.raises(httpx.LocalProtocolError, match="x-bad"):
            await t.handle_async_request(bad)
        with pytest.raises(httpx.UnsupportedProtocol):
            await t.handle_async_request(httpx.Request("GET", "ftp://127.0.0.1/x"))
        with pytest.raises(httpx.LocalProtocolError, match="HEAD"):
            await t.handle_async_request(httpx.Request("HEAD", f"{url}/v1/x"))
        assert s.requests == []

    run(lambda n, raw: ok(b""), test)


def test_a_large_answer_read_slowly_comes_whole_and_a_half_read_one_closes_its_connection() -> None:
    big = bytes(range(256)) * (3 * HIGH_WATER // 256)

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        request = httpx.Request("GET", f"{url}/big")
        response = await t.handle_async_request(request)
        got = []
        async for piece in response.aiter_raw():
            got.append(piece)
            await asyncio.sleep(0.001)  # slower than the socket: reading pauses past HIGH_WATER
        assert b"".join(got) == big
        response = await t.handle_async_request(httpx.Request("GET", f"{url}/big"))
        async for _ in response.aiter_raw():
            break
        await response.aclose()  # cut short: the rest is not read, the connection is not pooled
        assert (await post(t, url, method="GET")).content == big
        assert s.connections == 2

    run(lambda n, raw: ok(big), test)


def test_a_cancelled_request_drops_its_connection() -> None:
    silent = Silent()

    async def test(url: str, t: HTTP11Transport) -> None:
        task = asyncio.create_task(post(t, url))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert t.counts() == (0, 0)
        silent.hold.set()

    serve(silent.handle, test)


def transport_of(url: str, tmp_path: Path, **kw: Any) -> httpx.AsyncBaseTransport | None:
    """The transport the upstream kinds' table gives the server for `url`."""
    return reach_upstream(Options(upstream=url, data=tmp_path, **kw)).transport


def test_a_proxy_from_the_environment_keeps_httpx_own_transport(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert not proxied("http://127.0.0.1:5000/v1")
    assert isinstance(transport_of("http://127.0.0.1:5000/v1", tmp_path), HTTP11Transport)
    assert transport_of("http://127.0.0.1:5000/v1", tmp_path, upstream_transport="httpx") is None  # SV-6: the switch
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert proxied("https://api.example.com/v1") and not proxied("http://127.0.0.1:5000/v1")
    assert transport_of("https://api.example.com/v1", tmp_path) is None
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert not proxied("https://api.example.com/v1")


def test_a_body_with_a_coding_other_than_chunked_ends_with_its_connection() -> None:
    # RFC 9112 6.3: Transfer-Encoding without chunked in an answer: the body is read to the connection's end
    answer = b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity-ish\r\n\r\nto the end"

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        assert (await post(t, url)).content == b"to the end"

    run(lambda n, raw: answer, test, then_close=True)
