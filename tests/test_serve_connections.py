"""SB-3: a streamed turn leaves its upstream connection in httpx's pool (the rest of the upstream's body is
read after [DONE]), so the next turn opens none; an upstream that holds its body open after [DONE] is
still cut off, and the client's stream still ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from serve_kit import Fake, Running
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from conftest import SAMPLES
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store

REPLY = 'The door gives. [clock: name="Alarm" size="6"] Quiet now.'
MARK = '[tagengine: campaign="heist"]'


def campaign(tmp_path):
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="s")
    store.close()
    return data


class Ports:
    """An ASGI app that notes the client port of each HTTP request before passing it on."""

    def __init__(self, app: Any) -> None:
        self.app, self.ports = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.ports.append(scope["client"][1])
        await self.app(scope, receive, send)


def streamed(url, turns):
    """Play `turns` streamed turns; the text of each reply as the client put it together."""
    msgs = [{"role": "system", "content": f"GM. {MARK}"}]
    texts = []
    with httpx.Client(timeout=30) as c:
        for n in range(turns):
            msgs.append({"role": "user", "content": "TURN:a"})
            parts, done = [], False
            with c.stream("POST", f"{url}/v1/chat/completions",
                          json={"model": "gpt-4o", "messages": msgs, "stream": True}) as r:
                assert r.status_code == 200
                for line in r.iter_lines():
                    if line == "data: [DONE]":
                        done = True
                    elif line.startswith("data: "):
                        for ch in json.loads(line[6:]).get("choices", []):
                            parts.append((ch.get("delta") or {}).get("content") or "")
            assert done, f"turn {n}: no [DONE]"
            texts.append("".join(parts))
            msgs.append({"role": "assistant", "content": texts[-1]})
    return texts


def test_streamed_turns_share_one_upstream_connection(tmp_path):
    up_app = Ports(Fake({"a": REPLY}).app())
    with Running(up_app) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=campaign(tmp_path)))) as srv:
        texts = streamed(srv.url, 3)
    assert all('result="ok"' in t or 'result="refused"' in t for t in texts)
    assert len(up_app.ports) == 3
    assert len(set(up_app.ports)) == 1, f"one connection per turn: {up_app.ports}"


def held_open_after_done() -> Starlette:
    """An upstream that sends its reply and [DONE], then keeps its body open until it is cut off."""

    async def chat(request: Request) -> Response:
        await request.body()

        async def pieces() -> AsyncIterator[bytes]:
            doc = {"choices": [{"index": 0, "delta": {"content": REPLY}, "finish_reason": "stop"}]}
            yield b"data: " + json.dumps(doc).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"
            await asyncio.Event().wait()  # never set: cancelled when the server closes the connection

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def test_an_upstream_that_holds_its_body_open_after_done_is_cut_off(tmp_path):
    with Running(held_open_after_done()) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=campaign(tmp_path)))) as srv:
        texts = streamed(srv.url, 2)
    assert all('name="Alarm"' in t and "result=" in t for t in texts)
