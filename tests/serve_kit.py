"""Issue 12 test kit: servers on loopback port 0 in threads, and a scripted OpenAI-compatible upstream.

The upstream answers the last user message `TURN:<name>` with `script[name]` (after an assistant prefill
that `script[name]` starts with: the rest of it), streamed in pieces split at
random points, and records each request's raw body. `mode` makes it fail: 500, hang (until the test
ends), garbage SSE, or a stream cut off before [DONE]; `hold` stops a stream after its first pieces.
`tokenize` (issue 15) adds a llama.cpp-, vLLM- or KoboldCpp-style tokenize endpoint that counts with
`toy_tokens` and records each text it was asked in `tokenized`.

Issue 26: `Served`, `tagengine serve` in a process of its own (its memory, its file descriptors, its log), and
`Misbehaving`, an upstream that answers too much or without end on request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tagengine._internal.server.memory.campaigns import Campaign, Campaigns, new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.runtime.connections import Guard
from tagengine._internal.server.turn.mid_reply import PROBE_USER


def read_head(sock: socket.socket) -> bytes | None:
    """What a raw loopback upstream reads first: the bytes up to the end of a request's head, and any that came
    after it; None when the peer closed before its head ended."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        if not got:
            return None
        data += got
    return data


class PromptServer(uvicorn.Server):
    """uvicorn's Server, stopped as soon as the test asks. uvicorn looks at `should_exit` every 0.1 s, then
    pauses 0.1 s before it waits, 0.1 s at a time, for the connections and tasks to end: 0.18 s a server, half
    the fast lane's time with some 300 servers in it (issue 25). Here `stop` wakes the main loop at once and the
    shutdown does what uvicorn's does (the same order, the same graceful timeout, the lifespan's shutdown) with
    5 ms steps instead."""

    STEP = 0.005

    async def main_loop(self) -> None:
        self.woken = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):  # the date header, and whether to exit, as uvicorn does
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), 0.1)

    def stop(self) -> None:
        """From the test's thread: exit now (before the main loop runs, `should_exit` alone is seen)."""
        self.should_exit = True
        if hasattr(self, "loop"):
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                self.loop.call_soon_threadsafe(self.woken.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()

        async def drained() -> None:
            while self.server_state.connections or self.server_state.tasks:
                await asyncio.sleep(self.STEP)
            for server in self.servers:
                await server.wait_closed()

        try:
            await asyncio.wait_for(drained(), timeout=self.config.timeout_graceful_shutdown)
        except TimeoutError:
            for t in self.server_state.tasks:
                t.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()


class Running:
    """An ASGI app served by uvicorn on 127.0.0.1, port 0, in a thread, over the HTTP protocol `tagengine
    serve` runs (a head and its body in one write, SB-16; slow clients timed, SEC-4); stopped on exit."""

    def __init__(self, app: Any, http: Any = None) -> None:
        http = http or Guard().protocol()  # as `tagengine serve`'s: slow clients timed, a head joined to its body
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=2, http=http)  # a hung upstream is cut off
        self.server = PromptServer(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Running:
        self.thread.start()
        for _ in range(2000):  # bounded: about 10 s
            if self.server.started:
                break
            self.thread.join(0.005)
        assert self.server.started, "the server did not start"
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


def chunk(text: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    d = dict(delta)
    if text is not None:
        d["content"] = text
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def toy_tokens(text: str) -> list[int]:
    """The scripted upstream's tokenizer: one token per two characters (far from any real vocabulary, so a
    count that equals it came from the upstream)."""
    return [ord(c) for c in text[::2]]


def sse(*docs: Any) -> bytes:
    """Server-sent events, one per doc (bytes go as they are: `b"[DONE]"`, or what is not JSON)."""
    return b"".join(b"data: " + (d if isinstance(d, bytes) else json.dumps(d).encode()) + b"\n\n" for d in docs)


@dataclass
class Fake:
    script: dict[str, str] = field(default_factory=dict)
    mode: str = "ok"  # ok | 500 | hang | garbage | cut
    hold: bool = False  # stream: stop after the first pieces until the client goes away
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # each request's headers, lower-cased names
    raw_answer: bytes | None = None  # answer this exactly (passthrough test)
    reasoning: bool = False
    cancelled: threading.Event = field(default_factory=threading.Event)
    seed: int = 0
    tokenize: str | None = None  # "llama.cpp" | "vllm" | "koboldcpp": a tokenize endpoint of that shape
    tokenized: list[str] = field(default_factory=list)
    # --settle-checks (issue 13): with a trailing assistant message (a prefill), "continue" answers the script
    # after the prefill's last check tag, "restart" answers the whole script anew, "reject" answers 400;
    # `{outcome}` in a script is the prefill's last check outcome ("unknown" without one). None: as before.
    after_check: str | None = None
    # the server's probe (CK-21, the user message PROBE_USER) is answered apart, per `after_check` (or with
    # `probe_status` when set), and recorded in `probes`, not in `bodies`
    probe_status: int | None = None
    probes: list[bytes] = field(default_factory=list)
    # a stream that waits, after its first pieces, until the test sets `gate` (at most 30 s); `paused` is set once
    # it waits there: the server's turn has opened and its reply is being written
    gate: threading.Event | None = None
    paused: threading.Event = field(default_factory=threading.Event)

    def app(self) -> Starlette:
        release = asyncio.Event()  # never set: a hung upstream waits until the server gives up

        async def models(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        async def chat(request: Request) -> Response:
            raw = await request.body()
            if PROBE_USER.encode() in raw:
                return self.probe(raw)
            self.bodies.append(raw)
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            if self.raw_answer is not None:
                return Response(self.raw_answer, media_type="application/json")
            if self.mode == "500":
                return JSONResponse({"error": {"message": "boom", "type": "server_error"}}, status_code=500)
            if self.mode == "hang":
                await release.wait()
            body = json.loads(raw)
            last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            text = self.script[last.removeprefix("TURN:")]
            if self.after_check is not None:
                text = self.after_prefill(body["messages"], text)
                if text is None:
                    return JSONResponse({"error": {"message": "the last message must be a user message",
                                                   "type": "invalid_request_error"}}, status_code=400)
            else:
                prefill = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "assistant" else ""
                if prefill and text.startswith(prefill):  # continue: the model goes on from the prefill
                    text = text[len(prefill):]
            if not body.get("stream"):
                return JSONResponse({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                  "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
            rng = random.Random(f"{self.seed}{text}")

            async def pieces() -> AsyncIterator[bytes]:
                try:
                    if self.reasoning:
                        yield sse(chunk(reasoning_content="thinking…"))
                    if self.mode == "garbage":
                        yield b"data: {not json\n\n"
                    i = 0
                    while i < len(text):
                        j = i + rng.randint(1, 7)
                        yield sse(chunk(text[i:j]))
                        i = j
                        if self.hold and i > 5:
                            await release.wait()
                        if self.gate is not None and i > 5 and not self.gate.is_set():
                            self.paused.set()
                            for _ in range(3000):
                                if self.gate.is_set():
                                    break
                                await asyncio.sleep(0.01)
                    if self.mode == "cut":
                        return
                    yield sse(chunk(finish="stop"))
                    yield sse({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                               "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2,
                                                        "total_tokens": 3}})
                    yield b"data: [DONE]\n\n"
                except BaseException:
                    self.cancelled.set()
                    raise

            return StreamingResponse(pieces(), media_type="text/event-stream")

        async def tokenize(request: Request) -> Response:
            body = await request.json()
            if self.tokenize == "llama.cpp":  # llama.cpp: no `content`, no tokens
                text = body.get("content", "")
                self.tokenized.append(text)
                return JSONResponse({"tokens": toy_tokens(text)})
            if not isinstance(body.get("prompt"), str):  # vLLM and KoboldCpp: a request of another shape
                return JSONResponse({"error": "prompt is required"}, status_code=400)
            self.tokenized.append(body["prompt"])
            ids = toy_tokens(body["prompt"])
            if self.tokenize == "vllm":
                return JSONResponse({"count": len(ids), "max_model_len": 32768, "tokens": ids})
            return JSONResponse({"value": len(ids), "ids": ids})

        routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
        if self.tokenize is not None:
            path = "/api/extra/tokencount" if self.tokenize == "koboldcpp" else "/tokenize"
            routes.append(Route(path, tokenize, methods=["POST"]))
        return Starlette(routes=routes)

    def probe(self, raw: bytes) -> Response:
        self.probes.append(raw)
        if self.probe_status is not None:
            return JSONResponse({"error": {"message": "boom", "type": "server_error"}}, status_code=self.probe_status)
        if self.after_check == "reject":
            return JSONResponse({"error": {"message": "the last message must be a user message",
                                           "type": "invalid_request_error"}}, status_code=400)
        text = "one two three four five six" if self.after_check == "restart" else " four five six"
        return JSONResponse({"id": "p1", "object": "chat.completion", "created": 1, "model": "m",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                          "finish_reason": "stop"}]})

    def after_prefill(self, messages: list[dict[str, Any]], text: str) -> str | None:
        prefill = messages[-1]["content"] if messages[-1]["role"] == "assistant" else None
        outcomes = re.findall(r'outcome="(\w+)"', prefill or "")
        if prefill is not None and self.after_check == "reject":
            return None
        if prefill is not None and self.after_check == "continue":
            ends = [m.end() for m in re.finditer(r"\[check:[^\]]*\]", text)]
            k = prefill.count("[check:")
            text = text[ends[k - 1]:] if 0 < k <= len(ends) else ""
        return text.replace("{outcome}", outcomes[-1] if outcomes else "unknown")


def heist_store(tmp_path: Path) -> Iterator[tuple[Store, Campaign]]:
    """A fixture's body: a store under tmp_path holding the blades-like campaign "heist" (Cutter, Lurk)."""
    from conftest import SAMPLES

    store = Store(tmp_path / "data")
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    yield store, Campaigns(store).get("heist")
    store.close()


class Served:
    """`tagengine serve` in a process of its own on 127.0.0.1, port 0, for what only a process shows: its file
    descriptors (`nofile`: its limit on open files, soft and hard), its memory, its log (standard error, read
    into `lines` as it comes, so the pipe never fills). Stopped on exit (SIGINT, then killed), bounded."""

    def __init__(self, data: Path, upstream: str, *args: str, nofile: int | None = None,
                 exe: tuple[str, ...] = (sys.executable, "-m", "tagengine"), cwd: Path | None = None) -> None:
        """`exe`: the command that is tagengine (an installed wheel's console script, tests/test_wheel.py)."""
        self.argv = [*exe, "serve", "--upstream", upstream, "--port", "0", "--data", str(data), *args]
        self.nofile = nofile
        self.cwd = cwd
        self.lines: list[str] = []
        self.url = ""

    def __enter__(self) -> Served:
        nofile = self.nofile

        def limit() -> None:  # in the child, before it runs the server
            if nofile is not None:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=limit if nofile else None,
                                     cwd=self.cwd)
        started = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                hit = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
                if hit:
                    self.url = hit.group(1)
                    started.set()
            started.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        started.wait(60)  # bounded: a server starts in a second or two
        if not self.url:
            self.__exit__()
            raise AssertionError(f"tagengine serve did not start: {self.log}")
        return self

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def rss_mb(self) -> float:
        """The server's resident memory (Linux: /proc), in MiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)


SMALL_REPLY = 'The door gives. [clock: name="Alarm" size="6"] Quiet now.'


@dataclass
class Misbehaving:
    """An upstream that answers the last user message `TURN:<how>` as `how` says, whole or streamed:
    `small` (SMALL_REPLY), `huge` (a whole answer of `huge` bytes, sent as it is made), `endless` (content
    events without end) and `thinking` (reasoning deltas without end, no content). What has no end ends when
    the client goes, when `stop` is set, or after `cap` bytes (a bound, so a test can never hang on it); `sent`
    counts the bytes each endless answer sent."""

    huge: int = 24 * 1024 * 1024
    cap: int = 512 * 1024 * 1024
    stop: threading.Event = field(default_factory=threading.Event)
    sent: list[int] = field(default_factory=list)

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            body = json.loads(await request.body())
            last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            how = last.removeprefix("TURN:")
            if how == "huge":
                return StreamingResponse(self.whole_of(self.huge), media_type="application/json")
            if how in ("endless", "thinking"):
                return StreamingResponse(self.endless(how == "thinking"), media_type="text/event-stream")
            if body.get("stream"):
                return Response(sse(chunk(SMALL_REPLY), chunk(finish="stop"), b"[DONE]"),
                                media_type="text/event-stream")
            return JSONResponse({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": SMALL_REPLY},
                                              "finish_reason": "stop"}]})

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    async def whole_of(self, size: int) -> AsyncIterator[bytes]:
        head = b'{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":' \
               b'{"role":"assistant","content":"'
        yield head
        piece = b"All quiet. " * 95325  # about 1 MiB
        left = size - len(head)
        while left > 0 and not self.stop.is_set():
            yield piece[:left]
            left -= len(piece)
            await asyncio.sleep(0)
        yield b'"},"finish_reason":"stop"}]}'

    async def endless(self, thinking: bool) -> AsyncIterator[bytes]:
        event = sse(chunk(reasoning_content="hmm " * 256) if thinking else chunk("On and on. " * 93))
        self.sent.append(0)
        while self.sent[-1] < self.cap and not self.stop.is_set():
            yield event * 64
            self.sent[-1] += 64 * len(event)
            await asyncio.sleep(0)
