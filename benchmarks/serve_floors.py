"""Serve floors (issue 12, SB-15): what each layer of an HTTP hop adds to a turn's first byte and whole answer.

`benchmarks/serve.py` measures what `tagengine serve` adds; this measures what a hop of each kind adds, on the
same machine, against the same fake upstream (serve.py's), interleaved in one run, so that the share of the
hop itself, of its HTTP layers and of the engine can be told apart. Each floor is a process of its own, a
minimal passthrough of the chat's bytes:

  proxy      a raw asyncio proxy (streams in, streams out, no HTTP library: the floor of a Python hop)
  asgi       uvicorn and a bare ASGI app, the upstream called over asyncio streams
  connection the same, the upstream called over the server's own `transport.Connection` (httptools)
  httpx      the same, through `HTTP11Transport` with httpx's request and response objects (as the server)
  starlette  the same under Starlette, answered with the server's `Streamed` (as the server)

then `tagengine serve` itself: the chat passed through (no campaign; it still reads the JSON, to find one)
and served (a campaign: the engine's work too). Each figure is the median of the rounds' figures, each the
median over `--runs` requests of one kind (first byte, and the whole answer) minus that of the same request
sent straight to the upstream in the same round. Every floor writes as `tagengine serve` does (a response's
head with the first piece of its body, a document's last piece with its end, SB-16), and every timed request
follows an untimed one straight to the upstream, so none follows another process's work or its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from serve import (
    ROOT,
    Code,
    Proc,
    count,
    first_byte,
    history,
    load,
    new_data,
    post,
    start_listener,
    start_serve,
    start_upstream,
)

FLOORS = ("proxy", "asgi", "connection", "httpx", "starlette")
PATH = "/v1/chat/completions"


# -- the floors (each its own process) -----------------------------------------------------------------

def content_length(head: bytes) -> int:
    return next((int(line[15:]) for line in head.split(b"\r\n") if line[:15].lower() == b"content-length:"), 0)


async def read_message(r: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP/1.1 message with a Content-Length body: (head, body)."""
    head = await r.readuntil(b"\r\n\r\n")
    size = content_length(head)
    return head, await r.readexactly(size) if size else b""


async def chunks(r: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """A chunked body's chunks, as they come."""
    while size := int((await r.readuntil(b"\r\n")).split(b";")[0], 16):
        yield (await r.readexactly(size + 2))[:-2]
    await r.readuntil(b"\r\n")


async def body_of(r: asyncio.StreamReader, head: bytes) -> AsyncIterator[bytes]:
    """An answer's body after its `head`: chunked, or of its Content-Length."""
    if b"chunked" in head.lower():
        async for piece in chunks(r):
            yield piece
    else:
        yield await r.readexactly(content_length(head))


class Upstreams:
    """Keep-alive connections to the upstream over asyncio streams."""

    def __init__(self, port: int) -> None:
        self.port, self.idle = port, list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]()

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return self.idle.pop() if self.idle else await asyncio.open_connection("127.0.0.1", self.port)


def request_head(size: int) -> bytes:
    return (b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
            % (PATH.encode(), size))


