"""Tag benchmark (issue: tags in, receipts out): apply every reply of the make_corpus corpus.

Prints MB/s, replies/s, p50/p99 per reply, the ratio to ../shared/bench/reference_regex.py on the
same corpus in the same run (target <= 3.0x; p99 <= 2 ms), and the hostile-input timings (each < 1 s).
Each chat's replies apply in order from a new state, as a chat app would.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import BENCH, corpus, reference_seconds

from tagengine import GameState, Ruleset, apply_reply


def main() -> None:
    path = corpus()
    rs = Ruleset.load(BENCH / "bench_ruleset.json")
    chats = [json.loads(line) for line in path.open(encoding="utf-8")]
    texts = [m["content"] for chat in chats for m in chat["messages"] if m["role"] == "assistant"]
    n, size = len(texts), sum(len(t.encode()) for t in texts)
    per: list[float] = []
    engine = 0.0
    ratios = []
    for _ in range(3):  # engine and reference interleaved, so both see the same machine
        ref_run = reference_seconds(path)
        per_run: list[float] = []
        t0 = time.perf_counter()
        for chat in chats:
            state = GameState.new(rs, chat["characters"])
            for m in chat["messages"]:
                if m["role"] == "assistant":
                    t = time.perf_counter()
                    state = apply_reply(rs, state, m["content"]).state
                    per_run.append(time.perf_counter() - t)
        took = time.perf_counter() - t0
        ratios.append(took / ref_run)
        if not engine or took < engine:
            engine, per = took, per_run
    ratio = statistics.median(ratios)
    per.sort()
    mb = size / 1e6
    print(f"corpus: {len(chats)} chats, {n} replies, {mb:.1f} MB")
    print(f"engine: {engine:.3f} s (best of 3)  {mb / engine:.1f} MB/s  {n / engine:.0f} replies/s")
    print(f"per reply: p50 {statistics.median(per) * 1e3:.3f} ms  p99 {per[int(len(per) * 0.99)] * 1e3:.3f} ms "
          f"(target p99 <= 2 ms)")
    print(f"ratio engine/reference_regex, run by run: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"median {ratio:.2f}x (target <= 3.0x)")
    state = GameState.new(rs, ["Mira"])
    for label, text in (("100,000 '['", "[" * 100_000),
                        ("1 MB of unterminated quotes", '[clock: name="' + '"' * 1_000_000),
                        ("1 MB inside one tag", "[clock: " + "a" * 1_000_000 + "]"),
                        ("1 MB unclosed value", '[clock: name="' + "a" * 1_000_000)):
        t = time.perf_counter()
        apply_reply(rs, state, text)
        print(f"hostile: {label}: {time.perf_counter() - t:.3f} s (target < 1 s)")


if __name__ == "__main__":
    main()
