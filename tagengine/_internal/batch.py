"""`tagengine replay`: reprocess transcripts. Chats run in parallel processes, each chat in order.

Input is JSONL, one chat per line: `{"id", "characters" | "state" | "start", "messages"}` (the shape
`make_corpus.py` writes). Output is JSONL in input order: `{"id", "characters"? , "start"?, "messages",
"state", "receipts"}` with every assistant reply rewritten, the final state, and receipts counted by
result; or `{"id", "error"}` for a bad line while the rest go on. The starting point is kept in the
output, so replaying the output gives the same output (DEC-5). Memory stays flat: lines are read,
processed and written in bounded batches.

Every failure of one line is caught and named with its line number, and the rest go on (F-4); a line
over MAX_CHAT_BYTES is refused unread. Input is read with plain reads, never mapped, so a file that
changes underneath gives bad lines, not a crash (F-13). Roles match without case (F-10).
"""

from __future__ import annotations

import functools
import gc
import io
import json
import math
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

import orjson

from . import ordered_pool
from .commands import apply_reply
from .errors import ProblemsError
from .files import json_problem, strip_bom
from .ruleset import Ruleset
from .ruleset.source import ruleset_bytes
from .state import GameState, from_json
from .tags.parse import parser
from .text import escaped_surrogate, writable

BATCH_PER_WORKER = 4  # chats per batch handed to a worker, at least
BATCH_BYTES = 64 * 1024  # ...and until the batch holds this much input: tiny chats go 100s at a time (F-14)
BATCH_MAX = 4096  # ...but never more chats than this in one batch
TAIL_SHARES = 2  # ...nor, near the end, more than 1/(this x workers) of the input left: the processes end together
TAIL_BYTES = 4096  # ...down to one chat or this much: a batch's own cost stays small beside its chats'
MAX_CHAT_BYTES = 64 * 1024 * 1024  # one chat (one line); a longer line is named, not read (F-5)
_RULESET: Ruleset | None = None


_LOADED_FROM: tuple[str, bytes] | None = None  # the file `_RULESET` was loaded from, and its bytes then
_REPLAYED_WITH: Ruleset | None = None  # the ruleset this process has replayed a file with: its caches are warm


def _init(ruleset_path: str) -> None:
    """The ruleset file as it is now, loaded again only when its path or its bytes changed, so a caller that replays
    more than once keeps what the first replay warmed, and reads the file's edits; a forked worker inherits the
    parent's, parser included."""
    global _RULESET, _LOADED_FROM
    data = ruleset_bytes(ruleset_path)
    if _RULESET is None or (ruleset_path, data) != _LOADED_FROM:
        _RULESET = Ruleset.from_file(data, ruleset_path)
        _LOADED_FROM = (ruleset_path, data)


def _init_worker(ruleset_path: str) -> None:
    """A pool worker's start: a forked one keeps the ruleset the parent loaded and checked, whatever the file holds
    by now (an edit, or a file half saved, would give the workers other rules than the parent's, or none); a
    spawned one has none, and loads it."""
    if _RULESET is None:
        _init(ruleset_path)


