"""Replay benchmark (issue: middleware and batch): the make_corpus corpus (200 chats x 20 turns)
through `tagengine replay` with 1 and 2 workers: replies/s, MB/s, the ratio to
../shared/bench/reference_regex.py in the same run (target: 1 worker <= 3.0x; 2 workers >= 1.7x
faster than 1), and peak memory for a small and a large corpus (target: independent of the count)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import BENCH, corpus, cpu_seconds, reference_rewrite, replies

from tagengine._internal.batch import replay


def timed(path: Path, workers: int) -> float:
    with path.open(encoding="utf-8") as src, open(os.devnull, "w", encoding="utf-8") as sink:
        t = time.perf_counter()
        replay(str(BENCH / "bench_ruleset.json"), src, sink, workers=workers)
        return time.perf_counter() - t


def pooled(path: Path, workers: int) -> float:
    """Wall time of a pool of `workers` processes (the CLI runs --workers 1 in-process instead)."""
    with path.open(encoding="utf-8") as src, open(os.devnull, "w", encoding="utf-8") as sink:
        t = time.perf_counter()
        replay(str(BENCH / "bench_ruleset.json"), src, sink, workers=workers, processes=True)
        return time.perf_counter() - t


def peak_rss_mb(path: Path) -> float:
    code = ("import sys, os, resource; from tagengine._internal.batch import replay; "
            f"replay({str(BENCH / 'bench_ruleset.json')!r}, open({str(path)!r}), open(os.devnull, 'w'), 1); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return int(out.strip()) / 1024


def main() -> None:
    path = corpus()
    texts = replies(path)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rewrite = reference_rewrite()
    timed(path, 1)  # warm the caches of this process the way a long batch would
    # Interleaved rounds, so all see the same machine. 1 worker vs the comparator in CPU seconds (both in
    # this process); 2 workers vs 1 in wall seconds (the work happens in other processes).
    rounds = []
    for _ in range(3):
        ref = cpu_seconds(lambda: [rewrite(t) for t in texts])
        one_cpu = cpu_seconds(lambda: timed(path, 1))
        one_wall, two_wall = timed(path, 1), timed(path, 2)
        rounds.append((ref, one_cpu, one_wall, two_wall))
    ratio = statistics.median(o / r for r, o, _, _ in rounds)
    speedup = statistics.median(o / t for _, _, o, t in rounds)
    scaling = statistics.median(pooled(path, 1) / pooled(path, 2) for _ in range(3))
    one, two = min(r[2] for r in rounds), min(r[3] for r in rounds)
    print(f"corpus: {len(texts)} replies, {mb:.1f} MB")
    for label, t in (("1 worker", one), ("2 workers", two)):
        print(f"{label}: {t:.3f} s  {len(texts) / t:.0f} replies/s  {mb / t:.1f} MB/s")
    print(f"1 worker / reference_regex (CPU, median of 3 interleaved rounds): {ratio:.2f}x (target <= 3.0x); "
          f"reference {min(r[0] for r in rounds):.3f} s")
    print(f"speed-up with 2 workers: {speedup:.2f}x over the in-process single worker, {scaling:.2f}x over a pool "
          f"of one worker process (medians; target >= 1.7x on 2 cores; this machine has {os.cpu_count()} cores)")
    small, large = corpus(50, 20), corpus(400, 20)
    print(f"peak memory: {peak_rss_mb(small):.0f} MB for 50 chats, {peak_rss_mb(large):.0f} MB for 400 chats "
          "(target: independent of the number of chats)")


if __name__ == "__main__":
    main()
