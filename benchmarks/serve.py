"""Serve benchmark (issue 12): what `tagengine serve` adds to a turn, measured against a fake upstream.

Three processes talk over real loopback sockets: this one (one httpx client for every request), the fake
upstream (a small OpenAI-compatible Starlette app under uvicorn, `--fake-upstream`) and `tagengine serve`
itself (`python -m tagengine serve`, so its memory can be read). Each figure is the same request sent
straight to the upstream and through the server, interleaved, in the same run: added = served - direct.

Targets (issue 12):
  (a) a non-streamed turn of a 200-message chat (100 replies), warm store: added p50 <= 2 ms, p99 <= 10 ms
  (b) the first streamed byte (of the body): added <= 2 ms
  (c) a cold store (a new data folder, so a new database): a chat of 200 replies replayed, added <= 60 ms
  (d) 32 concurrent chats for --soak-seconds (default 60): no error, flat memory (the server's RSS)
Target (issue 28):
  (e) the state of the chat on screen (POST /tagengine/api/state, the SillyTavern panel's request) for (a)'s
      200-message chat, warm store: p50 <= 5 ms; beside it, interleaved, the same server's /healthz (the floor:
      a request and its answer) and its edit API's read of a sheet at that chat (POST .../read/characters/WHO)
Target (issue 38):
  (f) `serve --grammar`: the turn's grammar added to the upstream body, warm (the state's characters seen before):
      p99 <= 1 ms; beside it the first (cold) build, and each grammar's size, for the samples and the 800-derived-value
      sheet of benchmarks/sheet.py. In this process, no socket: it is a function of the ruleset and the state.

What a request follows changes its time on this kind of machine: one sent right after a streamed answer
comes 0.2-0.45 ms later than one sent right after a whole answer, and a server that has just answered is
warm (SB-16). So every timed request, straight or through the server, follows an untimed request straight
to the upstream, of one kind (a whole answer, or a streamed one) by turns; (a) and (b) compare the server
with the direct request after the same kind, the larger of the two cases counting.

The machine may be shared: every figure is taken in several rounds and the median printed; the load
average is printed beside it, and so is the server's CPU time per request, which the load tilts less
than wall time. `--against REF` serves the same requests, interleaved, with the code of another commit
too (unpacked with `git archive`): a before/after that a change in the load cannot fake; `--httpx-transport`
serves them with this tree over httpx's own upstream transport too (`serve --upstream-transport httpx`). `--profile
FILE` runs the server under cProfile, timing its event loop's thread in CPU time (its figures are then not
the server's own: use it to find where time goes, not to judge a target). Linux: the RSS and CPU figures read /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _peers
from _against import bytecode_env, unpack
from _chat import REPLY, history, new_data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGETS = {"p50": 2.0, "p99": 10.0, "ttfb": 2.0, "cold": 60.0, "state": 5.0}  # milliseconds
HUGE = 64 * 1024 * 1024  # bytes of the fake upstream's huge answer (issue 26 item 2)
ENDLESS = 1024 * 1024 * 1024  # the most its endless stream sends (item 3): it ends when the client goes
STATE_PATH = "/tagengine/api/state"
ATTACKS = ("big message", "big history", "huge answer", "endless stream", "slow clients")


# -- the fake upstream (its own process) ---------------------------------------------------------------

def fake_upstream() -> None:
    """Serve the fake upstream on 127.0.0.1, port 0; print the port on stdout."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    base = {"id": "bench", "created": 1, "model": "gpt-4o"}
    whole = json.dumps({**base, "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]}).encode()

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        doc = {**base, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    async def chat(request: Request) -> Response:
        body = json.loads(await request.body())
        last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")  # the reminder follows
        if last in ("TURN:huge", "TURN:endless"):  # the attacks (`attacks` below)
            return StreamingResponse(huge() if last == "TURN:huge" else endless(),
                                     media_type="application/json" if last == "TURN:huge" else "text/event-stream")
        if body.get("stream") is not True:
            return Response(whole, media_type="application/json")

        async def pieces() -> AsyncIterator[bytes]:
            yield chunk({"role": "assistant", "content": REPLY[:40]})  # the first byte: at once
            for i in range(40, len(REPLY), 48):
                await asyncio.sleep(0.001)  # a model's next tokens come a little later
                yield chunk({"content": REPLY[i:i + 48]})
            yield chunk({}, "stop")
            yield b"data: [DONE]\n\n"

        return StreamingResponse(pieces(), media_type="text/event-stream")

    async def huge() -> AsyncIterator[bytes]:
        """A whole answer of HUGE bytes, made as it is sent."""
        head = b'{"id":"bench","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,' \
               b'"message":{"role":"assistant","content":"'
        yield head
        piece = b"All quiet. " * 95325  # about 1 MiB
        for _ in range(HUGE // len(piece)):
            yield piece
            await asyncio.sleep(0)
        yield b'"},"finish_reason":"stop"}]}'

    async def endless() -> AsyncIterator[bytes]:
        """Content events until the client goes (at most ENDLESS bytes: a bound)."""
        events = chunk({"content": "On and on. " * 93}) * 64
        for _ in range(ENDLESS // len(events)):
            yield events
            await asyncio.sleep(0)

    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on the accepted sockets as it does for uvicorn's own
    # (with proto 0 it does not, and each answer waits 40 ms for a delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


# -- processes ---------------------------------------------------------------------------------------

class Proc:
    """A child process; stopped with SIGINT (then killed) on exit."""

    def __init__(self, argv: list[str], log: Path, pipe: bool = False, cwd: Path = ROOT,
                 env: dict[str, str] | None = None, nofile: int | None = None) -> None:
        self.log = log
        self.out = log.open("wb")  # the server's log goes to the file, never to a pipe left full

        def limit(files: int = nofile or 0) -> None:  # the child's limit on open files: the attacks run under 256
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE if pipe else self.out, stderr=self.out, cwd=cwd,
                                  env=env, preexec_fn=limit if nofile else None)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self.out.close()

    def rss_kb(self) -> int | None:
        """The resident set of the process (Linux: /proc); None elsewhere."""
        try:
            for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return None

    def cpu_seconds(self) -> float | None:
        """User and system CPU time the process has used, to the nanosecond by its CPU clock
        (`_peers.process_cpu_seconds`), else in /proc's 10 ms steps (Linux); None elsewhere."""
        exact = _peers.process_cpu_seconds(self.p.pid)
        if exact is not None:
            return exact
        try:
            fields = Path(f"/proc/{self.p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Code:
    """A version of tagengine to serve with: this tree, or `--against REF` unpacked with `git archive`; `args`:
    more `serve` options (`--httpx-transport`: this tree with `--upstream-transport httpx`)."""

    label: str
    root: Path
    args: tuple[str, ...] = ()


@dataclass
class Server:
    code: Code
    proc: Proc
    url: str


def code_at(ref: str, tmp: Path) -> Code:
    return Code(ref, unpack(ref, tmp))


def start_listener(argv: list[str], log: Path, what: str) -> tuple[Proc, str]:
    """A child that prints the loopback port it listens on as its first line of output; its URL."""
    proc = Proc(argv, log, pipe=True)
    assert proc.p.stdout is not None
    port = proc.p.stdout.readline().strip()
    if not port:
        proc.stop()
        raise SystemExit(f"{what} did not start: {proc.log.read_text()}")
    return proc, f"http://127.0.0.1:{int(port)}"


def start_upstream(tmp: Path) -> tuple[Proc, str]:
    return start_listener([sys.executable, __file__, "--fake-upstream"], tmp / "upstream.log", "the fake upstream")


def start_serve(tmp: Path, code: Code, data: Path, upstream: str, profile: str | None,
                nofile: int | None = None) -> Server:
    # `python -m tagengine` ends with os._exit (decision P-7), which cProfile's own runner does not survive
    # the event loop's thread, in CPU time (`thread_time`): on a shared machine, wall time would charge a
    # function for the moments the process waited for a core
    prof = ["-c", "import cProfile, sys, time\nfrom tagengine._internal.cli import run\n"
            "pr = cProfile.Profile(time.thread_time)\npr.enable()\ntry:\n    run(sys.argv[1:])\nfinally:\n"
            f"    pr.disable()\n    pr.dump_stats({profile!r})"] if profile else ["-m", "tagengine"]
    argv = [sys.executable, *prof, "serve", "--upstream", f"{upstream}/v1", "--port", "0",
            "--data", str(data), "--context", "200000", *code.args]
    # ahead of the installed (editable) package; bytecode written (an unpacked tree is compiled by `unpack`), so
    # neither tree's server is charged a compile as it starts: 0.6 s, and 2 MB of RSS or more (PF-66)
    env = bytecode_env(PYTHONPATH=str(code.root))
    proc = Proc(argv, tmp / f"serve-{data.name}.log", cwd=code.root, env=env, nofile=nofile)
    for _ in range(600):  # bounded: 60 s
        text = proc.log.read_text(errors="replace")
        hit = re.search(r"running on http://127\.0\.0\.1:(\d+)", text)
        if hit:
            return Server(code, proc, f"http://127.0.0.1:{hit.group(1)}")
        if proc.p.poll() is not None:
            break
        time.sleep(0.1)
    proc.stop()
    raise SystemExit(f"tagengine serve did not start:\n{proc.log.read_text(errors='replace')}")


# -- chats ---------------------------------------------------------------------------------------------

def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def every(by_kind: dict[str, list[float]]) -> list[float]:
    return [x for xs in by_kind.values() for x in xs]


def ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


async def post(c: Any, url: str, body: dict[str, Any]) -> float:
    t = time.perf_counter()
    r = await c.post(f"{url}/v1/chat/completions", json=body)
    took = time.perf_counter() - t
    if r.status_code != 200 or "x-tagengine-history" in r.headers:
        raise SystemExit(f"{url}: {r.status_code} {r.headers} {r.text[:500]}")
    return took


async def first_byte(c: Any, url: str, body: dict[str, Any]) -> float:
    t = time.perf_counter()
    first = 0.0
    async with c.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}) as r:
        async for _ in r.aiter_raw():
            first = first or time.perf_counter() - t
    if r.status_code != 200:
        raise SystemExit(f"{url}: {r.status_code}")
    return first


def _primed(c: Any, up: str, body: dict[str, Any], after: str) -> Callable[..., Awaitable[float]]:
    """A timed request that follows an untimed one straight to the upstream: a whole answer, or a stream."""
    async def primed(request: Callable[..., Awaitable[float]], url: str, doc: dict[str, Any]) -> float:
        await (post(c, up, body) if after == "whole" else first_byte(c, up, body))
        return await request(c, url, doc)
    return primed


async def cpu_per_request(c: Any, s: Server, body: dict[str, Any], runs: int, stream: bool) -> float:
    """The server's CPU time per request, in ms: steadier than wall time on a shared machine."""
    before = s.proc.cpu_seconds()
    for _ in range(runs):
        await (first_byte(c, s.url, body) if stream else post(c, s.url, body))
    after = s.proc.cpu_seconds()
    return math.nan if before is None or after is None else (after - before) / runs * 1e3


# -- the measurements ----------------------------------------------------------------------------------

async def warm(c: Any, up: str, servers: list[Server], rounds: int, runs: int) -> dict[str, dict[str, float]]:
    """(a) and (b): `rounds` rounds of `runs` interleaved requests; the medians of the rounds' figures, per
    version of the code."""
    body = {"model": "gpt-4o", "messages": history(100)}
    # the floor: the same chat through the server with no campaign (passed through byte for byte)
    plain = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are the GM of a heist."},
                                             *body["messages"][1:]]}
    print(f"(a, b) a 200-message chat (100 replies, {len(json.dumps(body)) // 1024} KiB) and a new turn; "
          f"{rounds} rounds of {runs} requests each way; {load()}")
    for _ in range(10):
        for s in servers:
            await post(c, up, body), await post(c, s.url, body), await post(c, s.url, plain)
            await first_byte(c, up, body), await first_byte(c, s.url, body)
    figures: dict[str, dict[str, list[float]]] = {s.code.label: {} for s in servers}
    for n in range(rounds):
        # every timed request follows an untimed direct request of one kind, a whole answer or a streamed one,
        # by turns (SB-16): what a request follows changes its time, so the server's and the direct one's follow
        # the same thing, and no request follows the server's own (warm, or its work after an answer running)
        direct: dict[str, list[float]] = {"whole": [], "stream": []}
        direct_first: dict[str, list[float]] = {"whole": [], "stream": []}
        got = {s.code.label: {"served": {"whole": [], "stream": []}, "first": {"whole": [], "stream": []},
                              "passed": {"whole": [], "stream": []}} for s in servers}
        for i in range(runs):
            after = ("whole", "stream")[i % 2]
            primed = _primed(c, up, body, after)

            turn: list[Server | None] = [None, *servers]  # and each first in turn
            turn = turn[i % len(turn):] + turn[:i % len(turn)]
            for s in turn:
                took = await primed(post, up if s is None else s.url, body)
                (direct if s is None else got[s.code.label]["served"])[after].append(took)
            for s in servers:
                got[s.code.label]["passed"][after].append(await primed(post, s.url, plain))
            for s in turn:
                took = await primed(first_byte, up if s is None else s.url, body)
                (direct_first if s is None else got[s.code.label]["first"])[after].append(took)
        for s in servers:
            g, f = got[s.code.label], figures[s.code.label]
            served = every(g["served"])
            # added: the served request against the direct one that followed the same kind of request, and the
            # larger of the two kinds counts
            p50 = {k: ms(g["served"][k]) - ms(direct[k]) for k in ("whole", "stream")}
            ttfb = {k: ms(g["first"][k]) - ms(direct_first[k]) for k in ("whole", "stream")}
            row = {"p50": max(p50.values()), "p50_whole": p50["whole"], "p50_stream": p50["stream"],
                   "p99": (pct(served, 0.99) - pct(every(direct), 0.99)) * 1e3,
                   "p99_all": (pct(served, 0.99) - statistics.median(every(direct))) * 1e3,
                   "ttfb": max(ttfb.values()), "ttfb_whole": ttfb["whole"], "ttfb_stream": ttfb["stream"],
                   "hop": max(ms(g["passed"][k]) - ms(direct[k]) for k in ("whole", "stream")),
                   "direct": ms(every(direct)), "direct_p99": pct(every(direct), 0.99) * 1e3,
                   "direct_ttfb": ms(every(direct_first))}
            for k, v in row.items():
                f.setdefault(k, []).append(v)
        for s in servers:  # CPU blocks, one version after the other
            f = figures[s.code.label]
            f.setdefault("cpu", []).append(await cpu_per_request(c, s, body, runs, False))
            f.setdefault("cpu_hop", []).append(await cpu_per_request(c, s, plain, runs, False))
            f.setdefault("cpu_stream", []).append(await cpu_per_request(c, s, body, runs, True))
        print(f"  round {n + 1}: direct p50 {ms(every(direct)):.2f} p99 {pct(every(direct), 0.99) * 1e3:.2f} first "
              f"byte {ms(every(direct_first)):.2f} ms; {load()}")
        for s in servers:
            f = figures[s.code.label]
            print(f"    {s.code.label:>10}: added p50 {f['p50_whole'][-1]:.2f} / {f['p50_stream'][-1]:.2f} p99 "
                  f"{f['p99'][-1]:.2f} first byte {f['ttfb_whole'][-1]:.2f} / {f['ttfb_stream'][-1]:.2f} (after a "
                  f"whole answer / a streamed one) | passed through {f['hop'][-1]:.2f} | server CPU per request: "
                  f"served {f['cpu'][-1]:.2f} streamed {f['cpu_stream'][-1]:.2f} passed through "
                  f"{f['cpu_hop'][-1]:.2f} ms")
    return {label: {k: statistics.median(v) for k, v in f.items()} for label, f in figures.items()}


async def chat_state(c: Any, servers: list[Server], rounds: int, runs: int) -> dict[str, dict[str, float]]:
    """(e): the panel's state request for (a)'s chat (its turns kept by (a) or the first request: a warm store),
    interleaved with the floor (/healthz) and the edit API's read of a sheet at the same chat; per version of the
    code, the medians of the rounds' p50 and p99, and the server's CPU per state request."""
    msgs = history(100)[:-1]  # the chat on screen: the last reply received, no new turn
    state = {"messages": msgs}
    print(f"(e) the state of a 200-message chat (100 replies, {len(json.dumps(state)) // 1024} KiB); {rounds} rounds "
          f"of {runs} requests each; {load()}")

    async def timed(url: str, path: str, body: dict[str, Any] | None) -> float:
        t = time.perf_counter()
        r = await (c.get(f"{url}{path}") if body is None else c.post(f"{url}{path}", json=body))
        took = time.perf_counter() - t
        if r.status_code != 200 or (body is state and r.json().get("turn") != 100):
            raise SystemExit(f"{url}{path}: {r.status_code} {r.text[:300]}")
        return took

    read = "/tagengine/api/c/bench/read/characters/Cutter"
    kinds = {"state": (STATE_PATH, state), "floor": ("/healthz", None), "read": (read, {"messages": msgs})}
    for s in servers:
        for path, body in kinds.values():
            for _ in range(20):
                await timed(s.url, path, body)
    figures: dict[str, dict[str, list[float]]] = {s.code.label: {} for s in servers}
    for n in range(rounds):
        got: dict[str, dict[str, list[float]]] = {s.code.label: {k: [] for k in kinds} for s in servers}
        for i in range(runs):
            order = list(kinds.items())
            order = order[i % len(order):] + order[:i % len(order)]
            for s in servers[i % len(servers):] + servers[:i % len(servers)]:
                for k, (path, body) in order:
                    got[s.code.label][k].append(await timed(s.url, path, body))
        for s in servers:
            g, f = got[s.code.label], figures[s.code.label]
            before = s.proc.cpu_seconds()
            for _ in range(runs):
                await timed(s.url, STATE_PATH, state)
            after = s.proc.cpu_seconds()
            row = {"p50": ms(g["state"]), "p99": pct(g["state"], 0.99) * 1e3, "floor": ms(g["floor"]),
                   "read": ms(g["read"]), "cpu": math.nan if before is None or after is None
                   else (after - before) / runs * 1e3}
            for k, v in row.items():
                f.setdefault(k, []).append(v)
            print(f"  round {n + 1} {s.code.label:>10}: state p50 {row['p50']:.2f} p99 {row['p99']:.2f} | /healthz "
                  f"p50 {row['floor']:.2f} | a sheet read at the chat p50 {row['read']:.2f} | server CPU per state "
                  f"request {row['cpu']:.2f} ms; {load()}")
    return {label: {k: statistics.median(v) for k, v in f.items()} for label, f in figures.items()}


async def cold(c: Any, tmp: Path, up: str, codes: list[Code], times: int,
               profile: str | None) -> dict[str, dict[str, float]]:
    """(c): a new data folder and a new server each time, warmed by a short other chat (so the tokenizer,
    the ruleset and the templates are loaded); then the 200-reply chat, replayed from the start."""
    body = {"model": "gpt-4o", "messages": history(200)}
    hello = 'Hello. [clock: name="Rain" size="4"]'
    other = {"model": "gpt-4o", "messages": [body["messages"][0], {"role": "user", "content": "Hello."},
                                             {"role": "assistant", "content": hello},
                                             {"role": "user", "content": "Go on."}]}
    print(f"(c) a 400-message chat (200 replies, {len(json.dumps(body)) // 1024} KiB) to a new store, "
          f"{times} times; {load()}")
    added: dict[str, list[float]] = {code.label: [] for code in codes}
    again: dict[str, list[float]] = {code.label: [] for code in codes}
    for n in range(times):
        for code in codes[n % len(codes):] + codes[:n % len(codes)]:
            data = new_data(tmp, f"cold{n}-{len(added[code.label])}-{abs(hash(code.label))}")
            s = start_serve(tmp, code, data, up, f"{profile}.cold{n}" if profile else None)
            try:
                for _ in range(3):
                    await post(c, s.url, other)
                direct = statistics.median([await post(c, up, body) for _ in range(5)])
                took = await post(c, s.url, body)
                warm_again = await post(c, s.url, body)
                added[code.label].append((took - direct) * 1e3)
                again[code.label].append((warm_again - direct) * 1e3)
                print(f"  run {n + 1} {code.label:>10}: direct {direct * 1e3:.2f} ms, served cold {took * 1e3:.1f} ms, "
                      f"added {added[code.label][-1]:.1f} ms (the same request again, warm: added "
                      f"{again[code.label][-1]:.2f} ms); {load()}")
            finally:
                s.proc.stop()
                shutil.rmtree(data, ignore_errors=True)
    return {label: {"cold": statistics.median(added[label]), "cold_again": statistics.median(again[label])}
            for label in added}


async def soak(c: Any, server: Server, seconds: float, chats: int) -> dict[str, Any]:
    """(d): `chats` chats at once, each growing turn by turn (every third turn streamed, every fifth a
    regenerate) up to 200 messages, then a new one, for `seconds`; the server's RSS sampled every 0.5 s."""
    print(f"(d) {chats} concurrent chats for {seconds:g} s; {load()}")
    url = server.url
    stop = time.monotonic() + seconds
    errors: list[str] = []
    turns = [0]
    samples: list[tuple[float, int]] = []

    async def one(k: int) -> None:
        rng = random.Random(k)
        msgs: list[dict[str, str]] = []
        while time.monotonic() < stop:
            if not msgs or len(msgs) > 200:  # a new chat after 200 messages: requests stay the size of (a)'s
                msgs = [{"role": "system", "content": f'Chat {k}.{turns[0]}. [tagengine: campaign="bench"]'}]
            if len(msgs) > 3 and rng.random() < 0.2:
                msgs = msgs[:-1]  # regenerate: the last reply again, from the state before it
            else:
                msgs.append({"role": "user", "content": f"Chat {k}, turn {len(msgs)}: what now?"})
            body = {"model": "gpt-4o", "messages": msgs, "stream": rng.random() < 0.33}
            try:
                if body["stream"]:
                    text, done = [], False
                    async with c.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
                        async for line in r.aiter_lines():
                            if line == "data: [DONE]":
                                done = True
                            elif line.startswith("data: "):
                                doc = json.loads(line[6:])
                                if "error" in doc:
                                    raise RuntimeError(f"error event: {doc['error']}")
                                text.append(doc["choices"][0]["delta"].get("content") or "")
                    if r.status_code != 200 or not done:
                        raise RuntimeError(f"status {r.status_code}, [DONE] {done}")
                    reply = "".join(text)
                else:
                    r = await c.post(f"{url}/v1/chat/completions", json=body)
                    if r.status_code != 200:
                        raise RuntimeError(f"status {r.status_code}: {r.text[:200]}")
                    reply = r.json()["choices"][0]["message"]["content"]
                if "x-tagengine-history" in r.headers or 'result="' not in reply:
                    raise RuntimeError(f"chat {k}: a reply without receipts, or an incomplete history")
            except Exception as e:  # counted and shown, the soak goes on
                errors.append(f"chat {k}: {type(e).__name__}: {e}")
                await asyncio.sleep(0.05)
                continue
            msgs.append({"role": "assistant", "content": reply})
            turns[0] += 1

    async def sampler() -> None:
        t0 = time.monotonic()
        while time.monotonic() < stop:
            rss = server.proc.rss_kb()
            if rss is not None:
                samples.append((time.monotonic() - t0, rss))
            await asyncio.sleep(0.5)

    await asyncio.gather(sampler(), *(one(k) for k in range(chats)))
    rss = [s[1] for s in samples] or [0]
    quarter = [rss[min(len(rss) - 1, i * len(rss) // 4)] for i in range(4)] + [rss[-1]]
    return {"turns": turns[0], "errors": errors, "start": rss[0], "end": rss[-1], "peak": max(rss),
            "quarters": quarter}


# -- under attack (issue 26) ------------------------------------------------------------------------------

SMALL_TURN = {"model": "gpt-4o", "messages": [{"role": "system", "content": 'Probe. [tagengine: campaign="bench"]'},
                                              {"role": "user", "content": "A small turn: what now?"}]}


LETTERS = "".join(random.Random(26).choices("abcdefghijklmnopqrstuvwxyz", k=4 * 1024 * 1024))


def attack_body(attack: str, k: int) -> bytes:
    """The `k`-th request of an attack (the issue's reproductions, within the server's limits where it has them),
    each new to the server: a text it has counted, or a history it has replayed, would cost it nothing again."""
    system = {"role": "system", "content": 'GM. [tagengine: campaign="bench"]'}
    if attack == "big message":  # three messages of a million letters and no space: the costliest to count
        text = [LETTERS[k * 7 + n:][:1024 * 1024 - 10] for n in range(3)]
        doc = {"model": "gpt-4o", "messages": [system, *({"role": "user", "content": t} for t in text),
                                               {"role": "user", "content": "And then?"}]}
    elif attack == "big history":  # eight replies of a megabyte of tags each, replayed
        tags = '[clock: name="Alarm" tick="1"] ' * ((1024 * 1024 - 100) // 31)
        msgs = [system]
        for n in range(8):
            msgs += [{"role": "user", "content": f"go {n}"}, {"role": "assistant", "content": f"{k}.{n} {tags}"}]
        doc = {"model": "gpt-4o", "messages": [*msgs, {"role": "user", "content": "And then?"}]}
    else:
        turn = "TURN:huge" if attack == "huge answer" else "TURN:endless"
        doc = {"model": "gpt-4o", "stream": attack == "endless stream",
               "messages": [system, {"role": "user", "content": turn}]}
    return json.dumps(doc).encode()


async def attack_once(c: Any, s: Server, attack: str, body: bytes, until: float) -> str:
    """One attack, until it is answered (the endless stream: until it ends, or `until`); what it got."""
    if attack == "slow clients":  # 300 connections that send half a request line, held until `until`
        port = int(s.url.rsplit(":", 1)[1])
        held = []
        try:
            for _ in range(300):
                _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
                writer.write(b"GET /healthz HTTP/1.1\r\n")
                held.append(writer)
            await asyncio.sleep(max(0.0, until - time.monotonic()))
        except (OSError, TimeoutError) as e:
            return f"{len(held)} opened, then {type(e).__name__}"
        finally:
            for w in held:
                w.close()
        return "300 held"
    headers = {"content-type": "application/json"}
    try:
        async with c.stream("POST", f"{s.url}/v1/chat/completions", content=body, headers=headers) as r:
            last = ""
            async for line in r.aiter_lines():
                last = line or last
                if attack == "endless stream" and time.monotonic() > until:
                    return f"{r.status_code}, still streaming when cut by the client"
        code = re.search(r'"code": ?"(\w+)"', last)
        return f"{r.status_code}" + (f" {code.group(1)}" if code else "")
    except Exception as e:  # counted and shown: the attack goes on
        return f"{type(e).__name__}"


async def under_attack(s: Server, attack: str, seconds: float) -> dict[str, Any]:
    """`attack`, again and again for `seconds` (at least once), while /healthz and a small chat turn are
    asked by turns, each on a new connection (as a new client's): their times, and what the attacks got."""
    import httpx

    times: dict[str, list[float]] = {"healthz": [], "turn": []}
    errors: list[str] = []
    got: list[str] = []
    done = asyncio.Event()
    rss = [s.proc.rss_kb() or 0]
    limits = httpx.Limits(max_keepalive_connections=0)  # a new connection per probe: a new client, as a chat app's
    async with httpx.AsyncClient(timeout=60, limits=limits) as probe, httpx.AsyncClient(timeout=300) as c:

        async def probes() -> None:
            while not done.is_set():
                for what in ("healthz", "turn"):
                    t = time.perf_counter()
                    try:
                        r = await (probe.get(f"{s.url}/healthz") if what == "healthz" else
                                   probe.post(f"{s.url}/v1/chat/completions", json=SMALL_TURN))
                        if r.status_code != 200:
                            errors.append(f"{what} {r.status_code}")
                    except Exception as e:
                        errors.append(f"{what} {type(e).__name__}")
                    times[what].append(time.perf_counter() - t)
                    rss.append(s.proc.rss_kb() or 0)

        async def attacks() -> None:
            start = time.monotonic()
            while not got or time.monotonic() - start < seconds:
                body = attack_body(attack, len(got)) if attack != "slow clients" else b""
                got.append(await attack_once(c, s, attack, body, start + seconds))
            done.set()

        await asyncio.gather(probes(), attacks())
    return {"healthz": times["healthz"], "turn": times["turn"], "errors": errors, "got": got,
            "rss": (max(rss) - rss[0]) / 1024}


async def attacks(tmp: Path, up: str, codes: list[Code], seconds: float) -> dict[str, dict[str, dict[str, Any]]]:
    """Each attack on a new server per version of the code, limited to 256 open files (the issue's): the
    probes' times under each."""
    import httpx

    print(f"under attack: each attack for {seconds:g} s (at least once) while /healthz and a small "
          f"turn are asked by turns; servers limited to 256 open files; {load()}")
    out: dict[str, dict[str, dict[str, Any]]] = {code.label: {} for code in codes}
    for code in codes:
        s = start_serve(tmp, code, new_data(tmp, f"attack-{abs(hash(code.label))}"), up, None, nofile=256)
        try:
            async with httpx.AsyncClient(timeout=60) as c:
                await c.post(f"{s.url}/v1/chat/completions", json=SMALL_TURN)  # warm
            for attack in ATTACKS:
                r = out[code.label][attack] = await under_attack(s, attack, seconds)
                h, t = r["healthz"], r["turn"]
                print(f"  {code.label:>10} {attack:>15}: /healthz p50 {ms(h):.1f} p99 {pct(h, 0.99) * 1e3:.1f} max "
                      f"{max(h) * 1e3:.0f} ms (n {len(h)}); small turn p50 {ms(t):.1f} p99 {pct(t, 0.99) * 1e3:.1f} "
                      f"max {max(t) * 1e3:.0f} ms (n {len(t)}); {len(r['errors'])} probe errors; RSS "
                      f"+{r['rss']:.0f} MB; the attack got: {', '.join(sorted(set(r['got'])))} ({len(r['got'])}x); "
                      f"{load()}")
        finally:
            s.proc.stop()
    return out


def attacked(r: dict[str, Any]) -> str:
    """A cell of the "under attack" summary."""
    errors = f" ({len(r['errors'])})" if r["errors"] else ""
    return f"{pct(r['healthz'], 0.99) * 1e3:.1f} / {pct(r['turn'], 0.99) * 1e3:.1f}{errors}"


def verdict(value: float, target: float) -> str:
    return f"{value:.2f} {'met' if value <= target else 'NOT met':>7}"


async def run(args: argparse.Namespace) -> None:
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="tagengine-bench-serve-"))
    procs: list[Proc] = []
    try:
        codes = [Code("this tree", ROOT)] + ([code_at(args.against, tmp)] if args.against else [])
        if args.httpx_transport:  # SV-6: the server's own transport against httpx's, side by side
            codes.append(Code("httpx's", ROOT, ("--upstream-transport", "httpx")))
        up_proc, up = start_upstream(tmp)
        procs.append(up_proc)
        async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64,
                                                                     max_keepalive_connections=64)) as c:
            servers = []
            for code in codes:
                servers.append(start_serve(tmp, code, new_data(tmp, f"warm{len(servers)}"), up, args.profile))
                procs.append(servers[-1].proc)
            print(f"{time.strftime('%H:%M:%S')} {load()}; python {sys.version.split()[0]}, {os.cpu_count()} cores")
            for s in servers:
                t = time.perf_counter()
                await post(c, s.url, {"model": "gpt-4o", "messages": history(100)})
                print(f"{s.code.label}: the first request to a new server (the tokenizer built, 100 replies "
                      f"replayed): {(time.perf_counter() - t) * 1e3:.0f} ms")
            w = await warm(c, up, servers, args.rounds, args.runs) if args.rounds else {}
            st = await chat_state(c, servers, args.state_rounds, args.runs) if args.state_rounds else {}
            cw = await cold(c, tmp, up, codes, args.cold_runs, args.profile) if args.cold_runs else {}
            s = await soak(c, servers[0], args.soak_seconds, 32) if args.soak_seconds else None
            if args.litellm:
                await beside_litellm(tmp, up, codes, args.peer_rounds, args.runs, procs)
        under = await attacks(tmp, up, codes, args.attack_seconds) if args.attack_seconds else {}
        print()
        print(f"results, in ms (the medians of the rounds); {load()}")
        print(f"  {'':58}" + "".join(f"{code.label:>18}" for code in codes))
        rows = [("(a) added p50, 200-message chat, warm store (<= 2)", "p50", TARGETS["p50"]),
                ("(a) added p99 (<= 10)", "p99", TARGETS["p99"]),
                ("(b) added time to the first streamed byte (<= 2)", "ttfb", TARGETS["ttfb"])]
        for title, key, target in rows if w else ():
            print(f"  {title:58}" + "".join(f"{verdict(w[code.label][key], target):>18}" for code in codes))
        if st:
            print(f"  {'(e) the state of the chat on screen p50, warm store (<= 5)':58}"
                  + "".join(f"{verdict(st[code.label]['p50'], TARGETS['state']):>18}" for code in codes))
            for title, key in (("    (e) p99", "p99"), ("    (e) /healthz p50 (the floor)", "floor"),
                               ("    (e) a sheet read at the same chat p50", "read"),
                               ("    (e) server CPU per state request", "cpu")):
                print(f"  {title:58}" + "".join(f"{st[code.label][key]:>18.2f}" for code in codes))
        if cw:
            print(f"  {'(c) added, cold store, 200 replies replayed (<= 60)':58}"
                  + "".join(f"{verdict(cw[code.label]['cold'], TARGETS['cold']):>18}" for code in codes))
        info = [("    (a) p50 after a whole answer / after a streamed one", "p50_whole", "p50_stream"),
                ("    (b) first byte after a whole answer / after a streamed one", "ttfb_whole", "ttfb_stream"),
                ("    served p99 - direct p50 (the upstream's own jitter too)", "p99_all"),
                ("    direct to the upstream: p50", "direct"), ("    direct: p99", "direct_p99"),
                ("    direct: first byte", "direct_ttfb"), ("    passed through, no campaign: added p50", "hop"),
                ("    server CPU per request: served", "cpu"), ("    server CPU: streamed", "cpu_stream"),
                ("    server CPU: passed through", "cpu_hop")]
        for title, *keys in info if w else ():
            print(f"  {title:58}" + "".join(f"{' / '.join(f'{w[code.label][k]:.2f}' for k in keys):>18}"
                                             for code in codes))
        if cw:
            print(f"  {'    (c) the same request again, warm: added':58}"
                  + "".join(f"{cw[code.label]['cold_again']:>18.2f}" for code in codes))
        if s is not None:
            mb = [q / 1024 for q in s["quarters"]]
            print(f"  (d) 32 chats x {args.soak_seconds:g} s ({codes[0].label}): {s['turns']} turns, "
                  f"{len(s['errors'])} errors (target 0); server RSS start {s['start'] / 1024:.1f} MB, end "
                  f"{s['end'] / 1024:.1f} MB, peak {s['peak'] / 1024:.1f} MB (by quarter: "
                  f"{', '.join(f'{x:.1f}' for x in mb)})")
            for e in s["errors"][:10]:
                print(f"      {e}")
        if under:
            print("  under attack (issue 26): /healthz p99 / a small turn's p99, in ms; probe errors in brackets")
            for attack in ATTACKS:
                print(f"    {attack:54}" + "".join(f"{attacked(under[code.label][attack]):>18}" for code in codes))
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


async def beside_litellm(tmp: Path, up: str, codes: list[Code], rounds: int, runs: int, procs: list[Proc]) -> None:
    """tagengine (pass-through and a campaign's turn) beside the LiteLLM proxy's pass-through (_peers.py), each
    tree on a new server of its own, warmed the same way, stopped after: the servers of the sections before have
    not served the same work (the soak, (d), runs on this tree's only, and leaves it holding 32 chats: PF-71), and
    the memory a server holds after the same warm-up is the one to compare."""
    import httpx

    servers: list[Server] = []
    try:
        for i, code in enumerate(codes):  # not profiled: the warm servers' profile is the one kept
            servers.append(start_serve(tmp, code, new_data(tmp, f"peers{i}"), up, None))
            procs.append(servers[-1].proc)  # stopped by `run` too, should this section fail
        async with httpx.AsyncClient(timeout=60, headers=_peers.HEADERS) as keyed:
            await _beside_litellm(keyed, tmp, up, servers, rounds, runs, procs)
    finally:
        for s in servers:
            s.proc.stop()


async def _beside_litellm(c: Any, tmp: Path, up: str, servers: list[Server], rounds: int, runs: int,
                          procs: list[Proc]) -> None:
    import httpx

    argv, env, url = _peers.litellm_argv(tmp, up)
    proxy = Proc(argv, tmp / "litellm.log", env=env)
    procs.append(proxy)
    for _ in range(1200):  # bounded: 120 s (its imports are slow)
        with contextlib.suppress(httpx.HTTPError):
            if (await c.get(f"{url}/health/liveliness")).status_code == 200:
                break
        if proxy.p.poll() is not None:
            raise SystemExit(f"the LiteLLM proxy did not start:\n{proxy.log.read_text(errors='replace')[-3000:]}")
        await asyncio.sleep(0.1)
    body = {"model": "gpt-4o", "messages": history(100)}
    plain = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are the GM of a heist."},
                                             *body["messages"][1:]]}
    paths = []
    for s in servers:
        name = "tagengine" if s is servers[0] else s.code.label
        paths += [_peers.Path_(f"{name}, pass-through", s.url, s.proc.p.pid, plain),
                  _peers.Path_(f"{name}, campaign", s.url, s.proc.p.pid, body)]
    paths.append(_peers.Path_("LiteLLM proxy, pass-through", url, proxy.p.pid, plain))
    for p in paths:  # warm-up: every path's first requests, and a throughput burst
        for _ in range(20):
            await post(c, p.url, p.body)
            await first_byte(c, p.url, p.body)
    print(f"(peers) {len(json.dumps(body)) // 1024} KiB chat, {rounds} rounds of {runs} requests a path, "
          f"{_peers.CONCURRENCY} clients for {_peers.THROUGHPUT_SECONDS:g} s of throughput; {load()}")
    await _peers.measure(c, up, paths, rounds, runs, post, first_byte, load, "LiteLLM proxy, pass-through")
    _peers.report(paths, "LiteLLM proxy, pass-through")


