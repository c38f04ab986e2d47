"""Issue 12, SB-16: `tagengine serve` writes a response's head and the first bytes of its body in one system
call (uvicorn wrote them apart, and the client woken by the head then ran in the server's place before the body
could go). Every other write goes out at once and in order; a head with nothing after it goes at the end of
the event loop's turn."""

from __future__ import annotations

import asyncio
import socket

import pytest
from serve_kit import Running
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tagengine._internal.server.runtime.head_join import HeadJoiner, HeadJoiningProtocol
from tagengine._internal.server.wire.streamed import Incomplete, Streamed

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class Recording:
    """A transport that records what is written, and how."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[bytes, ...]]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", (data,)))

    def writelines(self, parts: tuple[bytes, ...]) -> None:
        self.calls.append(("writelines", tuple(parts)))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True
        self.calls.append(("close", ()))

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def joined(steps):
    """What a HeadJoiner over a Recording wrote: after `steps(joiner)` in one turn of a real event loop, and
    after that turn."""
    async def run():
        t = Recording()
        j = HeadJoiner(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        steps(j)
        within = list(t.calls)
        await asyncio.sleep(0)  # the loop's turn ends
        return within, t.calls
    return asyncio.run(run())


def test_sb_16_a_head_goes_out_with_the_next_write_in_one_call():
    within, after = joined(lambda j: (j.write(HEAD), j.write(b"ok")))
    assert within == after == [("writelines", (HEAD, b"ok"))]


def test_sb_16_a_head_alone_goes_out_at_the_end_of_the_turn():
    within, after = joined(lambda j: j.write(HEAD))
    assert within == [] and after == [("write", (HEAD,))]


def test_sb_16_other_writes_go_out_at_once_and_in_order():
    within, after = joined(lambda j: (j.write(b"5\r\nhello\r\n"), j.write(HEAD), j.write(b"ok"), j.write(b"0\r\n\r\n")))
    assert within == after == [("write", (b"5\r\nhello\r\n",)), ("writelines", (HEAD, b"ok")),
                               ("write", (b"0\r\n\r\n",))]


def test_sb_16_writelines_go_after_a_held_head():
    within, _ = joined(lambda j: (j.write(HEAD), j.writelines((b"o", b"k"))))
    assert within == [("writelines", (HEAD, b"ok"))]


def test_sb_16_closing_sends_a_held_head_first_and_a_closed_transport_gets_none():
    within, _ = joined(lambda j: (j.write(HEAD), j.close()))
    assert within == [("write", (HEAD,)), ("close", ())]

    def closed_first(j):
        j.write(HEAD)
        j._transport.closing = True
    _, after = joined(closed_first)
    assert after == []
    assert joined(lambda j: None) == ([], [])


def test_sb_16_the_rest_is_the_transports_own():
    async def run():
        return HeadJoiner(Recording(), asyncio.get_running_loop()).get_extra_info("peername")  # type: ignore[arg-type]
    assert asyncio.run(run()) == "info:peername"


def first_read(url: str, path: str) -> bytes:
    """The bytes of a loopback client's first read of the answer to one GET."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
        return s.recv(65536)


class Spy:
    """The socket's transport under a HeadJoiner: records every write uvicorn's protocol makes, then makes it."""

    writes: list[tuple[str, tuple[bytes, ...]]] = []

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes) -> None:
        self.writes.append(("write", (data,)))
        self._transport.write(data)

    def writelines(self, parts) -> None:
        parts = tuple(parts)
        self.writes.append(("writelines", parts))
        self._transport.writelines(parts)

    def __getattr__(self, name):
        return getattr(self._transport, name)


class SpiedProtocol(HeadJoiningProtocol):
    def connection_made(self, transport):
        super().connection_made(Spy(transport))


@pytest.mark.parametrize("path", ["/json", "/text"])
def test_sb_16_a_whole_answer_over_uvicorn_comes_whole_in_one_read(path):
    """The protocol under uvicorn itself (the test kit serves every test's app over it, as `tagengine serve`
    does): a whole answer's head and body come in the client's first read, every time, and went to the socket
    in one call (on loopback the client's first read holds both even when they went in two)."""
    app = Starlette(routes=[Route("/json", lambda r: JSONResponse({"reply": "x" * 3000})),
                            Route("/text", lambda r: Response("y" * 500))])
    with Running(app, http=SpiedProtocol) as srv:
        for _ in range(20):
            Spy.writes.clear()
            got = first_read(srv.url, path)
            head, _, body = got.partition(b"\r\n\r\n")
            size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            assert head.startswith(b"HTTP/1.1 200") and len(body) == size > 0, got[:200]
            assert Spy.writes == [("writelines", (head + b"\r\n\r\n", body))]


def sent_by(document: bool, cut: bool = False) -> list[tuple[str, bytes, bool]]:
    """The ASGI messages a Streamed of three pieces sends (its body cut after two, with `cut`)."""
    async def pieces():
        yield b"a"
        yield b"b"
        if cut:
            raise Incomplete
        yield b"c"

    async def run():
        sent: list[tuple[str, bytes, bool]] = []

        async def receive():
            await asyncio.Event().wait()  # the client never leaves

        async def send(m):
            sent.append((m["type"].rpartition(".")[2], m.get("body", b""), m.get("more_body", False)))

        await Streamed(pieces(), media_type="application/json", document=document)({"type": "http"}, receive, send)
        return sent
    return asyncio.run(run())


def test_sb_16_a_document_sends_its_last_piece_with_its_end():
    """A passed-through document (Streamed's `document`): each piece goes once the next is known, so the last
    goes with the body's end, and uvicorn writes the two (and, through HeadJoiner, the head) at once; a stream of
    events sends each piece as it comes."""
    assert sent_by(True) == [("start", b"", False), ("body", b"a", True), ("body", b"b", True), ("body", b"c", False)]
    assert sent_by(False) == [("start", b"", False), ("body", b"a", True), ("body", b"b", True),
                              ("body", b"c", True), ("body", b"", False)]
    # cut short (S-34): what came goes out, and no end
    assert sent_by(True, cut=True) == [("start", b"", False), ("body", b"a", True), ("body", b"b", True)]
