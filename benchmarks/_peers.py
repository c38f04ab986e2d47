"""`benchmarks/serve.py --litellm`: tagengine beside the LiteLLM proxy, on the same fake upstream, in one run.

The peer is the LiteLLM proxy doing pass-through only (one model, `openai/gpt-4o` at the fake upstream), the
most common OpenAI-compatible middleware; it is installed once with pip into a virtual environment of its own
in a cache folder outside the repo (`${XDG_CACHE_HOME:-~/.cache}/tagengine/litellm-VERSION`, as `./dev`
installs SillyTavern), never into the project's environment. Three paths are measured, interleaved request by
request with the same request sent straight to the upstream: tagengine passing a chat through (no campaign),
tagengine playing the campaign's turn (the engine's work), and the LiteLLM proxy passing it through. Per path:
added p50 and p99 (served - direct, sequential requests), the server's CPU per request and per stream (its
process tree, from /proc; the paths by turns in blocks, `cpu_by_turns`), requests a second with CONCURRENCY
clients at once, and its RSS after them and at rest. Throughput is driven by a lean HTTP/1.1 client on raw
sockets (`Load`), so that the load generator, which shares the machine's cores with the servers, costs each
request as little as it can; the same client drives every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LITELLM_VERSION = "1.108.7"  # the version the issue measured; pinned, so that runs compare
CONCURRENCY = 16  # clients at once for the throughput figure
THROUGHPUT_SECONDS = 3.0  # per path and round
LATENCY_GAP = 0.002  # seconds after each latency request: the server's work after its answer is done by then
THROUGHPUT_SLICE = 0.5  # seconds a path is driven before the next one's turn
CPU_BLOCKS = 20  # the CPU figures' requests (and streams) are sent in this many blocks, the paths by turns
REST_SECONDS = 1.5  # the pause before "RSS at rest" is read: past tagengine's IDLE_TRIM_SECONDS (1 s), as a chat app's
# players leave a server between turns
# the proxy refuses to start without a strong master key; every request of this section carries it (tagengine
# passes it on to the fake upstream, which reads none)
# the LiteLLM proxy's pass-through on the machine the engine's targets were set on (this benchmark, PF-67): the
# engine's work is read as a share of the peer's in the same round, and that share at these figures
REFERENCE_PEER_MS = {"cpu": 22.10, "p50": 22.15, "cpu_stream": 54.93}
MASTER_KEY = "sk-bench-" + os.urandom(16).hex()
HEADERS = {"authorization": f"Bearer {MASTER_KEY}"}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tagengine" / f"litellm-{LITELLM_VERSION}"


def ensure_litellm() -> Path:
    """The LiteLLM proxy's Python, installed once (pip, PyPI) into its own venv in the cache folder."""
    home = cache_dir()
    python = home / "bin" / "python"
    if (home / ".complete").exists():
        return python
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = home.with_name(f"{home.name}.partial.{os.getpid()}")
    print(f"installing litellm[proxy]=={LITELLM_VERSION} into {home} (once)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True)
        subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"litellm[proxy]=={LITELLM_VERSION}"], check=True)
        (tmp / ".complete").write_text(LITELLM_VERSION)
        try:
            tmp.rename(home)  # the venv runs through `python -m`, so its scripts' paths do not matter
        except OSError:  # another run finished first: keep its copy
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, subprocess.CalledProcessError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"cannot install litellm[proxy]=={LITELLM_VERSION} (PyPI unreachable?): {e}") from None
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def litellm_argv(tmp: Path, upstream: str) -> tuple[list[str], dict[str, str], str]:
    """The proxy's command line, environment and URL: one model at the fake upstream, no database, no telemetry,
    the cost map read from the package (no network)."""
    python = ensure_litellm()
    config = tmp / "litellm.yaml"
    config.write_text("model_list:\n  - model_name: gpt-4o\n    litellm_params:\n      model: openai/gpt-4o\n"
                      f"      api_base: {upstream}/v1\n      api_key: sk-bench\n"
                      "litellm_settings:\n  telemetry: false\n  drop_params: true\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(LITELLM_MASTER_KEY=MASTER_KEY, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR",
               LITELLM_TELEMETRY="False", DISABLE_ADMIN_UI="True", NO_DOCS="True", PYTHONUNBUFFERED="1")
    argv = [str(python), "-m", "litellm.proxy.proxy_cli", "--config", str(config), "--host", "127.0.0.1",
            "--port", str(port), "--num_workers", "1", "--telemetry", "False"]
    return argv, env, f"http://127.0.0.1:{port}"


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and every live descendant (Linux /proc), each read from the process's own CPU
    clock (`process_cpu_seconds`): to the nanosecond, where /proc's figures come in steps of 10 ms, which over 200
    requests are 0.05 ms a request, a tenth of what target 1 reads (PF-63)."""
    kids: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(p.name)] = fields
        kids.setdefault(int(fields[1]), []).append(int(p.name))
    total, todo = 0.0, [pid]
    while todo:
        q = todo.pop()
        if q in stats:
            exact = process_cpu_seconds(q)
            total += exact if exact is not None else (int(stats[q][11]) + int(stats[q][12])) / os.sysconf("SC_CLK_TCK")
        todo += kids.get(q, [])
    return total


def process_cpu_seconds(pid: int) -> float | None:
    """The CPU time of process `pid` (all its threads, those ended too), by its CPU-time clock
    (`clock_getcpuclockid`, POSIX); None where the system gives none, or the process has gone."""
    import ctypes

    clock = ctypes.c_int()
    if _libc().clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        return None
    try:
        return time.clock_gettime(clock.value)
    except OSError:
        return None


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def tree_rss_kb(pid: int) -> int:
    total, todo = 0, [pid]
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                kids.setdefault(int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(p.name))
    while todo:
        q = todo.pop()
        try:
            for line in Path(f"/proc/{q}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
        todo += kids.get(q, [])
    return total


class Load:
    """A lean HTTP/1.1 client on one keep-alive connection: a request made once as bytes, sent again and again;
    the answer's head read and its body by Content-Length or chunks. Only the status is checked."""

    def __init__(self, url: str, request: bytes) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.addr = (host, int(port))
        self.request = request
        self.r: asyncio.StreamReader | None = None
        self.w: asyncio.StreamWriter | None = None

    async def one(self) -> None:
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(*self.addr)
            sock = self.w.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert self.r is not None
        self.w.write(self.request)
        head = await self.r.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"{self.addr}: {head[:300]!r}")
        low = head.lower()
        at = low.find(b"content-length:")
        if at >= 0:
            await self.r.readexactly(int(low[at + 15:low.index(b"\r\n", at)]))
        elif b"transfer-encoding: chunked" in low:
            while True:
                size = int((await self.r.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                await self.r.readexactly(size + 2)
                if size == 0:
                    break
        else:  # read to the end: the connection is not kept
            await self.r.read()
            self.close()

    def close(self) -> None:
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


def raw_request(url: str, body: bytes, path: str = "/v1/chat/completions") -> bytes:
    host = url.removeprefix("http://")
    return (f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"authorization: Bearer {MASTER_KEY}\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body


async def throughput(url: str, body: bytes, seconds: float, clients: int = CONCURRENCY) -> float:
    """Requests a second that `clients` lean clients, each on its own connection, complete in `seconds`."""
    loads = [Load(url, raw_request(url, body)) for _ in range(clients)]
    done = 0
    until = time.perf_counter() + seconds

    async def client(ld: Load) -> None:
        nonlocal done
        while time.perf_counter() < until:
            await ld.one()
            done += 1

    t = time.perf_counter()
    try:
        await asyncio.gather(*(client(ld) for ld in loads))
    finally:
        for ld in loads:
            ld.close()
    return done / (time.perf_counter() - t)


@dataclass
class Path_:
    """One path measured: a label, the server's URL and process id, and the body it is sent."""

    label: str
    url: str
    pid: int
    body: dict[str, Any]
    figures: dict[str, list[float]] = field(default_factory=dict)


async def measure(c: Any, up: str, paths: list[Path_], rounds: int, runs: int,
                  post: Callable[..., Awaitable[float]], stream: Callable[..., Awaitable[float]],
                  load: Callable[[], str], peer: str) -> None:
    """`rounds` rounds; in each, every path's latency interleaved request by request with the direct request, then
    each path's CPU per request and per stream (the paths by turns, `cpu_by_turns`), its throughput (by turns in
    slices) and its RSS. A server's work after its answer (tagengine's snapshot kept) slows the request that comes
    next, on this machine's two cores: a fixed order put that cost on the same path every time, where a chat app's
    turns come seconds apart. So each request is followed by a pause of LATENCY_GAP, and the order of the paths but
    `peer`'s (which keeps its place, last: its own work after an answer falls on the direct request, which every
    figure is read against) turns by one each run (PF-60)."""
    import orjson

    direct_body = paths[0].body
    ours, peer_path = [p for p in paths if p.label != peer], [p for p in paths if p.label == peer]
    for n in range(rounds):
        direct: list[float] = []
        served: dict[str, list[float]] = {p.label: [] for p in paths}
        for i in range(runs):
            direct.append(await post(c, up, direct_body))
            turn = i % len(ours) if ours else 0
            for p in ours[turn:] + ours[:turn] + peer_path:
                served[p.label].append(await post(c, p.url, p.body))
                await asyncio.sleep(LATENCY_GAP)
        d50, d99 = _pct(direct, 0.5), _pct(direct, 0.99)
        for p in paths:
            f = p.figures
            f.setdefault("p50", []).append((_pct(served[p.label], 0.5) - d50) * 1e3)
            f.setdefault("p99", []).append((_pct(served[p.label], 0.99) - d99) * 1e3)
        for key, send, sends in (("cpu", post, runs), ("cpu_stream", stream, runs // 2)):
            by_label = await cpu_by_turns(c, paths, send, sends)
            for p in paths:
                p.figures.setdefault(key, []).append(by_label[p.label])
        # throughput: the paths by turns in slices of THROUGHPUT_SLICE seconds, so that a change in the machine's
        # load falls on every path alike; beside the requests a second, the requests a second of the server's own
        # CPU (its process tree's), which a busy machine tilts less
        done = {p.label: [0.0, 0.0, 0.0] for p in paths}  # requests, seconds, server CPU seconds
        for _ in range(round(THROUGHPUT_SECONDS / THROUGHPUT_SLICE)):
            for p in paths:
                before, t = tree_cpu_seconds(p.pid), time.perf_counter()
                rps = await throughput(p.url, orjson.dumps(p.body), THROUGHPUT_SLICE)
                took = time.perf_counter() - t
                got = done[p.label]
                got[0] += rps * took
                got[1] += took
                got[2] += tree_cpu_seconds(p.pid) - before
        for p in paths:
            count, took, cpu = done[p.label]
            p.figures.setdefault("rps", []).append(count / took)
            p.figures.setdefault("rps_cpu", []).append(cpu / took)
            p.figures.setdefault("per_core", []).append(count / cpu if cpu else math.nan)
            p.figures.setdefault("rss", []).append(tree_rss_kb(p.pid) / 1024)
        # the memory a server keeps once the burst is over (what it freed handed back, PF-47), beside the burst's
        await asyncio.sleep(REST_SECONDS)
        for p in paths:
            p.figures.setdefault("rss_rest", []).append(tree_rss_kb(p.pid) / 1024)
        print(f"  round {n + 1} of the peers: direct p50 {d50 * 1e3:.2f} ms; {load()}", flush=True)
        for p in paths:
            f = p.figures
            print(f"    {p.label:34} added p50 {f['p50'][-1]:6.2f} p99 {f['p99'][-1]:6.2f} | CPU a request "
                  f"{f['cpu'][-1]:6.2f} a stream {f['cpu_stream'][-1]:6.2f} ms | {f['rps'][-1]:7.1f} req/s "
                  f"(server busy {f['rps_cpu'][-1]:.2f} cores: {f['per_core'][-1]:.0f} a core) | RSS "
                  f"{f['rss'][-1]:.0f} MB (at rest {f['rss_rest'][-1]:.0f})", flush=True)


async def cpu_by_turns(c: Any, paths: list[Path_], send: Callable[..., Awaitable[float]],
                       count: int) -> dict[str, float]:
    """Each path's server CPU a request (ms, by label), over `count` requests sent in CPU_BLOCKS blocks, the paths
    by turns block by block (the first path of a block moving on by one each block). A path's requests sent all at once,
    one path after another, put a second or two between the campaign's figure and the pass-through's, and on this
    kind of machine the CPU a request drifts over seconds: round by round the engine's work (their difference)
    read anywhere from 0.1 to 1.1 ms for the same code. By turns, a drift falls on every path alike. A block's
    CPU is read LATENCY_GAP after its last answer, so the server's work after that answer is counted in it."""
    blocks = max(1, min(CPU_BLOCKS, count))
    spent = {p.label: 0.0 for p in paths}
    sent = {p.label: 0 for p in paths}
    for b in range(blocks):
        size = count // blocks + (1 if b < count % blocks else 0)
        turn = b % len(paths)
        for p in paths[turn:] + paths[:turn]:
            before = tree_cpu_seconds(p.pid)
            for _ in range(size):
                await send(c, p.url, p.body)
            await asyncio.sleep(LATENCY_GAP)
            spent[p.label] += tree_cpu_seconds(p.pid) - before
            sent[p.label] += size
    return {k: spent[k] / sent[k] * 1e3 for k in spent}


def report(paths: list[Path_], peer: str) -> None:
    """The medians of the rounds, and the ratios to the peer within each round (then their median)."""
    print("\n  side by side (medians of the rounds): ms, req/s, MB")
    print(f"  {'path':34}{'added p50':>10}{'p99':>8}{'CPU/req':>9}{'CPU/strm':>9}{'req/s':>8}{'a core':>8}"
          f"{'RSS':>7}{'at rest':>8}")
    for p in paths:
        f = {k: statistics.median(v) for k, v in p.figures.items()}
        print(f"  {p.label:34}{f['p50']:>10.2f}{f['p99']:>8.2f}{f['cpu']:>9.2f}{f['cpu_stream']:>9.2f}"
              f"{f['rps']:>8.1f}{f['per_core']:>8.0f}{f['rss']:>7.0f}{f['rss_rest']:>8.0f}")
    ref = next(p for p in paths if p.label == peer)
    print(f"  ratios to {peer}, per round then their median:")
    for p in paths:
        if p is ref:
            continue
        for k, name in (("p50", "added p50"), ("cpu", "CPU a request"), ("cpu_stream", "CPU a stream"),
                        ("rps", "throughput"), ("per_core", "req/s a core")):
            rs = [a / b for a, b in zip(p.figures[k], ref.figures[k], strict=True) if b]
            print(f"    {p.label:34}{name:>15}: {statistics.median(rs):6.2f}x  ("
                  + ", ".join(f"{r:.2f}" for r in rs) + ")")
    by = {p.label: p.figures for p in paths}
    for tree in dict.fromkeys(p.label.rsplit(", ", 1)[0] for p in paths):  # this tree, then --against's
        if f"{tree}, campaign" not in by or f"{tree}, pass-through" not in by:
            continue
        camp, hop = by[f"{tree}, campaign"], by[f"{tree}, pass-through"]
        for k, name in (("cpu", "CPU a request"), ("p50", "added p50"), ("cpu_stream", "CPU a stream")):
            rs = [a - b for a, b in zip(camp[k], hop[k], strict=True)]
            print(f"    {tree}: the engine's own work (campaign - pass-through), {name}: {statistics.median(rs):.2f} "
                  "ms (" + ", ".join(f"{r:.2f}" for r in rs) + ")")
            # the same work as a share of the peer's in the same round, and what that share is on the machine the
            # targets were set on: the machine's speed moves both alike, round by round
            shares = [r / b for r, b in zip(rs, ref.figures[k], strict=True) if b]
            if shares:
                at = REFERENCE_PEER_MS[k]
                print(f"    {'':{len(tree)}}  as a share of the peer's {name}: {statistics.median(shares):.4f} ("
                      + ", ".join(f"{r:.4f}" for r in shares) + f"); at the peer's {at:.2f} ms of the reference "
                      f"machine: {statistics.median(shares) * at:.2f} ms")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]
