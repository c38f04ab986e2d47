"""Issue 12: each way a real loopback upstream can fail reaches the client as the right error (SB-10 tried
another transport whose own mapping called a dropped connection a connect timeout; these pin the mapping):
a refused or timed-out connect, a read timeout before the headers or mid-answer, a connection dropped
before or mid-answer, an answer that is not HTTP. Nothing is kept in any case.

Every test runs over both upstream transports (issue 25 item 6, SV-6): the server's own (`transport.py`,
the default) and httpx's (`serve --upstream-transport httpx`), which must fail the same way."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import httpx
import openai
import pytest
from serve_kit import Running, read_head
from test_serve import MARK, make_campaigns, snapshots

from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.options import UPSTREAM_TRANSPORTS
from tagengine._internal.server.upstream.transport import HTTP11Transport

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"The door"},"finish_reason":null}]}\n\n'
FIRST = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
JSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n"


class Misbehaving(socketserver.ThreadingTCPServer):
    """A loopback 'upstream' that reads a request, then does `how`: silent (never answers), drop (closes at
    once), garbage (answers bytes that are not HTTP), stall (headers and one event, then nothing), cut
    (headers and one event, then closes mid-body), cut-json (a JSON answer's headers and its first bytes, then
    closes)."""

    daemon_threads = True

    def __init__(self, how: str) -> None:
        self.how, self.release, self.lines = how, threading.Event(), []
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        srv = self.server
        assert isinstance(srv, Misbehaving)
        data = read_head(self.request)
        if data is None:
            return
        srv.lines.append(data.split(b"\r\n", 1)[0].decode())
        if srv.how == "garbage":
            self.request.sendall(b"garbage, not HTTP\r\n\r\n")
        elif srv.how in ("stall", "cut"):
            self.request.sendall(HEAD + FIRST)
        elif srv.how == "cut-json":
            self.request.sendall(JSON_HEAD + b'{"choices": [{"index": 0, "mess')
        if srv.how in ("silent", "stall"):
            srv.release.wait(10)  # bounded; set when the test ends


@contextmanager
def upstream(how: str) -> Iterator[Misbehaving]:
    srv = Misbehaving(how)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(10)


@contextmanager
def no_accept() -> Iterator[str]:
    """A listening socket whose accept queue is full (backlog 0, one connection waiting): a new connect gets
    no answer to its SYN, so it times out."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    waiting = []
    try:
        for _ in range(2):
            s = socket.socket()
            s.setblocking(False)
            with suppress(BlockingIOError):
                s.connect(ls.getsockname())
            waiting.append(s)
        yield f"http://127.0.0.1:{ls.getsockname()[1]}/v1"
    finally:
        for s in waiting:
            s.close()
        ls.close()


@pytest.fixture(params=UPSTREAM_TRANSPORTS, autouse=True)
def transport(request) -> str:
    return request.param


def turn(url: str, tmp_path, stream: bool, transport: str) -> httpx.Response:
    data = tmp_path / "data"
    make_campaigns(data)
    body = {"model": "m", "stream": stream, "messages": [{"role": "system", "content": f"GM. {MARK['heist']}"},
                                                         {"role": "user", "content": "TURN:one"}]}
    app = make_app(Options(upstream=url, data=data, timeout=0.5, upstream_transport=transport))
    own = isinstance(app.state.context.upstream.transport, HTTP11Transport)
    assert own == (transport == "own" and "upstream.invalid" not in url)  # the one asked for (a proxy: httpx's)
    with Running(app) as srv, \
            httpx.Client(timeout=30, trust_env=False) as h:  # not through a proxy the test sets
        r = h.post(f"{srv.url}/v1/chat/completions", json=body)
    assert snapshots(data) == 0
    return r


