"""`serve --count-with-upstream` benchmark (issue 15, K-9..K-12): what asking the upstream for counts adds to
a turn, against the same server counting locally, in the same run. In process (httpx's ASGI transport on
both sides), so the figures are the server's own work plus one in-process tokenize round trip per new text,
not a network's or a real tokenizer's.

Prints: the first turn of a 200-message chat (every text asked once, its 100 replies replayed), then warm
turns (the new texts only: the user's message, the reminder when it changed), with and without the option,
and the number of tokenize requests each made. The issue sets no target here; what the option adds to a
warm turn is one tokenize round trip per new text (in process here, about a millisecond); the reminder the
fetch before fitting needs is the one `build_prompt` then uses (`prompt.reminder` is cached by state, S-24).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tagengine._internal.server.app import Options, make_app  # noqa: E402
from tagengine._internal.server.memory.campaigns import new_campaign  # noqa: E402
from tagengine._internal.server.memory.store import Store  # noqa: E402

RULESET = ROOT / "samples" / "rulesets" / "blades-like.json"
REPLY = "The guard turns; Cutter slips past the lamps and into the rain."
RUNS = 150
ASKED = [0]
HEADERS: list[str] = []


def upstream() -> Starlette:
    """A chat endpoint and llama.cpp's /tokenize (one token per four characters)."""

    async def chat(request: Request) -> Response:
        return JSONResponse({"id": "x", "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]})

    async def tokenize(request: Request) -> Response:
        ASKED[0] += 1
        text = (await request.json())["content"]
        return JSONResponse({"tokens": [ord(c) for c in text[::4]]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                             Route("/tokenize", tokenize, methods=["POST"])])


def chat_of(turns: int) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": '[tagengine: campaign="bench"] You are the GM.'}]
    for n in range(turns):
        msgs += [{"role": "user", "content": f"Turn {n}: we press on through the rain."},
                 {"role": "assistant", "content": f"{REPLY} ({n})"}]
    return msgs


async def measure(count_with_upstream: bool) -> None:
    data = Path(tempfile.mkdtemp(prefix="tagengine-bench-"))
    store = Store(data)
    new_campaign(store, "bench", str(RULESET), ["Cutter", "Lurk"])
    store.close()
    app = make_app(Options(upstream="http://up/v1", data=data, context=200_000, count_with_upstream=count_with_upstream,
                           transport=httpx.ASGITransport(app=upstream())))
    label = "upstream counts" if count_with_upstream else "local counts (qwen: o200k estimate)"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        async def once(msgs: list[dict[str, str]]) -> tuple[float, str]:
            t = time.perf_counter()
            r = await c.post("/v1/chat/completions", json={"model": "qwen2.5-7b", "messages": msgs})
            assert r.status_code == 200, r.text
            HEADERS.append(r.headers["x-tagengine-tokens"])
            return time.perf_counter() - t, r.json()["choices"][0]["message"]["content"]

        history = [*chat_of(100), {"role": "user", "content": "And then?"}]
        ASKED[0] = 0
        first, reply = await once(history)
        first_asked = ASKED[0]
        times, asked = [], []
        for n in range(RUNS):  # each turn: the last reply and a new user message are new texts
            history += [{"role": "assistant", "content": reply}, {"role": "user", "content": f"Turn {n}: and now?"}]
            ASKED[0] = 0
            took, reply = await once(history)
            times.append(took)
            asked.append(ASKED[0])
        print(f"{label}: first turn of 200 messages {first * 1e3:.1f} ms ({first_asked} tokenize requests); "
              f"warm turn median {statistics.median(times) * 1e3:.2f} ms, "
              f"p99 {sorted(times)[int(0.99 * len(times))] * 1e3:.2f} ms, "
              f"{statistics.mean(asked):.1f} tokenize requests per turn")


if __name__ == "__main__":
    asyncio.run(measure(False))
    asyncio.run(measure(True))
    print("last x-tagengine-tokens:", HEADERS[-1])
