"""Replay benchmark (issue: middleware and batch): the make_corpus corpus (500 chats x 20 turns, issue 30)
through `tagengine replay` with 1 and 2 workers: replies/s, MB/s, the ratio to
../shared/bench/reference_regex.py in the same run (target: 1 worker <= 3.0x; 2 workers >= 1.7x
faster than 1), and peak memory for a small and a large corpus (target: independent of the count).
Beside the wall times, each worker's CPU seconds (read from /proc before the pool ends) and the parent's:
on a machine whose cores other work also uses, the wall speed-up says as much about the neighbours as
about the replay, and the CPU split says what two free cores would give.

The Dask section (issue 16; `python benchmarks/replay.py dask` runs it alone): a large corpus (BENCH_DASK_CHATS
chats of 20 turns, default 2600, about 300 MB) replayed by one in-process worker, by our own pool of two
processes, and by `replay --dask` on a LocalCluster of two worker processes (one thread each), in interleaved
rounds; targets: Dask >= 1.6x one worker, within 1.3x of our pool; Dask's output equals the local one byte
for byte; each Dask worker's peak memory flat in the number of chats."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import BENCH, CACHE, corpus, cpu_seconds, reference_rewrite, replies

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
    """The replaying process's own peak (VmHWM): getrusage's ru_maxrss would also count this benchmark's
    own size when it forked the child, which holds the whole corpus."""
    code = ("import os; from tagengine._internal.batch import replay; "
            f"replay({str(BENCH / 'bench_ruleset.json')!r}, open({str(path)!r}), open(os.devnull, 'w'), 1); "
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return int(out.strip()) / 1024


class WorkerClock:
    """The CPU seconds of each worker of the next pools, read from /proc just before each pool ends (Linux)."""

    def __init__(self) -> None:
        import multiprocessing
        import multiprocessing.pool

        self.last: list[float] = []
        real = multiprocessing.pool.Pool.terminate

        def terminate(pool: Any) -> None:
            children = multiprocessing.active_children()  # the pool's workers: this benchmark starts no other
            self.last = [c for c in (_proc_cpu(p.pid) for p in children if p.pid is not None) if c is not None]
            real(pool)

        multiprocessing.pool.Pool.terminate = terminate  # type: ignore[method-assign]


def _proc_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    path = corpus(500, 20)
    texts = replies(path)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rewrite = reference_rewrite()
    clock = WorkerClock()
    timed(path, 1)  # warm the caches of this process the way a long batch would
    # Interleaved rounds, so all see the same machine. 1 worker vs the comparator in CPU seconds (both in
    # this process); 2 workers vs 1 in wall seconds (the work happens in other processes).
    rounds = []
    for _ in range(5):
        ref = cpu_seconds(lambda: [rewrite(t) for t in texts])
        one_cpu = cpu_seconds(lambda: timed(path, 1))
        one_wall = timed(path, 1)
        parent = time.process_time()
        two_wall = timed(path, 2)
        parent = time.process_time() - parent
        rounds.append((ref, one_cpu, one_wall, two_wall, max(clock.last, default=0.0), sum(clock.last), parent))
    ratio = statistics.median(r[1] / r[0] for r in rounds)
    speedups = [r[2] / r[3] for r in rounds]
    scaling = statistics.median(pooled(path, 1) / pooled(path, 2) for _ in range(3))
    one, two = min(r[2] for r in rounds), min(r[3] for r in rounds)
    print(f"corpus: {len(path.read_text().splitlines())} chats, {len(texts)} replies, {mb:.1f} MB")
    for label, t in (("1 worker", one), ("2 workers", two)):
        print(f"{label}: {t:.3f} s  {len(texts) / t:.0f} replies/s  {mb / t:.1f} MB/s")
    print(f"1 worker / reference_regex (CPU, median of {len(rounds)} interleaved rounds): {ratio:.2f}x (target "
          f"<= 3.0x); reference {min(r[0] for r in rounds):.3f} s")
    print(f"speed-up with 2 workers, wall, round by round: {', '.join(f'{s:.2f}' for s in speedups)}; median "
          f"{statistics.median(speedups):.2f}x over the in-process single worker, {scaling:.2f}x over a pool of one "
          f"worker process (target >= 1.7x on 2 cores; this machine has {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f})")
    if all(r[4] for r in rounds):
        busiest = statistics.median(r[4] for r in rounds)
        one_cpu, parent = statistics.median(r[1] for r in rounds), statistics.median(r[6] for r in rounds)
        print(f"CPU seconds (medians): 1 worker {one_cpu:.3f}; 2 workers {statistics.median(r[5] for r in rounds):.3f} "
              f"in all, the busiest {busiest:.3f}, the parent {parent:.3f}: on 2 free cores about "
              f"{one_cpu / (busiest + parent / 2):.2f}x (one worker's CPU over the busiest worker's plus half the "
              "parent's, which shares the cores)")
    small, large = corpus(50, 20), corpus(400, 20)
    print(f"peak memory: {peak_rss_mb(small):.0f} MB for 50 chats, {peak_rss_mb(large):.0f} MB for 400 chats "
          "(target: independent of the number of chats)")


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (a pool's workers, once closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def dask_local(path: Path, out: Path, workers: int = 1) -> tuple[float, float]:
    """(wall, CPU) seconds of `tagengine replay IN -o OUT --workers N`: in this process (1), or our own pool."""
    with path.open("rb") as src, out.open("wb") as sink:
        t, c = time.perf_counter(), _cpu()
        replay(str(BENCH / "bench_ruleset.json"), src, sink, workers=workers)
        return time.perf_counter() - t, _cpu() - c


def _worker_cpu() -> float:
    t = os.times()
    return t.user + t.system


def dask_run(client: Any, path: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of `replay --dask`: the CPU of the workers and of this process (client and
    scheduler), cluster start not counted."""
    import shutil

    from tagengine._internal.batch_dask import replay_dask

    shutil.rmtree(out, ignore_errors=True)
    before = sum(client.run(_worker_cpu).values())
    t, c = time.perf_counter(), _cpu()
    replay_dask(str(BENCH / "bench_ruleset.json"), [str(path)], str(out), client)
    wall, cpu = time.perf_counter() - t, _cpu() - c
    return wall, cpu + sum(client.run(_worker_cpu).values()) - before