def line_doc(raw: bytes | str) -> Any:
    """A JSONL line's document: orjson when it can (replay spends a fifth of its time on JSON), the standard
    library otherwise: orjson refuses lone surrogates, which a transcript that is not clean UTF-8 may hold
    (its bytes read with surrogateescape)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
        return json.loads(text)


def line_bytes(doc: Any) -> bytes:
    """A document as a JSONL line's bytes (no newline): what `line_doc` read as text that was not UTF-8
    (surrogateescape) goes back out as the bytes it came as."""
    try:
        return orjson.dumps(doc)
    except TypeError:  # a lone surrogate carried over from a transcript that is not clean UTF-8
        text = json.dumps(doc, ensure_ascii=False)
    try:
        return text.encode("utf-8", "surrogateescape")  # bytes that were not UTF-8 go back out as they came
    except UnicodeEncodeError:  # a surrogate written as `\ud800` in the input: keep it escaped, as it came
        return json.dumps(doc, ensure_ascii=True).encode("ascii")


def replay_line(rs: Ruleset, line: bytes | str, number: int) -> dict[str, Any]:
    """One chat: its output object, or `{"id", "error"}` naming what is wrong. Never raises (F-4)."""
    try:
        chat = line_doc(line)
    except (RecursionError, ValueError) as e:  # JSONDecodeError, and integers of thousands of digits
        return {"id": None, "error": f"line {number}: not JSON: {json_problem(e)}"}
    if not isinstance(chat, dict):
        return {"id": None, "error": f"line {number}: a chat is a JSON object"}
    if _surrogate_escape_in(line):  # rare: most lines go on without a walk
        lone = _escaped_surrogate_at(chat, not _is_utf8(line) if isinstance(line, bytes) else not writable(line))
        if lone is not None:  # no UTF-8 output can hold it: the chat is left out, named (TR-9)
            where, what = lone
            cid = None if where == "id" else chat.get("id")
            return {"id": cid, "error": f"line {number}: {where}: a lone surrogate ({what}) is no character"}
    return _replay_named(rs, chat, number, f"line {number}")


def _escaped_surrogate_at(doc: Any, bytes_kept: bool) -> tuple[str, str] | None:
    """(where, the surrogate as its escape) of the first text in `doc`, keys included, holding a lone surrogate
    that a JSON escape wrote (`\\udfff`); None when there is none. With `bytes_kept` (a line that was not UTF-8),
    those that stand for its bytes are not one: they go back out as they came (`line_bytes`). A loop, not a
    recursion: the document may nest as deep as JSON lets it."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            lone = escaped_surrogate(node, bytes_kept=bytes_kept)
            if lone is not None:
                return _surrogates_escaped(at or "$"), _surrogates_escaped(lone)
        elif isinstance(node, dict):
            for k in node:
                lone = escaped_surrogate(k, bytes_kept=bytes_kept)
                if lone is not None:
                    return _surrogates_escaped(f"{at}.{k}" if at else k), _surrogates_escaped(lone)
            stack.extend((v, f"{at}.{k}" if at else k) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


def _surrogates_escaped(text: str) -> str:
    """`text` with its lone surrogates as JSON escapes, so an error that names one can be written anywhere."""
    return text if writable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _surrogate_escape_in(line: bytes | str) -> bool:
    """Whether the line holds `\\ud` (in either case): the start of every JSON escape of a surrogate."""
    if isinstance(line, bytes):
        return b"\\ud" in line or b"\\uD" in line
    return "\\ud" in line or "\\uD" in line


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _replay_named(rs: Ruleset, chat: dict[str, Any], number: int, where: str) -> dict[str, Any]:
    """`_replay`, or `{"id", "error"}` with the error after `where`. Never raises (F-4)."""
    cid = chat.get("id")
    try:
        return _replay(rs, chat, cid, number)
    except ProblemsError as e:
        return {"id": cid, "error": f"{where}: " + "; ".join(str(p) for p in e.problems[:5])}
    except (ValueError, TypeError, KeyError) as e:
        return {"id": cid, "error": f"{where}: {e}"}
    except Exception as e:  # anything else is a bug, but it is this chat's: name it and go on
        return {"id": cid, "error": f"{where}: {type(e).__name__}: {e}"}


def _replay(rs: Ruleset, chat: dict[str, Any], cid: Any, number: int) -> dict[str, Any]:
    out: dict[str, Any] = {"id": cid}
    if "start" in chat:
        state = from_json(rs, chat["start"], f"line {number}: start")
        out["start"] = chat["start"]
    elif "characters" in chat:
        names = chat["characters"]
        if not isinstance(names, list):
            raise ValueError("characters is a list of names")
        state = GameState.new(rs, names)
        out["characters"] = names
    elif "state" in chat:
        state = from_json(rs, chat["state"], f"line {number}: state")
        out["start"] = chat["state"]
    else:
        raise ValueError('a chat names its "characters", or gives a starting "state"')
    messages = chat.get("messages")
    if not isinstance(messages, list):
        raise ValueError("messages is a list of {role, content}")
    counts: dict[str, int] = {}
    rewritten = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] is not {{role, content}}")
        role = m.get("role")
        if isinstance(role, str) and role.lower() == "assistant":
            applied = apply_reply(rs, state, m["content"])
            state = applied.state
            for r in applied.receipts:
                counts[r.result] = counts.get(r.result, 0) + 1
            m = {**m, "content": applied.text}
        rewritten.append(m)
    out.update(messages=rewritten, state=state.to_json(), receipts=counts)
    return out


