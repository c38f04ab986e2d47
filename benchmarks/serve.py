"""Serve benchmark (issue 12): what `tagengine serve` adds to a turn, against a fake upstream, side by side
with the same request passed through (no campaign) in the same run. In process (httpx's ASGI transport on
both sides), so the figures are the server's own work, not the network's.

Targets: added latency per non-streamed turn of a 200-message chat, warm store, p50 <= 2 ms, p99 <= 10 ms;
added time to the first streamed byte <= 2 ms; cold store (200 replies replayed) <= 60 ms.
Here the chat is 200 messages (100 replies) plus the new turn; the cold case replays those 100 replies.
Not measured yet: 32 concurrent chats for 60 s. httpx's ASGI transport hands over a streamed body only
when it is complete, so the "first byte" figure is the whole streamed reply's, on both sides.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tagengine import GameState, Ruleset, apply_reply  # noqa: E402
from tagengine._internal.server.app import Options, make_app  # noqa: E402
from tagengine._internal.server.campaigns import new_campaign  # noqa: E402
from tagengine._internal.server.store import Store  # noqa: E402

RULESET = ROOT / "samples" / "rulesets" / "blades-like.json"
REPLY = ('The guard turns. [clock: name="Alarm" tick="1"] Cutter slips past. '
         '[sheet: who="Cutter" op="spend" pool="stress" amount="1"]')
RUNS = 300


def upstream() -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        if not body.get("stream"):
            return JSONResponse({"id": "x", "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]})

        async def pieces():
            for i in range(0, len(REPLY), 16):
                doc = {"id": "x", "choices": [{"index": 0, "delta": {"content": REPLY[i:i + 16]}}]}
                yield b"data: " + json.dumps(doc).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def chat_of(turns: int) -> list[dict[str, str]]:
    rs = Ruleset.load(RULESET)
    state = GameState.new(rs, ["Cutter", "Lurk"])
    state = apply_reply(rs, state, '[clock: name="Alarm" size="999"]').state
    msgs = [{"role": "system", "content": "You are the GM."}]
    for n in range(turns):
        msgs.append({"role": "user", "content": f"Turn {n}: we press on."})
        a = apply_reply(rs, state, REPLY)
        state = a.state
        msgs.append({"role": "assistant", "content": a.text})
    msgs.append({"role": "user", "content": "And then?"})
    return msgs


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="tagengine-bench-"))
    store = Store(data)
    new_campaign(store, "bench", str(RULESET), ["Cutter", "Lurk"])
    store.close()
    app = make_app(Options(upstream="http://up/v1", data=data, context=200_000,
                           transport=httpx.ASGITransport(app=upstream())))
    msgs = chat_of(100)  # 200 messages of history and the new turn
    plain = {"model": "gpt-4o", "messages": msgs}
    marked = {"model": "gpt-4o", "messages": [{"role": "system", "content": '[tagengine: campaign="bench"]'}, *msgs]}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://serve") as c:
        async def once(body: dict, stream: bool = False) -> tuple[float, float]:
            t = time.perf_counter()
            if not stream:
                r = await c.post("/v1/chat/completions", json=body)
                assert r.status_code == 200, r.text
                return time.perf_counter() - t, 0.0
            async with c.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as r:
                first = 0.0
                async for _ in r.aiter_bytes():
                    first = first or time.perf_counter() - t
                return time.perf_counter() - t, first

        t = time.perf_counter()
        await once(marked)  # cold: every reply replayed (and the tokenizer built)
        cold_first = time.perf_counter() - t
        for _ in range(20):
            await once(plain), await once(marked)
        base, ours, base_first, ours_first = [], [], [], []
        for _ in range(RUNS):
            base.append((await once(plain))[0])
            ours.append((await once(marked))[0])
            base_first.append((await once(plain, True))[1])
            ours_first.append((await once(marked, True))[1])
        colds = []
        for _ in range(10):  # cold store, warm process: 100 replies replayed from the start
            fresh = Path(tempfile.mkdtemp(prefix="tagengine-bench-"))
            s = Store(fresh)
            new_campaign(s, "bench", str(RULESET), ["Cutter", "Lurk"])
            s.close()
            cold_app = make_app(Options(upstream="http://up/v1", data=fresh, context=200_000,
                                        transport=httpx.ASGITransport(app=upstream())))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=cold_app), base_url="http://s") as cc:
                t = time.perf_counter()
                await cc.post("/v1/chat/completions", json=marked)
                colds.append(time.perf_counter() - t - statistics.median(base))
    added = [o - b for o, b in zip(sorted(ours), sorted(base), strict=True)]
    print(f"non-streamed turn, 200-message chat, warm store: passthrough p50 {statistics.median(base) * 1e3:.2f} ms; "
          f"added p50 {statistics.median(added) * 1e3:.2f} ms (target <= 2), "
          f"p99 {pct(added, 0.99) * 1e3:.2f} ms (target <= 10)")
    print(f"first streamed byte: passthrough {statistics.median(base_first) * 1e3:.2f} ms, served "
          f"{statistics.median(ours_first) * 1e3:.2f} ms; added "
          f"{(statistics.median(ours_first) - statistics.median(base_first)) * 1e3:.2f} ms (target <= 2)")
    print(f"cold store, 100 replies replayed: added p50 {statistics.median(colds) * 1e3:.1f} ms "
          f"(target <= 60 for 200); the very first request (tokenizer built too) {cold_first * 1e3:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
