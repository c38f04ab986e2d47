"""Tag benchmark (issue: tags in, receipts out): apply every reply of the make_corpus corpus.

Prints MB/s, replies/s, p50/p99 per reply, the ratio to ../shared/bench/reference_regex.py on the
same corpus in the same run (target <= 1.5x since issue 30, 3.0x before; p99 <= 0.3 ms, 2 ms before), and
the hostile-input timings (each <= 0.5 s, 1 s before). `--against REF` times the engine alone with another
commit's code, side by side (benchmarks/_against.py). Each chat's replies apply in order from a new state,
as a chat app would. The comparator's `rewrite` runs in this process, interleaved with the engine, and both
are timed in CPU seconds, so a busy neighbour on a shared machine moves both alike; so is each reply for
p50/p99 (its wall time is printed beside: on a busy machine one reply in a hundred is descheduled).

Hostile inputs (about 1 MB each, or one tag that asks for a lot) are applied one by one, each in a
forked child timed in CPU seconds and stopped after LIMIT seconds, so one regression cannot hang the
run; the streamed case feeds a 200 KB reply to StreamFilter one character at a time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _against as against
from _corpus import BENCH, corpus, cpu_seconds, reference_rewrite

from tagengine import GameState, Ruleset, apply_reply
from tagengine._internal.stream import StreamFilter

LIMIT = 30.0  # seconds: a hostile case still running then is reported as stopped
ROUNDS = 9  # interleaved rounds of the engine and the comparator; the ratio is their median


def hostile_cases(texts: list[str]) -> list[tuple[str, str, bool]]:
    """(label, text, streamed): shapes that once cost more than linear time, or could."""
    reply = ""
    for t in texts:  # a long reply made of real ones
        reply += t + "\n\n"
        if len(reply) >= 200_000:
            break
    dense = "".join("[sheet:\n" + "".join(f"k{j}\n=\nv{i}\n" for j in range(60)) + "]\n" for i in range(300))
    return [
        ("100,000 '['", "[" * 100_000, False),
        ("1 MB of unterminated quotes", '[clock: name="' + '"' * 1_000_000, False),
        ("1 MB inside one tag", "[clock: " + "a" * 1_000_000 + "]", False),
        ("1 MB unclosed value", '[clock: name="' + "a" * 1_000_000, False),
        ("150,000 '[sheet:' openers", "[sheet:" * 150_000, False),
        ("75,000 '[ sheet : who=' openers", "[ sheet : who=" * 75_000, False),
        ("1 MB quoted value", '[clock: name="' + "a" * 1_000_000 + '" tick="1"]', False),
        ("1 MB of lines", "Mira runs.\n" * 90_000, False),
        ("40,000 lines of one tag", '[clock: name="A" tick="1"]\n' * 40_000, False),
        ("1 MB of attributes in one tag", "[sheet: " + 'k="v" ' * 170_000 + "]", False),
        ("1 MB of attributes, one a line", "[sheet: " + 'k="v"\n' * 170_000 + "]", False),
        ("1 MB of flags in one tag", "[sheet: " + "kk " * 330_000 + "]", False),
        ("an opener without ], then 1 MB of lines and a ]", "[sheet: who=\n" + "She runs, fast.\n" * 60_000 + "]",
         False),
        ("wound amount 999999999", '[sheet: who="Mira" op="damage" track="harm" kind="knock" amount="999999999"]',
         False),
        (f"{len(reply) // 1000} KB reply streamed one character at a time", reply, True),
        (f"{len(dense) // 1000} KB of distinct tags of 60 attributes, one a line", dense, False),
        (f"{len(dense) // 1000} KB of distinct tags of 60 attributes, one a line, streamed", dense, True),
    ]


def _hostile_seconds(rs: Ruleset, state: GameState, text: str, streamed: bool) -> float | None:
    """CPU seconds to apply (or stream, then apply) `text`, in a forked child; None when stopped at LIMIT."""

    def run() -> None:
        if streamed:
            f = StreamFilter(rs, state)
            for ch in text:
                f.feed(ch)
            f.finish()
        else:
            apply_reply(rs, state, text)

    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - no fork: time it here
        return cpu_seconds(run)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: send.send(cpu_seconds(run)), daemon=True)
    child.start()
    seconds = recv.recv() if recv.poll(LIMIT) else None
    child.kill()
    child.join()
    return seconds


def engine_run(rs: Ruleset, chats: list[dict]) -> None:
    """Every chat's replies in order, each chat from a new state, as a chat app applies them."""
    for chat in chats:
        state = GameState.new(rs, chat["characters"])
        for m in chat["messages"]:
            if m["role"] == "assistant":
                state = apply_reply(rs, state, m["content"]).state