def _work(batch: list[tuple[int, bytes | None]]) -> tuple[bytes, list[str], dict[str, int]]:
    """A batch of raw lines -> (their output lines, errors, receipt counts). Workers get and return one
    bytes object per batch, so the parent process only moves bytes and the work itself runs in parallel."""
    assert _RULESET is not None
    return replay_batch(_RULESET, batch)


def replay_batch(rs: Ruleset, batch: list[tuple[int, bytes | None]]) -> tuple[bytes, list[str], dict[str, int]]:
    """(line number, raw line or None for one over MAX_CHAT_BYTES) items -> (their output lines, each ending
    in a newline, errors, receipt counts). The same bytes however the lines are batched: the Dask replay
    (`batch_dask.py`) calls this too, so its output is the local replay's, byte for byte."""
    out: list[bytes] = []
    errors: list[str] = []
    counts: dict[str, int] = {}
    for number, raw in batch:
        if raw is None:
            doc: dict[str, Any] = {"id": None, "error": f"line {number}: longer than {MAX_CHAT_BYTES} bytes, "
                                   "tagengine's limit for one chat; not read"}
        else:
            doc = replay_line(rs, raw, number)
        try:
            data = line_bytes(doc)
        except Exception as e:  # pragma: no cover - line_bytes falls back to ASCII JSON; this is the last guard
            doc = {"id": None, "error": f"line {number}: the output could not be written: {e}"}
            data = line_bytes(doc)
        if "error" in doc:
            errors.append(doc["error"])
        for k, v in (doc.get("receipts") or {}).items():
            counts[k] = counts.get(k, 0) + v
        out.append(data)
    return b"\n".join(out) + b"\n", errors, counts


def _work_batch(batch: list[tuple[int, bytes | None]]) -> tuple[bytes, tuple[int, list[str], dict[str, int]]]:
    """`_work` as `ordered_pool.run_ordered` calls it: (the output, (chats, errors, receipt counts))."""
    data, errors, counts = _work(batch)
    return data, (len(batch), errors, counts)


class LineReader:
    """Lines from `read()`'s pieces (b"" at the end); a line longer than the limit is skipped unheld."""

    def __init__(self, read: Callable[[], bytes]) -> None:
        self.read = read
        self.buf = b""
        self.i = 0

    def line(self, limit: int) -> tuple[bytes | None, int] | None:
        """(the line without its newline, or None if longer than `limit`; bytes consumed), None at the end."""
        parts: list[bytes] = []
        held = consumed = 0
        while True:
            nl = self.buf.find(b"\n", self.i)
            piece = self.buf[self.i: len(self.buf) if nl == -1 else nl]
            consumed += len(piece)
            held += len(piece)
            if held <= limit:
                parts.append(piece)
            else:
                parts = []
            if nl != -1:
                self.i = nl + 1
                return (b"".join(parts) if held <= limit else None), consumed + 1
            self.buf, self.i = self.read(), 0
            if not self.buf:
                if consumed == 0:
                    return None
                return (b"".join(parts) if held <= limit else None), consumed


