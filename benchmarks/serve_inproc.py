"""A served turn's CPU in process: the app under httpx's ASGI transport, the upstream an httpx MockTransport.

No sockets and no waits: what is timed is the app's own work (and the in-process client's, the same for every
path), in CPU time of this one thread (`time.thread_time`), which a loaded machine tilts far less than wall time.
The chat is `benchmarks/serve.py`'s (a 200-message chat of 78 KiB, 100 replies with receipts, a new user turn);
the upstream answers serve.py's reply, whole or streamed. Paths, interleaved request by request:

  pass      the chat without a campaign marker: passed through
  turn      the chat with its marker: a campaign's turn (the engine's work), whole
  stream    the same turn streamed
  health    GET /healthz: the floor of a request through the app and the client
  next      a growing chat, as a chat app sends it: each turn the chat so far, then the reply it got back and a
            new user message are added (from the 200-message chat again every GROWN turns)
  next-pass the same growing chat without its marker, passed through

`turn` sends one request again and again, so what a turn keeps for the next (the reminder of the state it starts
from, the history's memos) is found whole; `next` is a new turn each time, as a player's is. Printed: each path's
median CPU a request, and the engine's own work (turn - pass, next - next-pass). `--profile FILE` runs
`--profile-runs` campaign turns (or `--profile-path pass`) under cProfile in thread time; `--against REF` runs
the same figures with another commit's code in alternate child processes (benchmarks/_against.py).
`--rss` prints this process's resident set after the warm-up (the app as `tagengine serve` holds it, with the
client beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from _chat import REPLIES, REPLY, history, new_data


def upstream() -> httpx.MockTransport:
    """The fake model: serve.py's reply, and to a growing chat's turn the two replies in turn (one spends, the
    other restores), so each of its turns changes the state as a player's does."""
    base = {"id": "bench", "created": 1, "model": "gpt-4o"}
    wholes = [json.dumps({**base, "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode()
        for text in REPLIES]
    whole = wholes[0]  # REPLY

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        doc = {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                        "finish_reason": finish}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    streamed = b"".join([chunk({"role": "assistant", "content": REPLY[:40]}),
                         *(chunk({"content": REPLY[i:i + 48]}) for i in range(40, len(REPLY), 48)),
                         chunk({}, "stop"), b"data: [DONE]\n\n"])

    def answer(request: httpx.Request) -> httpx.Response:
        if b'"stream":true' in request.content.replace(b" ", b""):
            return httpx.Response(200, stream=httpx.ByteStream(streamed), headers={"content-type": "text/event-stream"})
        grown = GROWN_TURN.findall(request.content[-8192:])  # its last messages: the user's, the reminder
        doc = wholes[int(grown[-1]) % 2] if grown else whole
        return httpx.Response(200, stream=httpx.ByteStream(doc), headers={"content-type": "application/json",
                                                                          "content-length": str(len(doc))})

    return httpx.MockTransport(answer)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Driver:
    """One app in this process, its campaign `bench` made in a new data folder, and the requests of each path."""

    def __init__(self, data: Path) -> None:
        from tagengine._internal.server.app import Options, make_app

        new_data(data.parent, data.name)
        self.app = make_app(Options(upstream="http://upstream.test/v1", data=data, context=200000,
                                    transport=upstream()))
        self.chat = history(100)
        self.bodies = {p: json.dumps(b).encode() for p, b in (
            ("turn", {"model": "gpt-4o", "messages": self.chat}),
            ("stream", {"model": "gpt-4o", "messages": self.chat, "stream": True}),
            ("pass", {"model": "gpt-4o", "messages": unmarked(self.chat)}))}
        self.grown, self.turns = self.chat, 0  # the growing chat (`next`) and its turns since it started again

    async def one(self, c: httpx.AsyncClient, path: str) -> float:
        if path == "next":
            if self.turns == GROWN:
                self.grown, self.turns = self.chat, 0
            self.bodies["next"] = json.dumps({"model": "gpt-4o", "messages": self.grown}).encode()
            self.bodies["next-pass"] = json.dumps({"model": "gpt-4o", "messages": unmarked(self.grown)}).encode()
        t = time.thread_time()
        if path == "health":
            r = await c.get("/healthz")
        else:
            r = await c.post("/v1/chat/completions", content=self.bodies[path],
                             headers={"content-type": "application/json"})
            if path == "stream":
                await r.aread()
        took = time.thread_time() - t
        if r.status_code != 200 or "x-tagengine-history" in r.headers:
            raise SystemExit(f"{path}: {r.status_code} {r.headers} {r.text[:300]}")
        if path == "next":  # the reply as the chat app keeps it, and the player's next message
            self.turns += 1
            self.grown = [*self.grown, {"role": "assistant", "content": r.json()["choices"][0]["message"]["content"]},
                          {"role": "user", "content": f"Next {self.turns}: and then?"}]
        return took


GROWN = 40  # turns a growing chat takes before it starts again from the 200-message chat
GROWN_TURN = re.compile(rb"Next (\d+): and then\?")  # a growing chat's user message, numbered


def unmarked(chat: list[dict[str, str]]) -> list[dict[str, str]]:
    """The chat without its campaign marker: passed through."""
    return [{"role": "system", "content": "You are the GM of a heist."}, *chat[1:]]


@asynccontextmanager
async def driven() -> AsyncIterator[tuple[Driver, httpx.AsyncClient]]:
    """A `Driver` on a new data folder, its app started, and an in-process client of it."""
    with tempfile.TemporaryDirectory(prefix="bench-inproc-") as tmp:
        d = Driver(Path(tmp) / "data")
        async with d.app.router.lifespan_context(d.app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=d.app), base_url="http://127.0.0.1") as c:
            yield d, c


async def measure(runs: int, rounds: int) -> dict[str, float]:
    async with driven() as (d, c):
        # the one chat sent again, and the growing chat: each group's paths interleaved, the groups one after
        # the other, so neither chat's work lands in the other's caches request by request (two chats at once
        # are another figure: each turn then finds less of what it touches in the CPU's caches)
        groups = (("pass", "turn", "stream", "health"), ("next", "next-pass"))
        for _ in range(30):  # warm-up: the tokenizer, the replay, the caches
            for p in (p for g in groups for p in g):
                await d.one(c, p)
        seen: dict[str, list[float]] = {p: [] for g in groups for p in g}
        for _ in range(rounds):
            for paths in groups:
                got: dict[str, list[float]] = {p: [] for p in paths}
                for _ in range(runs):
                    for p in paths:
                        got[p].append(await d.one(c, p))
                for p in paths:
                    seen[p].append(statistics.median(got[p]))
        out = {p: statistics.median(v) for p, v in seen.items()}
        out["engine (turn - pass)"] = statistics.median(
            [t - q for t, q in zip(seen["turn"], seen["pass"], strict=True)])
        out["engine, a new turn (next - next-pass)"] = statistics.median(
            [t - q for t, q in zip(seen["next"], seen["next-pass"], strict=True)])
        out["rss MB"] = rss_mb() / 1e3  # printed by --figures as seconds: MB / 1000
        return out


async def profiled(path: str, runs: int, out: str) -> None:
    import cProfile

    async with driven() as (d, c):
        for _ in range(30):
            await d.one(c, path)
        pr = cProfile.Profile(time.thread_time)
        pr.enable()
        for _ in range(runs):
            await d.one(c, path)
        pr.disable()
        pr.dump_stats(out)
        print(f"{runs} requests of {path} profiled into {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=100, help="requests a path per round (default 100)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5); with --against: alternate rounds")
    p.add_argument("--against", metavar="REF", help="also measure the code of this git commit, side by side")
    p.add_argument("--profile", metavar="FILE", help="cProfile (thread time) of --profile-runs requests to FILE")
    p.add_argument("--profile-path", default="turn", choices=("turn", "stream", "pass"))
    p.add_argument("--profile-runs", type=int, default=500)
    p.add_argument("--figures", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.profile:
        asyncio.run(profiled(args.profile_path, args.profile_runs, args.profile))
    elif args.figures:
        print(json.dumps(asyncio.run(measure(args.runs, 1))))
    elif args.against:
        import _against
        with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
            _against.side_by_side(__file__, args.against, Path(tmp), args.rounds, ["--runs", str(args.runs)])
    else:
        print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; python {sys.version.split()[0]}")
        for name, value in asyncio.run(measure(args.runs, args.rounds)).items():
            print(f"  {name:24} {value * 1e3:8.3f}" + (" MB" if name == "rss MB" else " ms of CPU a request"))


if __name__ == "__main__":
    main()
