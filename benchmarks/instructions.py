"""Instructions a request costs in process, counted by valgrind: the side-by-side figure a busy machine cannot move.

The time figures of `serve_inproc.py` and `serve.py` move with what else the machine runs: on a shared host a
tenth of the engine's work is inside the rounds' spread, whatever the number of rounds (PF-35, PF-40). The
instructions the CPU runs for the same requests do not: valgrind's callgrind counts them, the same count for the
same code, inputs and environment, whatever the load. So a change's effect on a path is read here exactly, with
`--against REF`, and its time in the other two.

Each count runs `serve_inproc.py`'s driver in a child process under callgrind (string hashing fixed, bytecode
written as pip leaves it, a tree's first run made before any is counted): the same warm-up for every path (each
of `--paths` in turn, WARM_UP times), then `--requests` requests of one path; a child with no request after its
warm-up is subtracted, so a figure is a request's own. The driver's own work (the in-process client, the fake
upstream, and for the growing chat its two bodies written anew and its answer read each turn, a few million
instructions) is in every figure, the same in both trees: the differences between trees are the code's, and
between a turn and its pass-through too but for the growing chat's driver work. `--paths turn,pass` holds one
chat, as `serve.py`'s latency rounds do; the default adds the growing chat, whose first 200 messages are the
other chat's too (two chats that started alike). valgrind runs a child some 50 times slower than Python alone;
the children run on every core at once.

`--within MODULE:NAME` counts only what runs inside one function (`tagengine._internal.prompt.build:reminder`,
`...server.turn.request:RecentHistories.read`), its callees included: wrapped in the module whose global it is (or
on its class) after the warm-up, called through `operator.call`, a C function that callgrind then collects within
alone (`--toggle-collect`; a coroutine function's every step between awaits). Nothing else calls `operator.call`
on these paths: a count of 0 means the name is not called there (a caller holds the object imported elsewhere:
name the module it is read from).

    python benchmarks/instructions.py [--requests N] [--paths turn,pass,...] [--against REF] [--within MODULE:NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _against import ROOT, bytecode_env, unpack

PATHS = ("turn", "pass", "next", "next-pass")
ENGINE = {"engine (turn - pass)": ("turn", "pass"), "engine, a new turn (next - next-pass)": ("next", "next-pass")}
WARM_UP = 30  # each path this many times before the counted requests: the tokenizer, the replay, the caches
COLLECTED = re.compile(r"Collected : (\d+)")


async def child(path: str, requests: int, paths: list[str], within: str | None = None) -> None:
    """The driver's warm-up over `paths`, then `requests` requests of `path`: what one count measures. `within`: that
    function wrapped after the warm-up (`collected_within`)."""
    from serve_inproc import driven

    async with driven() as (d, c):
        for _ in range(WARM_UP):
            for p in paths:
                await d.one(c, p)
        if within:
            collected_within(within)
        for _ in range(requests):
            await d.one(c, path)


class _Stepped:
    """A coroutine driven step by step through `operator.call`, so each step is inside it for callgrind."""

    def __init__(self, coro: Any) -> None:
        self.coro = coro

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                if error is not None:
                    step = operator.call(self.coro.throw, error)
                else:
                    step = operator.call(self.coro.send, value)
            except StopIteration as e:
                return e.value
            try:
                value, error = (yield step), None
            except BaseException as e:  # handed to the coroutine, as `await` would hand it
                value, error = None, e


def collected_within(spec: str) -> None:
    """`MODULE:NAME` (NAME may be `Class.method`) replaced where it is looked up by a wrapper that calls it through
    `operator.call`: the only C function callgrind's `--toggle-collect` then collects inside."""
    module, _, name = spec.partition(":")
    owner: Any = importlib.import_module(module)
    *outer, last = name.split(".")
    for part in outer:
        owner = getattr(owner, part)
    f = getattr(owner, last)
    if asyncio.iscoroutinefunction(f):
        async def wrapped_async(*a: Any, **k: Any) -> Any:
            return await _Stepped(f(*a, **k))
        setattr(owner, last, wrapped_async)
    else:
        setattr(owner, last, lambda *a, **k: operator.call(f, *a, **k))


