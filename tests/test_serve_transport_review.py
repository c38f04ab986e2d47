"""Review of the upstream transport (SB-13): faults found, each against real loopback sockets, bounded."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
from test_serve_transport import Handler, Scripted, ok, post, run, serve

from tagengine._internal.server.upstream.client import Upstream
from tagengine._internal.server.upstream.transport import HTTP11Transport


def answering_part(start: bytes, closed: asyncio.Event) -> Handler:
    """A server that sends `start` of an answer, then waits for the client to close its end (sets `closed`)."""
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await r.readuntil(b"\r\n\r\n")
        w.write(start)
        await w.drain()
        await r.read()  # until the client closes its end
        closed.set()
        w.close()

    return handle


def test_a_second_answer_in_the_same_packet_is_not_merged_into_the_first() -> None:
    extra = b"HTTP/1.1 404 Nope\r\ncontent-length: 1\r\n\r\nB"

    async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
        r = await post(t, url)
        assert (r.status_code, r.content, r.extensions["reason_phrase"]) == (200, b"A", b"OK")
        assert r.headers.get_list("content-length") == ["1"]
        assert (await post(t, url)).content == b"A"
        assert s.connections == 2  # bytes nobody asked for: the first connection was not reused

    run(lambda n, raw: ok(b"A") + extra, test)


def test_a_whole_answer_that_fails_mid_body_closes_its_connection() -> None:
    closed = asyncio.Event()
    handle = answering_part(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part", closed)

    async def test(url: str, t: HTTP11Transport) -> None:
        up = Upstream(f"{url}/v1", forward_client_key=False, timeout=0.3, transport=t)
        try:
            await up.send(up.request("GET", "/models", {}))
            raise AssertionError("no timeout")
        except httpx.ReadTimeout:
            pass
        async with asyncio.timeout(2):
            await closed.wait()
        assert t.counts() == (0, 0)

    serve(handle, test)


def test_keep_alive_holds_past_descriptor_1024() -> None:
    # select.select refuses a descriptor of FD_SETSIZE (1024) or more: a busy server's pooled connections
    # were all taken for readable, dropped, and every request opened a new one
    import os
    import resource

    import pytest

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("too few descriptors allowed")
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        async def test(url: str, t: HTTP11Transport, s: Scripted) -> None:
            for _ in range(3):
                assert (await post(t, url)).content == b"x"
            assert s.connections == 1

        run(lambda n, raw: ok(b"x"), test)
    finally:
        for fd in fds:
            os.close(fd)


def endless(start: bytes, name: bytes, one_line: bool = False) -> Handler:
    """A server that answers a request with `start`, then header lines named `name`-N without end (with
    `one_line`, a single header name that never ends)."""
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await r.readuntil(b"\r\n\r\n")
            w.write(start)
            n = 0
            while True:  # until the client gives up
                w.write(name * 100 if one_line else b"%s-%d: %s\r\n" % (name, n, b"y" * 200))
                await w.drain()
                n += 1
        except ConnectionError:
            pass
        finally:
            w.close()

    return handle


async def refused_for_its_head(url: str, t: HTTP11Transport) -> None:
    async with asyncio.timeout(5):
        try:
            await post(t, url, read=1.0)
            raise AssertionError("an answer")
        except httpx.RemoteProtocolError as e:
            assert "head" in str(e)


def test_an_endless_head_is_a_protocol_error_not_a_hang() -> None:
    # httpcore (h11) refused a head past 16 KiB; without a bound, an upstream sending headers forever held the
    # request (each header a fresh read timeout) and its memory grew without end
    async def test(url: str, t: HTTP11Transport) -> None:
        await refused_for_its_head(url, t)
        assert t.counts() == (0, 0)  # the connection is dropped at once: no answer came to be closed

    serve(endless(b"HTTP/1.1 200 OK\r\n", b"x-filler"), test)


def test_an_international_host_is_reached_by_its_idna_2008_name() -> None:
    # url.host is the Unicode name; Python's own codec (IDNA 2003) turns "straße.de" into "strasse.de", another
    # domain: the host connected to (and verified by TLS) must be the one httpx sends in Host, xn--strae-oqa.de
    asked: list[tuple[str, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def create_connection(factory: Any, host: str, port: int, **kw: Any) -> Any:
            asked.append((host, kw.get("server_hostname")))
            raise OSError("nowhere")

        loop.create_connection = create_connection  # type: ignore[method-assign, assignment]
        t = HTTP11Transport()
        with contextlib.suppress(httpx.ConnectError):
            await t.handle_async_request(httpx.Request("POST", "https://straße.de/v1", content=b"{}"))
        await t.aclose()

    asyncio.run(main())
    assert asked == [("xn--strae-oqa.de", "xn--strae-oqa.de")]


def test_a_client_gone_while_a_send_waits_closes_the_stream_before_the_answer_ends() -> None:
    # the cancel lands in send (a slow client's write waits, or a middleware's): the body iterator was left
    # suspended at its yield, its clean-up (closing the upstream's answer) left to the garbage collector
    from tagengine._internal.server.wire.streamed import Streamed

    closed: list[bool] = []

    async def body() -> Any:
        try:
            yield b"a"
            yield b"b"
        finally:
            closed.append(True)

    async def main() -> tuple[int, list[bool]]:
        left = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await left.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message.get("body") == b"a":
                await asyncio.sleep(10)

        async def respond() -> tuple[int, list[bool]]:
            await Streamed(body())({"type": "http"}, receive, send)
            current = asyncio.current_task()
            assert current is not None
            return current.cancelling(), list(closed)

        task = asyncio.create_task(respond())
        await asyncio.sleep(0.05)
        left.set()
        async with asyncio.timeout(2):
            return await task

    assert asyncio.run(main()) == (0, [True])


def test_an_answer_dropped_unread_and_unclosed_gives_back_its_connection() -> None:
    # Streamed cancelled in its first send (a client gone while a middleware's send waits) never starts the
    # body iterator, whose clean-up would close the upstream's answer: the connection stayed open for good
    import gc

    closed = asyncio.Event()
    handle = answering_part(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n", closed)

    async def test(url: str, t: HTTP11Transport) -> None:
        response = await t.handle_async_request(httpx.Request("POST", f"{url}/v1/chat/completions", content=b"{}"))
        assert response.status_code == 200
        del response
        gc.collect()
        async with asyncio.timeout(2):
            await closed.wait()
        assert t.counts() == (0, 0)

    serve(handle, test)


def test_endless_trailers_are_a_protocol_error_not_a_hang() -> None:
    serve(endless(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", b"x-trailer"),
          refused_for_its_head)


def test_one_endless_header_name_in_the_head_or_the_trailers_is_a_protocol_error_not_a_hang() -> None:
    # llhttp holds a name until its colon, before any callback counts it: the bytes with no body in them are
    # counted as they arrive
    serve(endless(b"HTTP/1.1 200 OK\r\nx-", b"name", one_line=True), refused_for_its_head)
    serve(endless(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-", b"name",
                  one_line=True), refused_for_its_head)


def test_a_long_stream_of_small_chunks_is_not_taken_for_an_endless_head() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await r.readuntil(b"\r\n\r\n")
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for _ in range(40_000):  # one-byte chunks: 200 KB of chunk lines, past the 2 * MAX_ANSWER_HEAD of a head
            w.write(b"1\r\nx\r\n")
        w.write(b"0\r\n\r\n")
        await w.drain()
        w.close()

    async def test(url: str, t: HTTP11Transport) -> None:
        async with asyncio.timeout(10):
            r = await post(t, url)
            assert r.content == b"x" * 40_000

    serve(handle, test)