def per_reply(rs: Ruleset, chats: list[dict]) -> tuple[list[float], list[float]]:
    """Each reply's (CPU, wall) seconds, sorted."""
    per: list[float] = []
    walls: list[float] = []
    for chat in chats:
        state = GameState.new(rs, chat["characters"])
        for m in chat["messages"]:
            if m["role"] == "assistant":
                t, c = time.perf_counter(), time.thread_time()
                state = apply_reply(rs, state, m["content"]).state
                per.append(time.thread_time() - c)
                walls.append(time.perf_counter() - t)
    return sorted(per), sorted(walls)


def figures() -> dict[str, float]:
    """What `--against` compares, in CPU seconds: the whole corpus (best of 3) and p50/p99 per reply."""
    rs = Ruleset.load(BENCH / "bench_ruleset.json")
    chats = [json.loads(line) for line in corpus().open(encoding="utf-8")]
    engine_run(rs, chats)  # warm
    best = min(cpu_seconds(lambda: engine_run(rs, chats)) for _ in range(3))
    per, _ = per_reply(rs, chats)
    return {"the corpus, CPU": best, "per reply p50, CPU": statistics.median(per),
            "per reply p99, CPU": per[int(len(per) * 0.99)]}


def main() -> None:
    against.main(__file__, __doc__, figures, everything, rounds=5,
                 compared="the corpus and p50/p99 per reply; no comparator, no hostile inputs")


def everything() -> None:
    path = corpus()
    rs = Ruleset.load(BENCH / "bench_ruleset.json")
    chats = [json.loads(line) for line in path.open(encoding="utf-8")]
    texts = [m["content"] for chat in chats for m in chat["messages"] if m["role"] == "assistant"]
    n, size = len(texts), sum(len(t.encode()) for t in texts)
    rewrite = reference_rewrite()

    def reference_run() -> None:
        for t in texts:
            rewrite(t)

    engine_run(rs, chats)  # warm
    ratios, engines, refs = [], [], []
    for _ in range(ROUNDS):  # interleaved, CPU time: the comparator runs in this process on the same replies
        ref_run, eng_run = cpu_seconds(reference_run), cpu_seconds(lambda: engine_run(rs, chats))
        refs.append(ref_run)
        engines.append(eng_run)
        ratios.append(eng_run / ref_run)
    engine, ratio = min(engines), statistics.median(ratios)
    per, walls = per_reply(rs, chats)
    mb = size / 1e6
    print(f"corpus: {len(chats)} chats, {n} replies, {mb:.1f} MB")
    print(f"engine: {engine:.3f} s CPU (best of {ROUNDS})  {mb / engine:.1f} MB/s  {n / engine:.0f} replies/s; "
          f"reference_regex {min(refs):.3f} s")
    print(f"per reply, CPU: p50 {statistics.median(per) * 1e3:.3f} ms  p99 {per[int(len(per) * 0.99)] * 1e3:.3f} ms "
          f"(target p99 <= 0.3 ms); wall: p50 {statistics.median(walls) * 1e3:.3f} ms  p99 "
          f"{walls[int(len(walls) * 0.99)] * 1e3:.3f} ms; load average {os.getloadavg()[0]:.1f}")
    print(f"ratio engine/reference_regex, run by run: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"median {ratio:.2f}x (target <= 1.5x)")
    state = GameState.new(rs, ["Mira"])
    for label, text, streamed in hostile_cases(texts):
        seconds = _hostile_seconds(rs, state, text, streamed)
        took = f"{seconds:.3f} s" if seconds is not None else f"> {LIMIT:.0f} s (stopped)"
        print(f"hostile: {label}: {took} (target <= 0.5 s)")


if __name__ == "__main__":
    main()