def seconds(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("from 0 (no soak) to 3600 seconds")
    return value


def count(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 10_000:
        raise argparse.ArgumentTypeError("from 0 to 10000")
    return value


def grammar_figures(rounds: int, runs: int) -> None:
    """(f): the grammar a turn sends with `serve --grammar`, got as `fit` gets it (turn/grammar_field.py), in
    thread CPU time per call; the samples' and the 800-derived-value sheet's, interleaved, median of rounds."""
    from sheet import ruleset as sheet_ruleset  # the 800-derived-value sheet

    from tagengine import GameState, Ruleset
    from tagengine._internal.commands import reply_grammar as grammars
    from tagengine._internal.samples import samples_dir
    from tagengine._internal.server.turn.grammar_field import own_constraint

    cases = {}
    for name in ("blades-like", "ember-roads", "fifth-like", "gravewatch"):
        rs = Ruleset.load(samples_dir() / "rulesets" / f"{name}.json")
        cases[name] = (rs, GameState.load(rs, samples_dir() / "states" / f"{name}.json"))
    big = sheet_ruleset()
    cases["800 derived values"] = (big, GameState.new(big, ["Hero"]))
    print(f"(f) serve --grammar, the turn's grammar ({load()}; thread CPU per call, median of {rounds} rounds)")
    warm: dict[str, list[float]] = {k: [] for k in cases}
    for name, (rs, state) in cases.items():
        t = time.thread_time()
        text = grammars.reply_grammar(rs, state, "gbnf")  # built, and kept for the warm turns below
        cold = time.thread_time() - t
        print(f"  {name:20} GBNF {len(text):6} chars, {text.count(chr(10)):4} rules; llguidance "
              f"{len(grammars.grammar_of(rs, state).write('llguidance')):6} chars; first build {cold * 1e3:.2f} ms")
    for _ in range(rounds):
        for name, (rs, state) in cases.items():  # interleaved: the load tilts every case alike
            times = []
            for _ in range(runs):
                t = time.thread_time()  # what `with_grammar` does for a warm turn: the check, the kept text
                body: dict[str, Any] = {"model": "m"}
                if not own_constraint(body):
                    body["grammar"] = grammars.kept_grammar(rs, state, "gbnf")
                times.append(time.thread_time() - t)
                assert body["grammar"] is not None
            warm[name].append(pct(times, 99))
    for name, p99s in warm.items():
        got = statistics.median(p99s) * 1e3
        print(f"  {name:20} warm p99 {got * 1e3:.1f} us (target 1 ms: {'met' if got <= 1.0 else 'NOT met'})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--soak-seconds", type=seconds, default=60.0, help="(d)'s length, 0 to 3600 (default 60)")
    p.add_argument("--rounds", type=count, default=5, help="rounds of (a) and (b) (default 5; 0: none)")
    p.add_argument("--runs", type=count, default=200, help="requests each way per round (default 200)")
    p.add_argument("--state-rounds", type=count, default=5, help="rounds of (e) (default 5; 0: no (e))")
    p.add_argument("--cold-runs", type=count, default=5, help="new stores for (c) (default 5; 0: no (c))")
    p.add_argument("--attack-seconds", type=seconds, default=5.0,
                   help="how long each attack of the \"under attack\" section runs, 0 to 3600 (default 5; 0: none)")
    p.add_argument("--against", metavar="REF", help="also serve with the code at this git commit (git archive), "
                                                    "side by side: a before/after that the machine's load "
                                                    "cannot tilt")
    p.add_argument("--httpx-transport", action="store_true",
                   help="also serve this tree with `--upstream-transport httpx`, side by side (SV-6)")
    p.add_argument("--litellm", action="store_true",
                   help="also measure the LiteLLM proxy's pass-through on the same upstream, interleaved, with "
                        "the ratios (installed once into a venv in the cache folder: benchmarks/_peers.py)")
    p.add_argument("--peer-rounds", type=count, default=2, help="rounds of --litellm (default 2)")
    p.add_argument("--profile", metavar="FILE", help="run the server under cProfile, its stats to FILE")
    p.add_argument("--grammar-rounds", type=count, default=5, help="rounds of (f) (default 5; 0: no (f))")
    p.add_argument("--fake-upstream", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.fake_upstream:
        fake_upstream()
        return
    if args.grammar_rounds:
        grammar_figures(args.grammar_rounds, args.runs)
        if args.rounds + args.state_rounds < 1 and not args.litellm:
            return
    if (args.rounds + args.state_rounds < 1 and not args.litellm) or args.runs < 2:
        p.error("--rounds, --state-rounds or --litellm must be given, and --runs at least 2")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
