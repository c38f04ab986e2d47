"""Issue 12, "no exception escapes from processing a reply, whatever its text": `tagengine serve` attacked as a
hostile or buggy peer, with real loopback servers. Each test here failed before the fix named in its commit:
the client got a 500 `internal_error` (or a stream cut off mid-answer) and the log a traceback.

The upstream in these tests answers exactly the bytes a test sets (`Raw`), so an answer can be any document."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_kit import Running, chunk, read_head, sse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from test_serve import MARK, make_campaigns, snapshots

from conftest import examples
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.store import DB_NAME

DEEP = b"[" * 5000 + b"]" * 5000  # nested past what the standard library's JSON reader recurses through
MESSAGES = [{"role": "system", "content": f"You are the GM. {MARK['heist']}"}, {"role": "user", "content": "go"}]


@dataclass
class Raw:
    """An upstream that answers every chat completion with `status`, `body` and `media`; /tokenize and
    KoboldCpp's token count answer `tokens`. It records each request's headers."""

    body: bytes = b""
    status: int = 200
    media: str = "application/json"
    tokens: bytes | None = None
    headers: list[dict[str, str]] = field(default_factory=list)

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            await request.body()
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            return Response(self.body, status_code=self.status, media_type=self.media)

        async def tokenize(request: Request) -> Response:
            await request.body()
            if self.tokens is None:
                return Response(b"", status_code=404)
            return Response(self.tokens, media_type="application/json")

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", chat),
                                 Route("/tokenize", tokenize, methods=["POST"]),
                                 Route("/api/extra/tokencount", tokenize, methods=["POST"])])


@contextmanager
def serving(tmp_path: Path, up: Raw, **kw: Any) -> Iterator[str]:
    data = tmp_path / "data"
    if not (data / DB_NAME).exists():
        make_campaigns(data)
    with Running(up.app()) as u, Running(make_app(Options(upstream=f"{u.url}/v1", data=data, **kw))) as srv:
        yield srv.url


def whole(text: str) -> bytes:
    return json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}]}).encode()


def streamed_events(url: str, body: dict[str, Any]) -> list[Any]:
    """The client's SSE events (parsed; [DONE] as the string), read to the stream's end."""
    with httpx.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}, timeout=20) as r:
        assert r.status_code == 200
        raw = r.read().decode()
    return [e[6:] if e[6:] == "[DONE]" else json.loads(e[6:]) for e in raw.split("\n\n") if e.startswith("data: ")]


MODES = [pytest.param({}, id="plain"), pytest.param({"hide_tags": True}, id="hide-tags"),
         pytest.param({"settle_checks": True}, id="settle-checks")]


# -- 1. an upstream document nested deeper than the JSON reader recurses (RecursionError, not ValueError)

@pytest.mark.parametrize("opts", MODES)
def test_a_deeply_nested_answer_is_a_502_malformed_not_an_internal_error(tmp_path, opts):
    up = Raw(b'{"choices": [{"message": {"content": "x"}}], "extra": ' + DEEP + b"}")
    with serving(tmp_path, up, **opts) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": MESSAGES}, timeout=20)
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_malformed"
    assert snapshots(tmp_path / "data") == 0


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_error_whose_body_is_deeply_nested_keeps_its_status(tmp_path, stream):
    up = Raw(b'{"error": ' + DEEP + b"}", status=503)
    with serving(tmp_path, up) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": MESSAGES, "stream": stream},
                       timeout=20)
    assert r.status_code == 503 and r.json()["error"] == {"message": "the upstream model answered 503",
                                                         "type": "upstream_error", "code": "upstream_error"}


@pytest.mark.parametrize("opts", MODES)
def test_a_deeply_nested_streamed_event_ends_the_stream_with_an_error_event(tmp_path, opts):
    up = Raw(sse(chunk("The door "), DEEP, chunk("opens.", "stop"), b"[DONE]"), media="text/event-stream")
    with serving(tmp_path, up, **opts) as url:
        events = streamed_events(url, {"model": "m", "messages": MESSAGES})
    assert events[-1] == {"error": {"message": "the upstream model sent a malformed event stream",
                                    "type": "upstream_error", "code": "upstream_malformed"}}
    assert "[DONE]" not in events and snapshots(tmp_path / "data") == 0


def test_settle_reads_a_deeply_nested_continuation_as_no_json():
    from tagengine._internal.server.wire.json_codec import loads_or_none as _json

    assert _json((b'{"choices": ' + DEEP + b"}").decode()) is None
    assert _json('{"a": 1}') == {"a": 1}


# -- 2. a client's header value with bytes beyond ASCII (HTTP's obs-text): httpx encodes a str header as ASCII

def raw_request(url: str, head: bytes, body: bytes = b"", heads: list[bytes] | None = None) -> tuple[int, bytes]:
    """One HTTP/1.1 request written byte for byte (httpx will not send a header byte beyond ASCII): the
    status and the body of the answer (the connection closed by the server after it); its head goes in
    `heads` when given."""
    import socket

    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(head + b"Connection: close\r\n" + (b"Content-Length: %d\r\n" % len(body) if body else b"")
                  + b"\r\n" + body)
        got = b""
        for _ in range(10_000):  # bounded: the server closes the connection after its answer
            part = s.recv(65536)
            if not part:
                break
            got += part
    head_in, body_in = got.split(b"\r\n\r\n", 1)
    if heads is not None:
        heads.append(head_in)
    if b"transfer-encoding: chunked" in head_in.lower():
        out = b""
        while body_in:
            size, _, rest = body_in.partition(b"\r\n")
            n = int(size, 16)
            out, body_in = out + rest[:n], rest[n + 2:] if n else b""
        body_in = out
    return int(head_in.split(b" ", 2)[1]), body_in


@pytest.mark.parametrize("campaign", [True, False], ids=["campaign", "passthrough"])
def test_header_bytes_beyond_ascii_are_forwarded_as_they_came_not_a_500(tmp_path, campaign):
    up = Raw(whole("The door opens."))
    messages = MESSAGES if campaign else MESSAGES[1:]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    with serving(tmp_path, up) as url:
        status, answer = raw_request(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          b"Content-Type: application/json\r\nAuthorization: Bearer k\xe9y\r\n"
                                          b"User-Agent: caf\xe9\r\n", body)
        assert status == 200, answer
        assert json.loads(answer)["choices"][0]["message"]["content"] == "The door opens."
        assert up.headers[-1]["authorization"] == "Bearer k\xe9y"  # the same bytes (Starlette reads latin-1)
        if not campaign:  # a passthrough forwards the client's other headers too
            assert up.headers[-1]["user-agent"] == "caf\xe9"
        status, answer = raw_request(url, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     b"Authorization: Bearer k\xe9y\r\n")
        assert status == 200 and up.headers[-1]["authorization"] == "Bearer k\xe9y"


def test_header_bytes_beyond_ascii_reach_the_tokenize_endpoint_too(tmp_path):
    """--count-with-upstream asks the upstream's tokenize endpoint with the client's Authorization."""
    up = Raw(whole("The door opens."), tokens=b'{"tokens": [1, 2, 3]}')
    body = json.dumps({"model": "m", "messages": MESSAGES}).encode()
    with serving(tmp_path, up, count_with_upstream=True) as url:
        status, answer = raw_request(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          b"Content-Type: application/json\r\nAuthorization: Bearer k\xe9y\r\n", body)
    assert status == 200, answer


# -- 3. a reply holding text that is not UTF-8 (a lone surrogate, written `\ud800` in JSON): SQLite cannot store it

ODD = 'The door\ud800 opens. [clock: name="Alarm raised" size="6"] [clock: name="Bad\udfff" size="4"]'


def _stored(data: Path, want: tuple[int, int, int]) -> tuple[int, int, int]:
    """The rows of snapshots, heads and narrations, once they are `want` (kept after the answer has gone,
    S-24: polled a bounded number of times)."""
    import time

    for _ in range(200):
        with sqlite3.connect(data / DB_NAME) as db:
            got = tuple(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                        for t in ("snapshots", "heads", "narrations"))
        if got == want:
            break
        time.sleep(0.01)
    return got  # type: ignore[return-value]  # three counts


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("hide", [False, True], ids=["receipts", "hide-tags"])
def test_a_reply_with_a_lone_surrogate_is_kept_and_the_next_turn_follows_it(tmp_path, stream, hide):
    """The reply is answered (its receipts, or its narration), its snapshot and the sheet page's head are
    kept, and with --hide-tags the narration the player got maps back to the tagged reply next turn."""
    up = Raw(sse(chunk(ODD[:20]), chunk(ODD[20:], "stop"), b"[DONE]") if stream else whole(ODD),
             media="text/event-stream" if stream else "application/json")
    with serving(tmp_path, up, hide_tags=hide) as url:
        body = {"model": "m", "messages": MESSAGES}
        if stream:
            events = streamed_events(url, body)
            assert events[-1] == "[DONE]"
            shown = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1])
        else:
            r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=20)
            assert r.status_code == 200
            shown = r.json()["choices"][0]["message"]["content"]
        assert ("[clock:" not in shown) if hide else ('name="Bad\udfff" size="4" result="refused"' in shown)
        assert _stored(tmp_path / "data", (1, 1, int(hide))) == (1, 1, int(hide))
        up.body = whole('Later. [clock: name="Alarm raised" tick="1"]')
        up.media = "application/json"
        nxt = {"model": "m", "messages": [*MESSAGES, {"role": "assistant", "content": shown},
                                          {"role": "user", "content": "on"}]}
        r = httpx.post(f"{url}/v1/chat/completions", content=json.dumps(nxt).encode(),  # \ud800 escaped
                       headers={"content-type": "application/json"}, timeout=20)
    assert r.status_code == 200 and "x-tagengine-history" not in r.headers
    if not hide:
        assert 'now="1/6"' in r.json()["choices"][0]["message"]["content"]
    assert _stored(tmp_path / "data", (2, 1, 2 * hide)) == (2, 1, 2 * hide)  # the second turn's, after the first


# -- 4. a campaign name that is not UTF-8 (a lone surrogate in the marker or the checks body)

@pytest.mark.parametrize(("path", "body"), [
    ("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "system", "content": '
                             b'"[tagengine: campaign=\\"a\\ud800\\"]"}, {"role": "user", "content": "go"}]}'),
    ("/tagengine/api/checks",
     b'{"campaign": "a\\ud800", "messages": [], "check": {"who": "Cutter", "skill": "Prowl"}}'),
    ("/tagengine/api/checks", b'{"messages": [{"role": "user", "content": "[tagengine: campaign=\\"a\\ud800\\"]"}], '
                              b'"check": {"who": "Cutter", "skill": "Prowl"}}')],
    ids=["marker", "checks", "checks-marker"])
def test_a_campaign_name_with_a_lone_surrogate_is_an_unknown_campaign_not_a_500(tmp_path, path, body):
    with serving(tmp_path, Raw(whole("x"))) as url:
        r = httpx.post(f"{url}{path}", content=body, headers={"content-type": "application/json"}, timeout=20)
    assert r.status_code == 404 and r.json()["error"] == {"message": "unknown campaign 'a\\ud800'",
                                                         "type": "invalid_request_error",
                                                         "code": "campaign_not_found"}


# -- 5. --count-with-upstream: a KoboldCpp-style count past what a length can be

@pytest.mark.parametrize("value", [b"1" + b"0" * 30, b"9223372036854775808", b"2147483648"])
def test_a_token_count_past_any_real_one_is_not_its_shape_not_a_500(tmp_path, value):
    up = Raw(whole("The door opens."), tokens=b'{"value": ' + value + b"}")
    with serving(tmp_path, up, count_with_upstream=True) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": MESSAGES}, timeout=20)
    assert r.status_code == 200 and r.headers["x-tagengine-tokens"].endswith(" upstream-count=none")


# -- 6. a streamed reply's receipts (the sheet page shows the last turn's): ReceiptStream gave none

def test_a_streamed_reply_gives_the_receipts_apply_reply_gives_however_it_is_split():
    from cmdkit import sample_state

    from conftest import load_sample
    from tagengine import apply_reply
    from tagengine._internal.server.turn.receipts import ReceiptStream

    rs, state = load_sample("blades-like"), sample_state("blades-like")
    reply = ('In. [clock: name="Alarm raised" size="6"] Then [sheet: who="Lurk" op="spend" pool="stress" '
             'amount="99"] and [clock: name="Alarm raised" tick="2"] [clock: oops] out.')
    want = apply_reply(rs, state, reply)
    assert len(want.receipts) == 4
    for cut in range(len(reply) + 1):
        for cut2 in (cut, min(len(reply), cut + 7)):
            f = ReceiptStream(rs, state)
            out = f.feed(reply[:cut]) + f.feed(reply[cut:cut2]) + f.feed(reply[cut2:])
            rest, applied = f.finish()
            assert out + rest == applied.text == want.text
            assert applied.receipts == want.receipts, cut


def test_a_streamed_turn_s_receipts_reach_the_sheet_page(tmp_path):
    reply = 'In. [clock: name="Alarm raised" size="6"] [sheet: who="Lurk" op="spend" pool="stress" amount="99"]'
    up = Raw(sse(chunk(reply[:30]), chunk(reply[30:], "stop"), b"[DONE]"), media="text/event-stream")
    with serving(tmp_path, up) as url:
        assert streamed_events(url, {"model": "m", "messages": MESSAGES})[-1] == "[DONE]"
        _stored(tmp_path / "data", (1, 1, 0))
        page = httpx.get(f"{url}/ui/c/heist", timeout=20).text
    assert page.count('class="receipt ok"') == 1 and page.count('class="receipt refused"') == 1


# -- 7. the response budget a client asks for: `max_completion_tokens: null` beside `max_tokens`, odd values

@pytest.mark.parametrize(("asked", "budget", "sent"), [
    ({"max_tokens": 300, "max_completion_tokens": None}, 300, {"max_tokens": 300, "max_completion_tokens": None}),
    ({"max_completion_tokens": "300", "max_tokens": 300}, 300, {"max_tokens": 300, "max_completion_tokens": "300"}),
    ({"max_tokens": True}, 1024, {"max_tokens": True}),
    ({"max_tokens": -1}, 1024, {"max_tokens": -1}),  # llama.cpp: no limit; the upstream's to judge
    ({"max_tokens": 0}, 1024, {"max_tokens": 0}),
    ({"max_tokens": 300.0}, 1024, {"max_tokens": 300.0}),
    ({"max_completion_tokens": 300, "max_tokens": 500}, 300, {"max_tokens": 300, "max_completion_tokens": 300}),
])
def test_the_response_budget_is_the_first_whole_number_asked_and_nothing_else_is_rewritten(tmp_path, asked, budget,
                                                                                            sent):
    """A field the engine does not use as the budget goes upstream as it came; the one it uses carries the
    fitted response (here the whole budget: the chat is short)."""
    from serve_kit import Fake
    from test_serve import serving as scripted

    fake = Fake({"go": "The door opens."})
    with scripted(tmp_path, fake) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": [
            MESSAGES[0], {"role": "user", "content": "TURN:go"}], **asked}, timeout=20)
    assert r.status_code == 200 and f" response={budget} " in r.headers["x-tagengine-tokens"]
    up = json.loads(fake.bodies[-1])
    assert {k: up[k] for k in ("max_tokens", "max_completion_tokens") if k in up} == sent


# -- 8. an upstream's Content-Type with bytes beyond ASCII (httpx reads it as UTF-8; Starlette writes latin-1)

@contextmanager
def raw_upstream(answer: bytes) -> Iterator[str]:
    """A loopback upstream that reads one request (head and body) and answers `answer`, byte for byte."""
    import socketserver
    import threading

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = read_head(self.request)
            if data is None:
                return
            head, rest = data.split(b"\r\n\r\n", 1)
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:
                more = self.request.recv(65536)
                if not more:
                    return
                rest += more
            self.request.sendall(answer)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)


@pytest.mark.parametrize(("path", "messages"), [("/v1/models", None), ("/v1/chat/completions", MESSAGES[1:])],
                         ids=["models", "passthrough"])
def test_an_upstream_content_type_beyond_ascii_comes_back_as_its_bytes_not_a_500(tmp_path, path, messages):
    body = whole("The door opens.")
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json; profile=\xe2\x82\xac\r\nContent-Length: %d\r\n"
              b"Connection: close\r\n\r\n" % len(body)) + body
    make_campaigns(tmp_path / "data")
    with raw_upstream(answer) as up, Running(make_app(Options(upstream=up, data=tmp_path / "data"))) as srv:
        head = (b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % path.encode() if messages is None else
                b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % path.encode())
        heads: list[bytes] = []
        status, got = raw_request(srv.url, head, json.dumps({"model": "m", "messages": messages}).encode()
                                  if messages is not None else b"", heads)
    assert status == 200 and got == body
    assert b"\r\ncontent-type: application/json; profile=\xe2\x82\xac\r\n" in heads[0].lower()


# -- 9. a method a route does not allow: the OpenAI-format 405 says which it does (RFC 9110: Allow is a must)

@pytest.mark.parametrize(("method", "path", "allow"), [("GET", "/v1/chat/completions", "POST"),
                                                       ("PUT", "/c/heist/v1/chat/completions", "POST"),
                                                       ("DELETE", "/v1/models", "GET, HEAD"),
                                                       ("GET", "/tagengine/api/checks", "POST")])
def test_a_method_not_allowed_is_a_405_error_naming_the_allowed_ones(tmp_path, method, path, allow):
    with serving(tmp_path, Raw(whole("x"))) as url:
        r = httpx.request(method, f"{url}{path}", timeout=20)
    assert r.status_code == 405 and r.json()["error"]["code"] == "http_error"
    assert set(r.headers["allow"].split(", ")) == set(allow.split(", "))  # Starlette's order is a set's


# -- 10. the pages show text that is not UTF-8 (a reply's receipts, a client's message in the last prompt)

def test_the_pages_show_a_turn_with_lone_surrogates_not_a_500(tmp_path):
    up = Raw(whole(ODD))
    body = {"model": "m", "messages": [MESSAGES[0], {"role": "user", "content": "go\ud800"}]}
    with serving(tmp_path, up) as url:
        r = httpx.post(f"{url}/v1/chat/completions", content=json.dumps(body).encode(),
                       headers={"content-type": "application/json"}, timeout=20)
        assert r.status_code == 200
        _stored(tmp_path / "data", (1, 1, 0))
        sheet = httpx.get(f"{url}/ui/c/heist", timeout=20)
        prompt = httpx.get(f"{url}/ui/c/heist/prompt", timeout=20)
    assert sheet.status_code == 200 and sheet.text.count('class="receipt refused"') == 1
    assert 'name="Bad?"' in sheet.text.replace("&#34;", '"').replace("&quot;", '"')  # shown replaced
    assert prompt.status_code == 200 and "go?" in prompt.text


# -- 11. an upstream status no HTTP server can answer with (600..999): uvicorn writes 100..599 only

@pytest.mark.parametrize("status", [600, 999])
@pytest.mark.parametrize(("path", "messages", "stream"), [("/v1/chat/completions", MESSAGES, False),
                                                         ("/v1/chat/completions", MESSAGES, True),
                                                         ("/v1/chat/completions", MESSAGES[1:], False),
                                                         ("/v1/models", None, False)],
                         ids=["campaign", "campaign-stream", "passthrough", "models"])
def test_an_upstream_status_past_599_is_a_502_error_not_a_dropped_connection(tmp_path, status, path, messages,
                                                                             stream):
    body = b'{"error": {"message": "odd"}}'
    answer = b"HTTP/1.1 %d Odd\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        status, len(body)) + body
    make_campaigns(tmp_path / "data")
    with raw_upstream(answer) as up, Running(make_app(Options(upstream=up, data=tmp_path / "data"))) as srv:
        if messages is None:
            r = httpx.get(f"{srv.url}{path}", timeout=20)
        else:
            r = httpx.post(f"{srv.url}{path}", json={"model": "m", "messages": messages, "stream": stream}, timeout=20)
    assert r.status_code == 502 and r.json()["error"] == {"message": f"the upstream model answered {status}: odd",
                                                         "type": "upstream_error", "code": "upstream_error"}


# -- what was tried and held: any upstream document or event stream, in each mode, with and without a prefill

KEYS = st.sampled_from(["choices", "index", "delta", "message", "content", "finish_reason", "error", "role", "usage",
                        "reasoning_content", "x"])
ANY = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10),
                   lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=14)
TEXTS = st.sampled_from(['Hi [clock: name="Alarm raised" size="6"]', '[check: who="Cutter" skill="Finesse"] then',
                         "plain", "[clock:", "", "\ud800", "][", 'x [sheet: who="Lurk" op="spend" pool="stress"'])


class Errors(logging.Handler):
    """The servers' ERROR records (a traceback out of a route or a stream is one)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


