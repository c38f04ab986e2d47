"""`tagengine replay --dask ADDRESS | local:N`: the batch replay on a Dask cluster (DK-1..).

Inputs are JSONL files (paths, globs or fsspec URLs). Each is cut into partitions, byte ranges of about
`partition_bytes`; a partition owns the lines that *start* inside its range (DK-2). One Dask task replays
one partition, its chats in order, and writes one output file, atomically: `OUT/<iiii>-<name>/part-<jjjjj>.jsonl`.
The parts of an input, concatenated in order, are byte for byte what `tagengine replay` writes for it (the
same `replay_batch`, the same line numbers: a first pass counts each range's newlines, DK-3). Then
`OUT/summary.json` names every input, partition, output file, bad line and unreadable input.

A task whose worker dies is run again by Dask; it rewrites its whole part from the start and replaces the
file in one rename, so a chat is neither lost nor written twice (DK-4). Only this module imports dask and
distributed, and only `replay --dask` imports this module.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fsspec
from distributed import Client, LocalCluster, as_completed
from fsspec.implementations.local import LocalFileSystem

from .batch import BATCH_BYTES, BATCH_MAX, MAX_CHAT_BYTES, LineReader, Summary, line_bytes, replay_batch
from .files import atomic_writer, strip_bom
from .records import frozen
from .ruleset import Ruleset
from .states_dir import lines_of, write_states

PARTITION_MAX = 64 * 1024 * 1024  # bytes of input per partition, at most (DK-2)
PARTITION_MIN = 1024 * 1024  # ...and at least, unless `partition_bytes` says otherwise
PARTS_PER_THREAD = 4  # partitions per worker thread, so a slow one does not leave a core idle at the end
CHUNK = 1 << 20  # bytes per read
SUMMARY = "summary.json"
_LOCAL = re.compile(r"local:(\d+)")
_RULESETS: dict[str, Ruleset] = {}  # per worker process: the ruleset by the SHA-256 of its text


@frozen
class Partition:
    """Bytes [start, end) of one input; the task owns the lines that start there."""

    input: int  # its index in the inputs
    index: int  # its index among the input's partitions
    url: str  # the input, as the summary names it
    fs: Any  # the fsspec filesystem holding the input
    path: str
    start: int
    end: int
    output: str  # the output file's path on `out_fs`


@dataclass
class DaskSummary(Summary):
    """What a Dask replay did: `summary.json`, and the text on stderr. `errors` are bad lines, `INPUT: line N: ...`."""

    bad_inputs: list[str] = field(default_factory=list)  # inputs that could not be read, with why
    inputs: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)

    def doc(self) -> dict[str, Any]:
        return {"chats": self.chats, "receipts": dict(sorted(self.receipts.items())), "errors": self.errors,
                "bad_inputs": self.bad_inputs, "inputs": self.inputs, "partitions": self.partitions}

    def __str__(self) -> str:
        text = (f"{self.chats} chats replayed in {len(self.partitions)} partition(s) of {len(self.inputs)} "
                f"input(s); receipts: {self.counts()}; {len(self.errors)} bad line(s); "
                f"{len(self.bad_inputs)} unreadable input(s)")
        return text + "".join(f"\n  {e}" for e in self.bad_inputs + self.errors)


def connect(address: str) -> tuple[Client, LocalCluster | None]:
    """`local:N`: a cluster of N worker processes with one thread each on this machine (closed by the
    caller); anything else is a scheduler's address. ValueError for a `local:N` out of 1..64, before any
    process starts (a scheduler's address is checked by connecting)."""
    m = _LOCAL.fullmatch(address)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= 64:
            raise ValueError(f"--dask {address}: local:N takes 1 to 64 worker processes")
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0")  # loopback only; any free port
        return Client(cluster), cluster
    return Client(address), None


# --- on the workers --------------------------------------------------------------------------------------


def _worker_ruleset(text: bytes, digest: str) -> Ruleset:
    """The ruleset travels as its text (a worker may not see the client's files), loaded once per process."""
    rs = _RULESETS.get(digest)
    if rs is None:
        rs = _RULESETS[digest] = Ruleset.from_json(text, "<ruleset>")
    return rs


def _ruleset_text(ruleset_path: str) -> tuple[bytes, str]:
    """The ruleset's text and its SHA-256, for the workers; RulesetError naming every problem, here, first."""
    with open(ruleset_path, "rb") as f:
        text = f.read()
    Ruleset.from_json(text, ruleset_path)
    return text, hashlib.sha256(text).hexdigest()


def count_newlines(fs: Any, path: str, start: int, end: int) -> int:
    """Newlines in bytes [start, end) of the file; -1 when it cannot be read (its partitions are then named
    unreadable by `replay_partition`, and the run goes on)."""
    n = 0
    try:
        with fs.open(path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0:
                chunk = f.read(min(CHUNK, left))
                if not chunk:
                    break
                n += chunk.count(b"\n")
                left -= len(chunk)
    except Exception:  # any storage backend's failure: the input is named unreadable, never the run lost
        return -1
    return n


def owned_lines(f: Any, start: int, end: int, newlines_before: int,
                limit: int = MAX_CHAT_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line or None when over `limit`) of the non-blank lines that start in [start, end);
    `f` is the file at offset max(start - 1, 0), and `newlines_before` counts the newlines before that
    offset. Blank lines count in the numbering and are skipped, as `tagengine replay` does."""
    reader = LineReader(lambda: f.read(CHUNK))
    pos, seen = max(start - 1, 0), newlines_before
    if start > 0:  # the tail of the line before ours (nothing but its newline when one ends at start - 1)
        got = reader.line(0)
        if got is None:
            return
        pos, seen = pos + got[1], seen + 1
    while pos < end:
        got = reader.line(limit)
        if got is None:
            return
        data, used = got
        number = seen + 1
        if number == 1 and data is not None:
            data = strip_bom(data)  # a leading BOM is not part of line 1 (F-6)
        pos, seen = pos + used, seen + 1
        if data is None or data.strip():
            yield number, data


def _why(e: Exception) -> str:
    """An OSError says what it is; another backend's exception is named by its type too."""
    return str(e) if isinstance(e, OSError) else f"{type(e).__name__}: {e}"


def replay_partition(text: bytes, digest: str, part: Partition, newlines_before: int, out_fs: Any,
                     ) -> dict[str, Any]:
    """Replay one partition into its output file (replaced whole, DK-4); what it did, for the summary. A
    failed read or write gives `{"unreadable": why}` and no file; a bad line is named, never raised."""
    where = f"{part.url} (partition {part.index}, bytes {part.start}-{part.end}, to {part.output})"
    if newlines_before < 0:
        return {"unreadable": f"{where}: its lines could not be counted (the input could not be read)"}
    rs = _worker_ruleset(text, digest)
    done = Summary()
    try:
        with part.fs.open(part.path, "rb") as f, _atomic(out_fs, part.output) as out:
            f.seek(max(part.start - 1, 0))
            batch: list[tuple[int, bytes | None]] = []
            held = 0
            for item in owned_lines(f, part.start, part.end, newlines_before):
                batch.append(item)
                held += len(item[1] or b"")
                if held >= BATCH_BYTES or len(batch) >= BATCH_MAX:
                    _flush(rs, batch, out, done)
                    batch, held = [], 0
            if batch:
                _flush(rs, batch, out, done)
    except Exception as e:  # reading the input or writing its part, on any backend: named
        return {"unreadable": f"{where}: {_why(e)}"}
    return {"chats": done.chats, "errors": [f"{part.url}: {e}" for e in done.errors], "receipts": done.receipts}


PerFile = Callable[[Ruleset, Any, str, str], tuple[bytes, list[str], dict[str, int]]]
"""`per_file(rs, fs, path, url)`: one whole input replayed (a SillyTavern chat file): (its output, errors, receipt
counts), never raising; the errors name the input themselves (DK-10)."""


def replay_whole_file(text: bytes, digest: str, part: Partition, out_fs: Any, per_file: PerFile,
                      ) -> dict[str, Any]:
    """One input that is one chat (`replay --format st --dask`, DK-10) replayed into its one part, written as
    `replay_partition` writes (DK-4); a malformed chat is an error line and an error, a failed write is named."""
    data, errors, receipts = per_file(_worker_ruleset(text, digest), part.fs, part.path, part.url)
    try:
        out_fs.makedirs(posixpath.dirname(part.output), exist_ok=True)
        with _atomic(out_fs, part.output) as out:
            out.write(data)
    except Exception as e:  # writing its part, on any storage backend: named, never the run lost
        return {"unreadable": f"{part.url} (to {part.output}): {_why(e)}"}
    return {"chats": 1, "errors": errors, "receipts": receipts}


def _flush(rs: Ruleset, batch: list[tuple[int, bytes | None]], out: Any, done: Summary) -> None:
    data, errors, receipts = replay_batch(rs, batch)
    out.write(data)
    done.add(len(batch), errors, receipts)


@contextmanager
def _atomic(fs: Any, path: str) -> Iterator[Any]:
    """A file on `fs` that appears at `path` whole or not at all: `atomic_writer` for a local file; elsewhere
    a temporary name beside it, moved over `path` once complete (one PUT on an object store)."""
    if isinstance(fs, LocalFileSystem):
        with atomic_writer(path) as f:
            yield f
        return
    tmp = f"{path}.{secrets.token_hex(4)}.tmp"
    try:
        with fs.open(tmp, "wb") as f:
            yield f
        fs.mv(tmp, path)
    finally:
        if fs.exists(tmp):
            fs.rm(tmp)


# --- on the client -------------------------------------------------------------------------------------


def _has_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def expand(inputs: list[str]) -> tuple[list[tuple[str, Any, str, int]], list[str]]:
    """(url, fs, path, size) of every input file, globs expanded in sorted order; and the inputs that
    name no readable file, each with why."""
    found: list[tuple[str, Any, str, int]] = []
    bad: list[str] = []
    for spec in inputs:
        try:
            fs, path = fsspec.core.url_to_fs(spec)
            paths = sorted(fs.glob(path)) if _has_glob(path) else [path]
            if not paths:
                bad.append(f"{spec}: no file matches")
            for p in paths:
                info = fs.info(p)
                if info.get("type") != "file":
                    bad.append(f"{spec if p == path else p}: not a file")
                    continue
                url = spec if p == path else fs.unstrip_protocol(p) if "://" in spec else p
                found.append((url, fs, p, int(info["size"])))
        except (OSError, ValueError, ImportError) as e:
            bad.append(f"{spec}: {e}")
    return found, bad


def plan(files: list[tuple[str, Any, str, int]], out_dir: str, partition_bytes: int | None) -> list[Partition]:
    """The partitions of the inputs; `partition_bytes` None: each input is one partition (DK-10). The input
    folders' numbers have at least 4 digits, more when there are more inputs, so that they sort in order."""
    parts = []
    width = max(4, len(str(len(files) - 1)))
    for i, (url, fs, path, size) in enumerate(files):
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", posixpath.basename(path.rstrip("/")))[:80] or "input"
        count = 1 if partition_bytes is None else max(1, -(-size // partition_bytes))
        for j in range(count):
            start, end = (0, size) if partition_bytes is None else \
                (j * partition_bytes, min(size, (j + 1) * partition_bytes))
            out = posixpath.join(out_dir, f"{i:0{width}d}-{name}", f"part-{j:05d}.jsonl")
            parts.append(Partition(i, j, url, fs, path, start, end, out))
    return parts


def choose_partition_bytes(total: int, threads: int) -> int:
    """About PARTS_PER_THREAD partitions per thread, within PARTITION_MIN..PARTITION_MAX (DK-2)."""
    return max(PARTITION_MIN, min(PARTITION_MAX, -(-total // max(1, threads * PARTS_PER_THREAD))))


def replay_dask(ruleset_path: str, inputs: list[str], out_dir: str, client: Client, *,
                partition_bytes: int | None = None,
                progress: Callable[[int, int], None] | None = None,
                on_total: Callable[[int], None] | None = None,
                on_done: Callable[[dict[str, Any]], None] | None = None,
                per_file: PerFile | None = None) -> DaskSummary:
    """Replay `inputs` on `client`'s cluster into `out_dir` (a path or fsspec URL, empty or absent); the
    summary is also written there as `summary.json`. `progress(bytes, chats)` follows each partition done;
    `on_total(bytes)` is called once the inputs are listed; `on_done(result)` after each partition (tests use
    it to kill a worker mid-run). With `per_file` each input is one chat, one task (SillyTavern chat files,
    DK-10). RulesetError for a bad ruleset."""
    text, digest = _ruleset_text(ruleset_path)
    out_fs, out_root = fsspec.core.url_to_fs(out_dir)
    files, bad = expand(inputs)
    summary = DaskSummary(bad_inputs=bad)
    total = sum(f[3] for f in files)
    if on_total is not None:
        on_total(total)
    out_fs.makedirs(out_root, exist_ok=True)  # summary.json goes there even when no input can be read
    if per_file is not None:
        parts = plan(files, out_root, None)
        futures = client.map(replay_whole_file, [text] * len(parts), [digest] * len(parts), parts,
                             [out_fs] * len(parts), [per_file] * len(parts), pure=False)
    else:
        if partition_bytes is None:
            partition_bytes = choose_partition_bytes(total, sum(client.nthreads().values()))
        parts = plan(files, out_root, max(1, partition_bytes))
        futures = _replay_ranges(client, text, digest, parts, out_fs)
    index = {f.key: k for k, f in enumerate(futures)}
    results: list[dict[str, Any]] = [{} for _ in parts]
    for fut in as_completed(futures):
        k = index[fut.key]
        results[k] = fut.result()
        if progress is not None:
            progress(parts[k].end - parts[k].start, int(results[k].get("chats", 0)))
        if on_done is not None:
            on_done(results[k])
    per_input: dict[int, dict[str, Any]] = {
        i: {"input": url, "bytes": size, "chats": 0, "bad_lines": 0, "outputs": []}
        for i, (url, _fs, _path, size) in enumerate(files)}
    for p, r in zip(parts, results, strict=True):
        entry = {"input": p.url, "partition": p.index, "start": p.start, "end": p.end}
        if "unreadable" in r:
            summary.bad_inputs.append(r["unreadable"])
            entry["unreadable"] = r["unreadable"]
        else:
            output = out_fs.unstrip_protocol(p.output) if "://" in out_dir else p.output
            entry.update(output=output, chats=r["chats"], bad_lines=len(r["errors"]))
            summary.add(r["chats"], r["errors"], r["receipts"])
            per_input[p.input]["chats"] += r["chats"]
            per_input[p.input]["bad_lines"] += len(r["errors"])
            per_input[p.input]["outputs"].append(output)
        summary.partitions.append(entry)
    summary.inputs = list(per_input.values())
    if parts:  # no task of ours runs any more (DK-4): a killed attempt's temporary files go
        for pattern in (".part-*.tmp", "part-*.tmp"):
            for leftover in out_fs.glob(posixpath.join(out_root, "*", pattern)):
                out_fs.rm(leftover)
    with _atomic(out_fs, posixpath.join(out_root, SUMMARY)) as f:
        f.write(line_bytes(summary.doc()) + b"\n")
    return summary


def _replay_ranges(client: Client, text: bytes, digest: str, parts: list[Partition], out_fs: Any) -> list[Any]:
    """The futures of the byte-range partitions' replays (DK-2, DK-3)."""
    for d in sorted({posixpath.dirname(p.output) for p in parts}):
        out_fs.makedirs(d, exist_ok=True)
    # Pass 1: newlines per range [start - 1, end - 1), so each task knows its first line's number (DK-3).
    counted = client.map(count_newlines, [p.fs for p in parts], [p.path for p in parts],
                         [max(p.start - 1, 0) for p in parts], [max(p.end - 1, 0) for p in parts],
                         pure=False)
    counts = client.gather(counted)
    del counted  # released: a lost worker's counts are not computed again
    before, running = [], 0
    for k, p in enumerate(parts):
        if p.index == 0:
            running = 0
        if counts[k] < 0:
            running = -1  # unreadable: this partition and the input's later ones are named, not replayed
        before.append(running)
        running = running + counts[k] if running >= 0 else -1
    # Pass 2: one task per partition.
    return list(client.map(replay_partition, [text] * len(parts), [digest] * len(parts), parts, before,
                           [out_fs] * len(parts), pure=False))


def _run_item(text: bytes, digest: str, item: tuple[Any, ...], fn: Callable[..., Any]) -> Any:
    return fn(_worker_ruleset(text, digest), *item)


def map_chats(ruleset_path: str, address: str, items: list[tuple[Any, ...]], fn: Callable[..., Any],
              err: Any, client: Client | None = None) -> list[Any]:
    """`fn(rs, *item)` for each item, one Dask task each, on `address`'s cluster (or `client`'s); the results in
    the items' order (`st export --dask`, DK-13). `fn` writes its own file atomically and never raises, so a
    rerun after a killed worker writes the same bytes (DK-4)."""
    from .progress import progress_bar

    text, digest = _ruleset_text(ruleset_path)
    own = client is None
    cluster = None
    if client is None:
        client, cluster = connect(address)
    bar = progress_bar(err, total=len(items))
    try:
        futures = client.map(_run_item, [text] * len(items), [digest] * len(items), items,
                             [fn] * len(items), pure=False)
        if bar is not None:
            for _ in as_completed(futures):
                bar.done(1, 1)
        return list(client.gather(futures))
    finally:
        if bar is not None:
            bar.close()
        if own:
            client.close()
            if cluster is not None:
                cluster.close()


def out_dir_problem(out_dir: str) -> str | None:
    """Why `out_dir` cannot take a replay's parts (it holds files already, or its file system's package is
    not installed), else None."""
    try:
        fs, root = fsspec.core.url_to_fs(out_dir)
    except ImportError as e:  # `s3://` without s3fs...
        return f"{out_dir}: {e}"
    if not fs.exists(root):
        return None
    if not fs.isdir(root):
        return f"{out_dir} is not a directory"
    if fs.ls(root):
        return f"{out_dir} is not empty: a Dask replay writes into an empty or new directory"
    return None


def replay_command(ruleset_path: str, inputs: list[str], out_dir: str, address: str,
                   partition_bytes: int | None, err: Any, per_file: PerFile | None = None,
                   states_dir: str | None = None) -> int:
    """The CLI's `replay --dask`: exit 1 when a line or an input was bad, else 0. ValueError for an output
    directory that holds files or a `local:N` out of range. `states_dir`: each chat's final state written
    there too, read back from the parts in the summary's order (as from a local replay's one output, DK-15)."""
    from .progress import progress_bar

    Ruleset.load(ruleset_path)  # RulesetError naming every problem, before a cluster starts
    problem = out_dir_problem(out_dir)
    if problem:
        raise ValueError(problem)
    client, cluster = connect(address)
    bar = progress_bar(err, unit="B")
    try:
        summary = replay_dask(ruleset_path, inputs, out_dir, client, partition_bytes=partition_bytes,
                              progress=bar.done if bar is not None else None,
                              on_total=bar.total if bar is not None else None, per_file=per_file)
    finally:
        if bar is not None:
            bar.close()
        client.close()
        if cluster is not None:
            cluster.close()
    err.write(f"{summary}\nwrote {len(summary.partitions)} part(s) and {SUMMARY} to {out_dir}\n")
    if states_dir is not None:
        write_states(part_lines([p["output"] for p in summary.partitions if "output" in p]), states_dir, err)
    return 1 if summary.errors or summary.bad_inputs else 0


def part_lines(outputs: list[str]) -> Iterator[tuple[str, int, bytes]]:
    """The lines of the parts (paths or fsspec URLs), one part after the other."""
    for output in outputs:
        with fsspec.open(output, "rb") as f:
            yield from lines_of(output, f)
