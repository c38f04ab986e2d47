"""Issue 26 item 4: slow and idle clients are timed and their connections capped (server/runtime/connections.py,
SEC-4), over real sockets to a server in a thread whose limits are set small (`Guard`): a head of half a line
and a body that stops get a 408 and their connection closed, a connection that says nothing is closed without
a word, and past the cap the connection idle longest makes room (or, none idle, the new one gets a 503), while
the clients being served are never the ones closed."""

from __future__ import annotations

import socket
import time

import httpx
from serve_kit import Running
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tagengine._internal.server.runtime.connections import Guard


def echo_app() -> Starlette:
    async def echo(request: Request) -> Response:
        return PlainTextResponse(f"got {len(await request.body())}")

    async def hello(request: Request) -> Response:
        return PlainTextResponse("hello")

    return Starlette(routes=[Route("/echo", echo, methods=["POST"]), Route("/hello", hello)])


def connect(srv: Running) -> socket.socket:
    host, port = srv.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)  # bounded: every wait below is


def read_all(s: socket.socket) -> bytes:
    """What the server sends until it closes the connection (bounded by the socket's timeout)."""
    out = b""
    while True:
        got = s.recv(65536)
        if not got:
            return out
        out += got


def test_a_head_that_does_not_end_in_time_gets_a_408_and_is_closed():
    with Running(echo_app(), http=Guard(head_timeout=0.3).protocol()) as srv, connect(srv) as s:
        s.sendall(b"GET /hello HTTP/1.1\r\n")  # half a request line's worth: the head never ends
        assert read_all(s).startswith(b"HTTP/1.1 408 ")


def test_a_connection_that_says_nothing_is_closed_without_a_word():
    with Running(echo_app(), http=Guard(head_timeout=0.3).protocol()) as srv, connect(srv) as s:
        assert read_all(s) == b""


def test_a_body_that_stops_coming_gets_a_408_and_is_closed():
    with Running(echo_app(), http=Guard(head_timeout=60, body_timeout=0.3).protocol()) as srv, connect(srv) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        assert read_all(s).startswith(b"HTTP/1.1 408 ")


def test_requests_within_the_time_are_served_and_a_kept_connection_is_timed_again_per_request():
    """The head's time counts from its own first byte: a connection kept between requests (keep-alive) and a
    request whose body comes in pieces within the time are served as before."""
    with Running(echo_app(), http=Guard(head_timeout=0.5, body_timeout=0.5).protocol()) as srv, connect(srv) as s:
        for _ in range(3):
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")
            time.sleep(0.1)
            s.sendall(b"def")
            assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
            time.sleep(0.7)  # idle past the head's time: keep-alive is uvicorn's, 75 s in `tagengine serve`


def test_past_the_cap_the_connection_idle_longest_makes_room():
    with Running(echo_app(), http=Guard(max_connections=4).protocol()) as srv:
        idle = [connect(srv) for _ in range(4)]
        for s in idle:
            s.sendall(b"GET /hel")  # half a head: waiting for the rest
            time.sleep(0.05)  # so the first is the one idle longest
        try:
            with httpx.Client(base_url=srv.url, timeout=30) as c:
                assert c.get("/hello").text == "hello"
            assert read_all(idle[0]) == b""  # closed to make room, without a word: it had not asked yet
        finally:
            for s in idle:
                s.close()


def test_past_the_cap_with_no_connection_idle_a_new_one_gets_a_503():
    with Running(echo_app(), http=Guard(max_connections=2, body_timeout=30).protocol()) as srv:
        busy = [connect(srv) for _ in range(2)]
        for s in busy:  # each sending its body: being served, never closed to make room
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
        try:
            time.sleep(0.2)
            with connect(srv) as new:
                assert read_all(new).startswith(b"HTTP/1.1 503 ")
            for s in busy:  # and they are served once their bodies end
                s.sendall(b"56789")
                assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
        finally:
            for s in busy:
                s.close()