def answered_well(url: str, prefill: str | None, stream: bool) -> None:
    """The client gets an answer or an OpenAI-format error that is not the server's own fault; a stream is
    made of data events, each JSON or [DONE]."""
    messages = [*MESSAGES, *([{"role": "assistant", "content": prefill}] if prefill is not None else [])]
    body = json.dumps({"model": "m", "messages": messages, "stream": stream}).encode()
    with httpx.stream("POST", f"{url}/v1/chat/completions", content=body, timeout=20,
                      headers={"content-type": "application/json"}) as r:
        raw = r.read()
    if r.status_code != 200:
        error = json.loads(raw)["error"]
        assert set(error) == {"message", "type", "code"} and r.status_code != 500, error
        return
    if stream:
        for event in raw.decode().split("\n\n"):
            if event and event != "data: [DONE]":
                assert event.startswith("data: ")
                json.loads(event.removeprefix("data: "))
    else:
        json.loads(raw)


@pytest.mark.parametrize("opts", MODES)
def test_no_upstream_answer_makes_the_server_fail(tmp_path, opts):
    errors = Errors()
    logging.getLogger().addHandler(errors)
    up = Raw()
    try:
        with serving(tmp_path, up, **opts) as url:
            @settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
            @given(ANY, st.none() | TEXTS, st.booleans(), st.lists(ANY | TEXTS.map(chunk), max_size=4))
            def attack(doc: Any, prefill: str | None, stream: bool, events: list[Any]) -> None:
                up.body = sse(*events, chunk("", "stop"), b"[DONE]") if stream else json.dumps(doc).encode()
                up.media = "text/event-stream" if stream else "application/json"
                answered_well(url, prefill, stream)
                assert not errors.seen, errors.seen

            attack()
    finally:
        logging.getLogger().removeHandler(errors)


