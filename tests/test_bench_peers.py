"""`benchmarks/serve.py --litellm` (`_peers.py`): each path's CPU a request read in blocks, the paths by turns, so a
drift of the machine falls on every path alike; the engine's work read for every tree, and as a share of the peer's."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import _peers


def paths(*labels: str) -> list[_peers.Path_]:
    return [_peers.Path_(label, f"http://{n}", n, {}) for n, label in enumerate(labels)]


def test_cpu_is_read_in_blocks_the_paths_by_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path is sent `count` requests in all, in CPU_BLOCKS blocks as even as they can be; the first path of a
    block moves on by one each block; a block's CPU is read after LATENCY_GAP, and its requests alone are charged
    with it (a server's clock here moves by its pid + 1 ms a request)."""
    clock = {0: 0.0, 1: 0.0, 2: 0.0}
    sent: list[tuple[int, str]] = []  # (block, path) in the order sent
    slept: list[float] = []
    block = [0]

    async def send(c: Any, url: str, body: Any) -> float:
        pid = int(url.removeprefix("http://"))
        clock[pid] += (pid + 1) / 1000
        sent.append((block[0], url))
        return 0.0

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) % len(clock) == 0:
            block[0] += 1

    monkeypatch.setattr(_peers, "tree_cpu_seconds", lambda pid: clock[pid])
    monkeypatch.setattr(_peers.asyncio, "sleep", sleep)
    ps = paths("a, pass-through", "a, campaign", "peer")
    got = asyncio.run(_peers.cpu_by_turns(None, ps, send, 45))
    assert got == pytest.approx({"a, pass-through": 1.0, "a, campaign": 2.0, "peer": 3.0})
    assert slept == [_peers.LATENCY_GAP] * (_peers.CPU_BLOCKS * 3)
    for url in ("http://0", "http://1", "http://2"):
        sizes = [sum(1 for b, u in sent if b == n and u == url) for n in range(_peers.CPU_BLOCKS)]
        assert sum(sizes) == 45 and set(sizes) == {2, 3}  # 45 in 20 blocks: five of 3, fifteen of 2
    firsts = [next(u for b, u in sent if b == n) for n in range(6)]
    assert firsts == ["http://0", "http://1", "http://2"] * 2


def test_fewer_requests_than_blocks_make_a_block_each(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def send(c: Any, url: str, body: Any) -> float:
        seen.append(url)
        return 0.0

    monkeypatch.setattr(_peers, "tree_cpu_seconds", lambda pid: 0.0)
    assert asyncio.run(_peers.cpu_by_turns(None, paths("one"), send, 3)) == {"one": 0.0}
    assert seen == ["http://0"] * 3


def test_the_engine_s_work_is_read_for_every_tree_and_as_a_share_of_the_peer_s(capsys: pytest.CaptureFixture[str]
                                                                               ) -> None:
    """Campaign less pass-through, round by round, for this tree and for --against's; and that difference over the
    peer's figure in the same round, times the peer's figure on the reference machine."""
    figures = {"p50": [1.0, 1.0], "p99": [1.0, 1.0], "cpu_stream": [1.0, 1.0], "rps": [1.0, 1.0],
               "per_core": [1.0, 1.0], "rss": [1.0, 1.0], "rss_rest": [1.0, 1.0]}
    ps = paths("tagengine, pass-through", "tagengine, campaign", "HEAD, pass-through", "HEAD, campaign",
               "LiteLLM proxy, pass-through")
    for p, cpu in zip(ps, ([1.0, 1.0], [1.5, 1.6], [1.0, 1.0], [1.8, 2.0], [20.0, 40.0]), strict=True):
        p.figures.update({k: list(v) for k, v in figures.items()}, cpu=cpu)
    _peers.report(ps, "LiteLLM proxy, pass-through")
    out = capsys.readouterr().out
    assert "tagengine: the engine's own work (campaign - pass-through), CPU a request: 0.55 ms (0.50, 0.60)" in out
    assert "HEAD: the engine's own work (campaign - pass-through), CPU a request: 0.90 ms (0.80, 1.00)" in out
    # shares 0.5 / 20 and 0.6 / 40: their median 0.02, at the reference machine's 22.10 ms 0.44 ms
    ref = _peers.REFERENCE_PEER_MS["cpu"]
    assert (f"as a share of the peer's CPU a request: 0.0200 (0.0250, 0.0150); at the peer's {ref:.2f} ms of the "
            f"reference machine: {0.02 * ref:.2f} ms") in out