def count(tree: Path, path: str, requests: int, paths: list[str], within: str | None = None) -> int:
    """The instructions of one child run with `tree`'s package first on the path (`within`: inside that function
    alone)."""
    env = bytecode_env(PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    inside = ["--collect-atstart=no", "--toggle-collect=_operator_call"] if within else []
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *inside, sys.executable,
                           __file__, "--child", path, str(requests), "--paths", ",".join(paths),
                           *(["--within", within] if within else [])], env=env,
                          capture_output=True, text=True, check=False, timeout=3600)
    hit = COLLECTED.search(done.stderr)
    if done.returncode != 0 or hit is None:
        raise SystemExit(f"{path} in {tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return int(hit.group(1))


def per_request(trees: dict[str, Path], requests: int, paths: list[str],
                within: str | None = None) -> dict[str, dict[str, float]]:
    """Each tree's instructions a request, by path, and the engine's own (a turn minus its pass-through). `within`:
    inside that function alone, wrapped after the warm-up, so nothing is subtracted."""
    for tree in trees.values():  # a child run once first, not counted: what the first run of a tree writes to disk
        # (its bytecode, the validated ruleset's cache) is then there for every counted one, whichever runs first
        subprocess.run([sys.executable, __file__, "--child", paths[0], "0", "--paths", ",".join(paths)],
                       env=bytecode_env(PYTHONPATH=str(tree)), check=True, stdout=subprocess.DEVNULL)
    jobs = [(label, path) for label in trees for path in ("", *paths) if path or not within]  # "": the warm-up alone
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        got = dict(zip(jobs, pool.map(lambda j: count(trees[j[0]], j[1] or paths[0], requests if j[1] else 0, paths,
                                                      within), jobs), strict=True))
    out: dict[str, dict[str, float]] = {}
    for label in trees:
        each = {p: (got[label, p] - got.get((label, ""), 0)) / requests for p in paths}
        for name, (turn, passed) in ENGINE.items():
            if turn in each and passed in each:
                each[name] = each[turn] - each[passed]
        out[label] = each
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=100, help="requests counted a path (default 100)")
    p.add_argument("--against", metavar="REF", help="also count the code of this git commit, side by side")
    p.add_argument("--paths", default=",".join(PATHS),
                   help="the paths, comma-separated, the warm-up's too (default all: " + ",".join(PATHS) + "; "
                        "turn,pass alone is one chat, as serve.py's latency rounds send)")
    p.add_argument("--within", metavar="MODULE:NAME",
                   help="count only inside this function and its callees (tagengine._internal.prompt.build:reminder)")
    p.add_argument("--child", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    args = p.parse_args()
    paths = args.paths.split(",")
    if any(path not in PATHS for path in paths):
        p.error(f"--paths: each of {', '.join(PATHS)}")
    if args.child:
        asyncio.run(child(args.child[0], int(args.child[1]), paths, args.within))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: this benchmark counts instructions with its callgrind tool")
    with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
        trees = {"this tree": ROOT, **({args.against: unpack(args.against, Path(tmp))} if args.against else {})}
        figures = per_request(trees, args.requests, paths, args.within)
    inside = f", inside {args.within} alone" if args.within else ""
    print(f"instructions a request (valgrind, {args.requests} a path after a warm-up of {WARM_UP} each{inside})")
    for name in figures["this tree"]:
        line = f"  {name:40} " + "  ".join(f"{label} {f[name] / 1e6:7.3f} M" for label, f in figures.items())
        if args.against:
            other = figures[args.against][name]
            line += f"  this tree / {args.against} = " + (f"{figures['this tree'][name] / other:.3f}" if other else "-")
        print(line)


if __name__ == "__main__":
    main()