# -- what was tried and held: any request a client sends (fields of any type, messages and parts of any shape)

ODD_TEXT = st.sampled_from(["user", "assistant", "system", "Assistant", "tool", MARK["heist"],
                            '[tagengine: campaign="x"]', '[clock: name="Alarm raised" tick="1" result="ok" now="1/6"]',
                            "text", "\ud800", ""])
VALUE = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
                     | ODD_TEXT,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(["role", "content", "type", "text", "x"]), inner, max_size=3),
                     max_leaves=10)
MESSAGE = st.fixed_dictionaries({"role": VALUE, "content": VALUE}) | VALUE
FIELDS = st.dictionaries(st.sampled_from(["stream", "max_tokens", "max_completion_tokens", "model", "n", "seed"]),
                         VALUE, max_size=4)
CHECK = st.dictionaries(st.sampled_from(["who", "skill", "ability", "save", "with", "dc", "difficulty", "x"]), VALUE,
                        max_size=4)


@pytest.mark.parametrize("opts", [pytest.param({}, id="plain"),
                                  pytest.param({"hide_tags": True, "settle_checks": True}, id="hide-settle"),
                                  pytest.param({"campaign": "heist"}, id="default-campaign")])
def test_no_client_request_makes_the_server_fail(tmp_path, opts):
    errors = Errors()
    logging.getLogger().addHandler(errors)
    up = Raw(sse(chunk('Hi [clock: name="Alarm raised" size="6"]', "stop"), b"[DONE]"), media="text/event-stream")
    try:
        with serving(tmp_path, up, **opts) as url:
            @settings(max_examples=examples(80), deadline=None, suppress_health_check=list(HealthCheck))
            @given(st.lists(MESSAGE, max_size=4), FIELDS, CHECK, st.sampled_from(["", "/c/heist", "/c/nope"]))
            def attack(messages: list[Any], fields: dict[str, Any], check: dict[str, Any], prefix: str) -> None:
                for path, body in ((f"{prefix}/v1/chat/completions", {"messages": messages, **fields}),
                                   (f"/tagengine/api{prefix}/checks", {"messages": messages, "check": check})):
                    r = httpx.post(f"{url}{path}", content=json.dumps(body).encode(), timeout=20,
                                   headers={"content-type": "application/json"})
                    if r.status_code != 200:
                        error = r.json()["error"]
                        assert set(error) == {"message", "type", "code"} and r.status_code != 500, (error, body)
                    assert not errors.seen, errors.seen

            attack()
    finally:
        logging.getLogger().removeHandler(errors)


