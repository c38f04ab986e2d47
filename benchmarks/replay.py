"""Replay benchmark (issue: middleware and batch): the make_corpus corpus (200 chats x 20 turns)
through `tagengine replay` with 1 and 2 workers: replies/s, MB/s, the ratio to
../shared/bench/reference_regex.py in the same run (target: 1 worker <= 3.0x; 2 workers >= 1.7x
faster than 1), and peak memory for a small and a large corpus (target: independent of the count)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import BENCH, corpus, reference_seconds, replies

from tagengine.batch import replay


def timed(path: Path, workers: int) -> float:
    with path.open(encoding="utf-8") as src, open(os.devnull, "w", encoding="utf-8") as sink:
        t = time.perf_counter()
        replay(str(BENCH / "bench_ruleset.json"), src, sink, workers=workers)
        return time.perf_counter() - t


def peak_rss_mb(path: Path) -> float:
    code = ("import sys, os, resource; from tagengine.batch import replay; "
            f"replay({str(BENCH / 'bench_ruleset.json')!r}, open({str(path)!r}), open(os.devnull, 'w'), 1); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return int(out.strip()) / 1024


def main() -> None:
    path = corpus()
    texts = replies(path)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    timed(path, 1)  # warm the caches of this process the way a long batch would
    # reference, 1 worker and 2 workers interleaved three times, so all see the same machine
    runs = [(reference_seconds(path), timed(path, 1), timed(path, 2)) for _ in range(3)]
    ref = min(r for r, _, _ in runs)
    one = min(o for _, o, _ in runs)
    two = min(t for _, _, t in runs)
    print(f"corpus: {len(texts)} replies, {mb:.1f} MB")
    for label, t, k in (("1 worker", one, 1), ("2 workers", two, 2)):
        ratios = sorted(run[k] / run[0] for run in runs)
        print(f"{label}: {t:.3f} s  {len(texts) / t:.0f} replies/s  {mb / t:.1f} MB/s  ratio to reference "
              f"(median of 3 interleaved runs) {ratios[1]:.2f}x")
    print(f"reference_regex: {ref:.3f} s (target: 1 worker <= 3.0x)")
    speedups = sorted(o / t for _, o, t in runs)
    print(f"speed-up with 2 workers: {speedups[1]:.2f}x (median; target >= 1.7x on 2 cores; this machine has "
          f"{os.cpu_count()} cores)")
    small, large = corpus(50, 20), corpus(400, 20)
    print(f"peak memory: {peak_rss_mb(small):.0f} MB for 50 chats, {peak_rss_mb(large):.0f} MB for 400 chats "
          "(target: independent of the number of chats)")


if __name__ == "__main__":
    main()