def error_event(r: httpx.Response) -> dict:
    assert r.status_code == 200
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    assert "error" in events[-1] and "[DONE]" not in r.text, r.text
    return events[-1]["error"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("how", "status", "code"), [
    ("silent", 504, "upstream_timeout"),  # a read timeout before the headers
    ("drop", 502, "upstream_failed"),
    ("garbage", 502, "upstream_failed"),
])
def test_a_failure_before_the_answer_is_an_openai_error(tmp_path, how, status, code, stream, transport):
    with upstream(how) as up:
        r = turn(up.url, tmp_path, stream, transport)
    assert r.status_code == status and r.json()["error"]["code"] == code, r.text
    if code == "upstream_failed":
        assert "time" not in r.json()["error"]["message"]


@pytest.mark.parametrize(("how", "code"), [("stall", "upstream_timeout"), ("cut", "upstream_failed")])
def test_a_failure_mid_answer_ends_the_stream_with_an_error_event(tmp_path, how, code, transport):
    with upstream(how) as up:
        r = turn(up.url, tmp_path, True, transport)
    assert error_event(r)["code"] == code


@pytest.mark.parametrize(("how", "status", "code"), [("stall", 504, "upstream_timeout"),
                                                     ("cut", 502, "upstream_failed")])
def test_a_failure_mid_answer_not_streamed_is_an_openai_error(tmp_path, how, status, code, transport):
    with upstream(how) as up:
        r = turn(up.url, tmp_path, False, transport)
    assert r.status_code == status and r.json()["error"]["code"] == code, r.text


def test_a_connect_that_times_out_is_a_504(tmp_path, transport):
    with no_accept() as url:
        r = turn(url, tmp_path, False, transport)
    assert r.status_code == 504 and r.json()["error"]["code"] == "upstream_timeout", r.text


def test_a_refused_connection_is_unreachable_not_a_timeout(tmp_path, transport):
    with upstream("drop") as up:
        url = up.url
    r = turn(url, tmp_path, True, transport)  # the port is closed now: refused
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_unreachable", r.text


def test_an_environment_proxy_still_carries_the_upstream_calls(tmp_path, monkeypatch, transport):
    """httpx's environment proxies apply to the upstream calls (a transport given to httpx outright would
    turn them off: SB-10)."""
    with upstream("drop") as proxy:
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        r = turn("http://upstream.invalid/v1", tmp_path, False, transport)
    assert proxy.lines == ["POST http://upstream.invalid/v1/chat/completions HTTP/1.1"]
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_failed", r.text


def test_a_passed_through_stream_cut_mid_answer_ends_with_an_error_event(tmp_path, transport):
    """S-31: with no campaign the upstream's bytes come back as they came; when the upstream fails mid-stream
    an error event follows them, so a client can tell the answer was cut (before, the response just ended)."""
    make_campaigns(tmp_path / "data")
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "TURN:one"}]}
    with upstream("cut") as up, Running(make_app(Options(upstream=up.url, data=tmp_path / "data", timeout=5,
                                                         upstream_transport=transport))) as srv:
        with httpx.Client(timeout=30, trust_env=False) as h:
            r = h.post(f"{srv.url}/v1/chat/completions", json=body)
        assert r.text.startswith(EVENT.decode()) and error_event(r)["code"] == "upstream_failed"
        c = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=30)
        with pytest.raises(openai.APIError):
            for _ in c.chat.completions.create(model="m", messages=body["messages"], stream=True):
                pass


def test_a_passed_through_answer_cut_mid_body_is_cut_for_the_client_too(tmp_path, transport):
    """S-34: with no campaign a whole (non-SSE) answer comes back as it came; when the upstream fails mid-body
    the client's answer ends without its end too (the connection closes), so no client takes a truncated
    document for a whole one (before, it ended cleanly: a 200 with half a JSON document)."""
    make_campaigns(tmp_path / "data")
    body = {"model": "m", "messages": [{"role": "user", "content": "TURN:one"}]}
    with upstream("cut-json") as up, Running(make_app(Options(upstream=up.url, data=tmp_path / "data",
                                                               timeout=5, upstream_transport=transport))) as srv:
        with httpx.Client(timeout=30, trust_env=False) as h, pytest.raises(httpx.RemoteProtocolError):
            h.post(f"{srv.url}/v1/chat/completions", json=body)
        c = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=30)
        with pytest.raises(openai.APIConnectionError):
            c.chat.completions.create(model="m", messages=body["messages"])