# -- 12. --settle-checks: an upstream's error message goes into x-tagengine-settle, and a header cannot hold any text

def test_an_upstream_error_message_of_any_text_becomes_a_header_that_can_be_sent(tmp_path):
    """The probe (streamed) or the continuation (not streamed) answered 500 with a message holding a line break
    (a header injected, or uvicorn's "Invalid HTTP header value"), a euro sign (not latin-1) or a NUL: the
    reply is settled at the end, and the header says why in printable ASCII."""
    from tagengine._internal.server.turn.mid_reply import PROBE_USER

    first = 'The lock. [check: who="Cutter" skill="Finesse"] The'
    message = "boom \u20ac\r\nX-Injected: 1\x00"

    async def chat(request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        if PROBE_USER.encode() in raw or body["messages"][-1]["role"] == "assistant":
            return Response(json.dumps({"error": {"message": message}}), status_code=500, media_type="application/json")
        if body.get("stream"):
            events = sse(chunk(first[:20]), chunk(first[20:], "stop"), b"[DONE]")
            return Response(events, media_type="text/event-stream")
        return Response(whole(first), media_type="application/json")

    make_campaigns(tmp_path / "data")
    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with Running(upstream) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=tmp_path / "data",
                                                           settle_checks=True))) as srv:
        for stream in (False, True):
            r = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": MESSAGES,
                                                                   "stream": stream}, timeout=20)
            assert r.status_code == 200 and "x-injected" not in r.headers
            header = r.headers["x-tagengine-settle"]
            assert header.startswith("at-end; ") and "the upstream model answered 500: boom ?" in header
            assert all(" " <= c <= "~" for c in header)


# -- 13. a long event in many pieces (its pieces are joined once its line ends, FZ-11): the same events

@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_a_long_event_in_many_pieces_reads_as_one(end):
    import asyncio

    from tagengine._internal.server.limits import MAX_ANSWER
    from tagengine._internal.server.wire.sse import read_events

    long = b"data: " + json.dumps({"x": "a" * 100_000}).encode()
    body = long + end + b"data: second" + end + end + b"data: [DONE]" + end + end
    for size in (1, 7, 4096):
        parts = [body[i:i + size] for i in range(0, len(body), size)] if size > 1 else \
            [body[:-30], *[body[i:i + 1] for i in range(len(body) - 30, len(body))]]

        class Chunks(httpx.AsyncByteStream):
            def __init__(self, parts: list[bytes]) -> None:
                self.parts = parts

            async def __aiter__(self) -> Any:
                for p in self.parts:
                    yield p

        async def read(parts: list[bytes]) -> list[str]:
            return [e async for e in read_events(httpx.Response(200, stream=Chunks(parts)).aiter_bytes(), MAX_ANSWER)]

        assert asyncio.run(read(parts)) == [long[6:].decode() + "\nsecond", "[DONE]"]