def _take(fd: int, start: int, size: int, end: int, shares: int, cursor: Any) -> list[tuple[int, bytes | None]] | None:
    """The next batch of non-blank lines of the file `fd`, cut as `_batches` cuts them (F-14), but near `end`
    (the file's size when the run began) no more than 1/`shares` of what is left, down to one chat or
    TAIL_BYTES: the last batches are small, so no process is left finishing a large one while the others wait
    (PF-56); None at its end. `cursor`: [bytes read past `start`, lines read], shared by the processes of
    `ordered_pool.run_ordered`, which calls this under its lock. Plain reads by offset (F-13): a file that
    shrinks meanwhile gives short lines, which are bad lines."""
    pos, number = cursor[0], cursor[1]
    at = start + pos

    def read() -> bytes:
        nonlocal at
        piece = os.pread(fd, BATCH_BYTES, at)
        at += len(piece)
        return piece

    reader = LineReader(read)
    batch: list[tuple[int, bytes | None]] = []
    held = 0
    # the first batch is one chat: `run_ordered` runs it alone before it forks, unless this process is warm, to warm
    # what the children inherit (PF-30), and what runs alone is serial
    size, least = (1, 0) if number == 0 else (size, BATCH_BYTES)
    share = max(TAIL_BYTES, (end - at) // max(1, shares)) if at < end else math.inf  # past `end` (grown): no tail
    while not ((len(batch) >= size and held >= least) or len(batch) >= BATCH_MAX or (batch and held >= share)):
        got = reader.line(MAX_CHAT_BYTES)
        if got is None:
            break
        data, used = got
        pos, number = pos + used, number + 1
        if number == 1 and data is not None:
            data = strip_bom(data)  # a leading BOM is not part of line 1 (F-6)
        if data is None or data.strip():
            batch.append((number, data))
            held += len(data or b"")
    cursor[0], cursor[1] = pos, number
    return batch or None


@dataclass
class Summary:
    chats: int = 0
    errors: list[str] = field(default_factory=list)
    receipts: dict[str, int] = field(default_factory=dict)

    def add(self, chats: int, errors: list[str], receipts: dict[str, int]) -> None:
        self.chats += chats
        self.errors += errors
        for k, v in receipts.items():
            self.receipts[k] = self.receipts.get(k, 0) + v

    def counts(self) -> str:
        """The receipts counted by result, `3 applied, 1 rejected`, or `no tags`."""
        return ", ".join(f"{v} {k}" for k, v in sorted(self.receipts.items())) or "no tags"

    def __str__(self) -> str:
        text = f"{self.chats} chats replayed; receipts: {self.counts()}; {len(self.errors)} bad line(s)"
        return text + "".join(f"\n  {e}" for e in self.errors)


def _lines(stream: TextIO | BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) of the non-blank lines; None for a line over MAX_CHAT_BYTES, which is skipped
    without being held in memory."""
    raw: Any = getattr(stream, "buffer", stream)
    number = 0
    while True:
        line = raw.readline(MAX_CHAT_BYTES + 1)
        if not line:
            return
        number += 1
        data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogateescape")
        data = data.removesuffix(b"\n")  # as `_take` and the Dask replay cut lines: one output whatever the workers
        if len(data) > MAX_CHAT_BYTES:  # its bytes before the newline, a `\r` or a BOM included, as `LineReader`
            while line and not line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
                line = raw.readline(1 << 20)
            yield number, None
            continue
        if number == 1:
            data = strip_bom(data)
        if data.strip():
            yield number, data


def _batches(items: Iterable[tuple[int, bytes | None]], size: int) -> Iterator[list[tuple[int, bytes | None]]]:
    """Batches as in `_ranges`: `size` chats and BATCH_BYTES of input, or BATCH_MAX chats."""
    batch: list[tuple[int, bytes | None]] = []
    held = 0
    for item in items:
        batch.append(item)
        held += len(item[1] or b"")
        if (len(batch) >= size and held >= BATCH_BYTES) or len(batch) >= BATCH_MAX:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _regular_file(source: Any) -> tuple[int, int] | None:
    """(descriptor, where its unread part starts) of a regular file, which workers read by offsets; None
    for a pipe, a terminal or text in memory (their lines travel through the parent)."""
    raw = getattr(source, "buffer", source)
    fd = ordered_pool.file_descriptor(raw)
    try:
        if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return fd, raw.tell()
    except (OSError, ValueError):
        return None


def _in_order(pool: Any, fn: Any, tasks: Iterable[tuple[Any, int]], limit: int) -> Iterator[tuple[Any, int]]:
    """(result, size) of each task in submission order, with at most `limit` tasks in flight: enough to
    keep every worker busy, few enough that memory stays flat however many chats there are."""
    window: deque[tuple[Any, int]] = deque()
    for task, size in tasks:
        window.append((pool.apply_async(fn, (task,)), size))
        if len(window) >= limit:
            res, n = window.popleft()
            yield res.get(), n
    for res, n in window:
        yield res.get(), n


def replay(ruleset_path: str, source: TextIO | BinaryIO, sink: TextIO | BinaryIO, workers: int = 1,
           progress: TextIO | None = None, *, processes: bool = False,
           tick: Callable[[int, int], None] | None = None) -> Summary:
    """Replay every chat of `source` into `sink`, in input order, holding a bounded number of batches.
    One worker runs in this process by itself, unless `processes` asks for the parallel way even then: from a
    regular file into a descriptor, this process and `workers - 1` children each take a batch and write it in
    turn (`ordered_pool.py`, PF-13); else the lines travel through this process to a pool. A bad line is named in
    the output and the summary, never raised; RulesetError when the ruleset cannot be loaded, OSError
    when `source` or `sink` fails. `tick(chats, bad)` is called after each batch written (a progress bar)."""
    summary = Summary()
    out: Any = getattr(sink, "buffer", sink)  # bytes or text, as `binary` says
    binary = not isinstance(getattr(out, "wrapped", out), io.TextIOBase)

    def emit(data: bytes | None, errors: list[str], receipts: dict[str, int], size: int) -> None:
        if data is not None:
            out.write(data if binary else data.decode("utf-8", "surrogateescape"))
        summary.add(size, errors, receipts)
        if tick is not None:
            tick(size, len(errors))
        if progress is not None:
            progress.write(f"\rreplayed {summary.chats} chats, {len(summary.errors)} bad")
            progress.flush()

    global _REPLAYED_WITH
    _init(ruleset_path)
    if workers <= 1 and not processes:
        for batch in _batches(_lines(source), BATCH_PER_WORKER):
            emit(*_work(batch), len(batch))
        _REPLAYED_WITH = _RULESET
    else:
        parser()  # built before the fork, so no worker spends its start building it again
        here = _regular_file(source)
        if here is not None and ordered_pool.writes_ordered(sink):  # each process reads its batches, writes in order
            fd, start = here
            take = functools.partial(_take, fd, start, BATCH_PER_WORKER, os.fstat(fd).st_size, TAIL_SHARES * workers)
            ordered_pool.run_ordered(take, _work_batch, sink, max(1, workers),
                                     lambda result: emit(None, result[1], result[2], result[0]),
                                     warm=_REPLAYED_WITH is _RULESET)
            _REPLAYED_WITH = _RULESET
        else:  # stdin or a pipe, or an output without a descriptor: the lines travel through this process
            thawed = gc.get_freeze_count() == 0
            gc.freeze()  # keep the collector from touching (and so copying) every page the workers inherit
            import multiprocessing as mp  # here only: the other ways do without its imports (PF-56)

            ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
            try:
                with ctx.Pool(max(1, workers), initializer=_init_worker, initargs=(ruleset_path,)) as pool:
                    batches = ((b, len(b)) for b in _batches(_lines(source), BATCH_PER_WORKER))
                    for (data, errors, receipts), size in _in_order(pool, _work, batches, workers * 4):
                        emit(data, errors, receipts, size)
            finally:
                if thawed:
                    gc.unfreeze()  # the caller's objects are the collector's again
    if progress is not None:
        progress.write("\n")
    return summary


def replay_chat(rs: Ruleset, chat: dict[str, Any], where: str) -> dict[str, Any]:
    """One chat already read (a SillyTavern chat file: `sillytavern/chatreplay.py`): its output object as
    `replay_line` makes it, or `{"id", "error"}` with the error after `where`. Never raises (F-4)."""
    return _replay_named(rs, chat, 0, where)