def dask_cluster() -> tuple[Any, Any, float]:
    from tagengine._internal.batch_dask import connect

    t = time.perf_counter()
    client, cluster = connect("local:2")  # what `replay --dask local:2` starts
    return client, cluster, time.perf_counter() - t


def _peak_kb() -> int:
    """VmHWM: this address space's peak resident size (a spawned worker's own, not its parent's)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def dask_main() -> None:
    import hashlib
    import tempfile

    chats = int(os.environ.get("BENCH_DASK_CHATS", "2600"))
    t = time.perf_counter()
    path = corpus(chats, 20)
    made = time.perf_counter() - t
    mb = path.stat().st_size / 1e6
    print(f"dask corpus: {chats} chats x 20 turns, {mb:.0f} MB (made or found in {made:.0f} s)")
    with tempfile.TemporaryDirectory(prefix="bench-dask-", dir=CACHE) as tmp:
        local_out, pool_out, dask_out = Path(tmp, "local.jsonl"), Path(tmp, "pool.jsonl"), Path(tmp, "dask")
        client, cluster, started = dask_cluster()
        rounds = []
        try:
            for _ in range(int(os.environ.get("BENCH_DASK_ROUNDS", "2"))):
                rounds.append((dask_local(path, local_out), dask_local(path, pool_out, workers=2),
                               dask_run(client, path, dask_out)))
        finally:
            client.close()
            cluster.close()
        parts = sorted((dask_out / f"0000-{path.name}").iterdir())
        digest = hashlib.sha256()
        for p in parts:
            digest.update(p.read_bytes())
        same = digest.hexdigest() == hashlib.sha256(local_out.read_bytes()).hexdigest()
        (one, one_cpu), (pool, pool_cpu), (dk, dk_cpu) = (min(r[i] for r in rounds) for i in range(3))
        print(f"wall (best of {len(rounds)}): 1 worker {one:.1f} s ({mb / one:.1f} MB/s); our 2-process pool "
              f"{pool:.1f} s; Dask, 2 worker processes {dk:.1f} s in {len(parts)} partitions (cluster start "
              f"{started:.1f} s, not counted)")
        print(f"CPU seconds (best): 1 worker {one_cpu:.1f}, our pool {pool_cpu:.1f}, Dask {dk_cpu:.1f} (workers + "
              f"client + scheduler): {mb / one_cpu:.1f} MB per CPU second for 1 worker, {mb / dk_cpu:.1f} for Dask")
        speedup = statistics.median(r[0][0] / r[2][0] for r in rounds)
        print(f"Dask vs 1 worker, wall: {speedup:.2f}x (target >= 1.6x); Dask / our pool, wall: "
              f"{statistics.median(r[2][0] / r[1][0] for r in rounds):.2f}x (target <= 1.3x); our pool vs 1 worker: "
              f"{statistics.median(r[0][0] / r[1][0] for r in rounds):.2f}x (what this machine's spare cores give; "
              f"medians of {len(rounds)} interleaved rounds; load average now {os.getloadavg()[0]:.1f})")
        print(f"on 2 free cores Dask would be about {2 * one_cpu / dk_cpu:.2f}x one worker (2 x the ratio of "
              f"their CPU seconds; partitions balanced); Dask output == local output, byte for byte: {same}")
        for n in (max(50, chats // 20), chats):  # a fresh cluster each, so VmHWM is this run's
            small = corpus(n, 20)
            client, cluster, _ = dask_cluster()
            try:
                dask_run(client, small, Path(tmp, f"mem-{n}"))
                peaks = sorted(v / 1024 for v in client.run(_peak_kb).values())
            finally:
                client.close()
                cluster.close()
            print(f"Dask worker peak memory, {n} chats ({small.stat().st_size / 1e6:.0f} MB): "
                  + ", ".join(f"{p:.0f} MB" for p in peaks) + " (target: flat in the number of chats)")


if __name__ == "__main__":
    if sys.argv[1:] == ["dask"]:
        dask_main()
    else:
        main()
        dask_main()