def run_proxy(sock: socket.socket, port: int) -> None:
    ups = Upstreams(port)

    async def client(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head, body = await read_message(cr)
                ur, uw = await ups.open()
                uw.writelines([head, body])
                answer = await ur.readuntil(b"\r\n\r\n")
                framed = b"chunked" in answer.lower()
                out = [answer]  # the head goes with the first piece, as `tagengine serve` sends it (SB-16)
                async for piece in body_of(ur, answer):
                    out.append(b"%x\r\n%s\r\n" % (len(piece), piece) if framed else piece)
                    cw.writelines(out)
                    out = []
                cw.writelines([*out, b"0\r\n\r\n"] if framed else out)
                ups.idle.append((ur, uw))
        cw.close()

    async def main() -> None:
        server = await asyncio.start_server(client, sock=sock)
        await server.serve_forever()

    import uvloop
    uvloop.run(main())


async def asgi_body(receive: Any) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


def floor_app(mode: str, port: int) -> Any:
    """The ASGI app of a floor other than the raw proxy."""
    import httpx

    from tagengine._internal.server.upstream.transport import Connection, HTTP11Transport

    ups, conns, transport = Upstreams(port), list[Connection](), HTTP11Transport()
    url = httpx.URL(f"http://127.0.0.1:{port}{PATH}")
    headers = [("content-type", "application/json")]

    async def answer(send: Any, status: int, media: bytes, pieces: AsyncIterator[bytes]) -> None:
        """As `tagengine serve` answers: a document's last piece with its end (Streamed's `document`)."""
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", media)]})
        document, last = not media.startswith(b"text/event-stream"), b""
        async for piece in pieces:
            if document:
                piece, last = last, piece
            if piece:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": last})

    async def over_streams(body: bytes) -> tuple[int, bytes, AsyncIterator[bytes]]:
        ur, uw = await ups.open()
        uw.writelines([request_head(len(body)), body])
        head = await ur.readuntil(b"\r\n\r\n")

        async def pieces() -> AsyncIterator[bytes]:
            async for piece in body_of(ur, head):
                yield piece
            ups.idle.append((ur, uw))
        media = b"text/event-stream" if b"chunked" in head.lower() else b"application/json"
        return 200, media, pieces()

    async def over_connection(body: bytes) -> tuple[int, bytes, AsyncIterator[bytes]]:
        conn = conns.pop() if conns else (await asyncio.get_running_loop().create_connection(
            Connection, "127.0.0.1", port))[1]
        conn.begin(request_head(len(body)), body)
        request = httpx.Request("POST", url)  # for the error messages only
        await conn.head(60, request)

        async def pieces() -> AsyncIterator[bytes]:
            while (piece := await conn.piece(60, request)) is not None:
                yield piece
            conn.parser = None
            conns.append(conn)
        media = next((v for k, v in conn.headers if k.lower() == b"content-type"), b"")
        return conn.status, media, pieces()

    async def over_httpx(body: bytes) -> tuple[int, bytes, AsyncIterator[bytes]]:
        got = await transport.handle_async_request(httpx.Request("POST", url, headers=headers, content=body))

        async def pieces() -> AsyncIterator[bytes]:
            async for piece in got.aiter_raw():
                yield piece
            await got.aclose()
        return got.status_code, got.headers.get("content-type", "").encode(), pieces()

    if mode == "starlette":
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.routing import Route

        from tagengine._internal.server.wire.streamed import Streamed

        async def chat(request: Request) -> Streamed:
            status, media, pieces = await over_httpx(await request.body())
            return Streamed(pieces, status_code=status, media_type=media.decode(),
                            document=not media.startswith(b"text/event-stream"))
        return Starlette(routes=[Route(PATH, chat, methods=["POST"])])

    call = {"asgi": over_streams, "connection": over_connection, "httpx": over_httpx}[mode]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await answer(send, *await call(await asgi_body(receive)))
    return app


def floor(mode: str, port: int) -> None:
    """Serve the floor `mode` on 127.0.0.1, port 0; print its port on stdout."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, as serve.py says
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        if mode == "proxy":
            sock.listen(64)
            run_proxy(sock, port)
        else:
            import uvicorn

            from tagengine._internal.server.runtime.head_join import HeadJoiningProtocol

            uvicorn.Server(uvicorn.Config(floor_app(mode, port), log_level="warning", access_log=False,
                                          loop="uvloop", http=HeadJoiningProtocol)).run(sockets=[sock])


# -- the measurement -----------------------------------------------------------------------------------

def start_floor(tmp: Path, mode: str, upstream: str) -> tuple[Proc, str]:
    return start_listener([sys.executable, __file__, "--floor", mode, upstream.rsplit(":", 1)[1]],
                          tmp / f"{mode}.log", f"the {mode} floor")


async def run(args: argparse.Namespace) -> None:
    import httpx

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        procs: list[Proc] = []
        try:
            up_proc, up = start_upstream(tmp)
            procs.append(up_proc)
            floors = []
            for mode in FLOORS:
                proc, url = start_floor(tmp, mode, up)
                procs.append(proc)
                floors.append((mode, url))
            server = start_serve(tmp, Code("this tree", ROOT), new_data(tmp, "floors"), up, None)
            procs.append(server.proc)
            body = {"model": "gpt-4o", "messages": history(100)}
            plain = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are the GM of a heist."},
                                                     *body["messages"][1:]]}
            # the server's two kinds apart, so that every process is as idle before its request as the others
            # (a process that has just answered is warm: its next first byte comes about 0.45 ms sooner, SB-15)
            targets = [("direct", up, body), ("serve, passed through", server.url, plain),
                       *((m, u, body) for m, u in floors), ("serve, served", server.url, body)]
            print(f"a 200-message chat, {args.rounds} rounds of {args.runs} requests to each; {load()}")
            first: dict[str, list[float]] = {k: [] for k, _, _ in targets}
            whole: dict[str, list[float]] = {k: [] for k, _, _ in targets}
            async with httpx.AsyncClient(timeout=60) as c:
                for _ in range(10):
                    for _, url, doc in targets:
                        await first_byte(c, url, doc), await post(c, url, doc)
                for n in range(args.rounds):
                    got: dict[str, list[list[float]]] = {k: [[], []] for k, _, _ in targets}
                    for i in range(args.runs):
                        # each timed request follows an untimed one straight to the upstream, a whole answer or
                        # a stream by turns, so none follows another's (or its own) work (SB-16)
                        prime = post if i % 2 else first_byte
                        for k, url, doc in targets:
                            await prime(c, up, body)
                            got[k][0].append(await first_byte(c, url, doc))
                            await prime(c, up, body)
                            got[k][1].append(await post(c, url, doc))
                    medians = {k: (statistics.median(f), statistics.median(w)) for k, (f, w) in got.items()}
                    for k, (f, w) in medians.items():
                        first[k].append((f - medians["direct"][0]) * 1e3)
                        whole[k].append((w - medians["direct"][1]) * 1e3)
                    print(f"  round {n + 1}: direct first byte {medians['direct'][0] * 1e3:.2f} ms, whole "
                          f"{medians['direct'][1] * 1e3:.2f} ms; {load()}")
            print(f"added over the direct request, ms (the medians of the rounds); {load()}")
            print(f"  {'':24} {'first byte':>10} {'whole':>8}")
            for k, _, _ in sorted(targets[1:], key=lambda t: t[0].startswith("serve")):
                print(f"  {k:24} {statistics.median(first[k]):10.2f} {statistics.median(whole[k]):8.2f}")
        finally:
            for proc in reversed(procs):
                proc.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=count, default=3, help="rounds (default 3)")
    p.add_argument("--runs", type=count, default=200, help="requests of each kind to each target per round "
                                                           "(default 200)")
    p.add_argument("--floor", nargs=2, metavar=("MODE", "PORT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.floor:
        floor(args.floor[0], int(args.floor[1]))
        return
    if args.rounds < 1 or args.runs < 1:
        p.error("--rounds and --runs must be at least 1")
    started = time.perf_counter()
    asyncio.run(run(args))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
