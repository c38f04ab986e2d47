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

import gc
import io
import json
import multiprocessing as mp
import os
import re
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

import orjson

from .commands import apply_reply
from .errors import ProblemsError
from .files import BOM, json_problem, strip_bom
from .ruleset import Ruleset
from .state import GameState, from_json
from .tags.parse import parser
from .text import escaped_surrogate, writable

BATCH_PER_WORKER = 4  # chats per batch handed to a worker, at least
BATCH_BYTES = 64 * 1024  # ...and until the batch holds this much input: tiny chats go 100s at a time (F-14)
BATCH_MAX = 4096  # ...but never more chats than this in one batch
MAX_CHAT_BYTES = 64 * 1024 * 1024  # one chat (one line); a longer line is named, not read (F-5)
_RULESET: Ruleset | None = None
_INK = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # what bytes.strip() keeps: a line holding one is not blank


_LOADED_FROM: str | None = None


def _init(ruleset_path: str) -> None:
    """Load the ruleset once per process; a forked worker inherits the parent's, parser included."""
    global _RULESET, _LOADED_FROM
    if _RULESET is None or ruleset_path != _LOADED_FROM:
        _RULESET = Ruleset.load(ruleset_path)
        _LOADED_FROM = ruleset_path


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


def _work_ranges(task: tuple[str, list[tuple[int, int, int]], str]) -> tuple[str, list[str], dict[str, int]]:
    """A batch given as byte ranges of the input file; the output goes to a file of its own. Nothing but
    offsets and a path crosses the process boundary, so the parent stays idle and both cores work."""
    path, ranges, out_path = task
    with open(path, "rb") as f:
        batch: list[tuple[int, bytes | None]] = []
        for number, start, end in ranges:
            if end - start > MAX_CHAT_BYTES:
                batch.append((number, None))
                continue
            f.seek(start)  # a file that shrank since gives a short line, which is then a bad line
            batch.append((number, f.read(end - start)))
    data, errors, counts = _work(batch)
    with open(out_path, "wb") as out:
        out.write(data)
    return out_path, errors, counts


def _line_spans(f: BinaryIO) -> Iterator[tuple[int, int, int, bool]]:
    """(line number, start, end, blank) of every line, read in 1 MiB pieces with plain reads: a file
    that shrinks or grows meanwhile cannot crash the reader as a mapped one does (bus error, F-13)."""
    number, offset, start, blank = 0, 0, 0, True
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        pos = 0
        if offset == 0 and chunk.startswith(BOM):  # a leading BOM is not part of line 1 (F-6)
            start = pos = 3
        while True:
            nl = chunk.find(b"\n", pos)
            if blank:  # looked for without copying the line: a chat's first byte is `{`
                blank = _INK.search(chunk, pos, len(chunk) if nl == -1 else nl) is None
            if nl == -1:
                break
            number += 1
            yield number, start, offset + nl, blank
            start, blank, pos = offset + nl + 1, True, nl + 1
        offset += len(chunk)
    if offset > start:
        yield number + 1, start, offset, blank


def _ranges(path: str, size: int) -> Iterator[list[tuple[int, int, int]]]:
    """Batches of (line number, start, end) for the non-blank lines of a file, found without copying it;
    a batch closes at `size` chats once it holds BATCH_BYTES, or at BATCH_MAX chats."""
    with open(path, "rb") as f:
        batch: list[tuple[int, int, int]] = []
        held = 0
        for number, start, end, blank in _line_spans(f):
            if blank:
                continue
            batch.append((number, start, end))
            held += end - start
            if (len(batch) >= size and held >= BATCH_BYTES) or len(batch) >= BATCH_MAX:
                yield batch
                batch, held = [], 0
        if batch:
            yield batch


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
        data = data.removesuffix(b"\n")  # as `_ranges` and the Dask replay cut lines: one output whatever the workers
        if number == 1:
            data = strip_bom(data)
        if len(data.rstrip(b"\r\n")) > MAX_CHAT_BYTES:
            while line and not line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
                line = raw.readline(1 << 20)
            yield number, None
        elif data.strip():
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


def _file_path(source: Any) -> str | None:
    """The path of a regular file we may read by offsets, else None (stdin, pipes, in-memory text)."""
    name = getattr(source, "name", None)
    if isinstance(name, str) and os.path.isfile(name) and getattr(source, "seekable", lambda: False)():
        return name
    return None


def _send(part: str, out: Any, binary: bool) -> None:
    """A worker's part file onto the output, in order. Where the output is a file descriptor the kernel
    copies it (`os.sendfile`), so the parent, which shares the cores with the workers, does not read and
    write every byte of the output (a sixth of its CPU on two cores, PF-9); elsewhere, or for what
    sendfile did not send, the bytes are read and written."""
    with open(part, "rb") as f:
        size, sent = os.fstat(f.fileno()).st_size, 0
        fd = _descriptor(out) if binary and hasattr(os, "sendfile") else None
        if fd is not None:
            out.flush()  # what was written before goes first
            try:
                while sent < size:
                    n = os.sendfile(fd, f.fileno(), sent, size - sent)
                    if n == 0:
                        break
                    sent += n
            except OSError:  # not a kind of file sendfile writes to (or a write error, raised again below)
                pass
        if sent < size:
            f.seek(sent)
            data = f.read()
            out.write(data if binary else data.decode("utf-8", "surrogateescape"))


def _descriptor(out: Any) -> int | None:
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None
    return fd if isinstance(fd, int) else None


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
    One worker runs in this process unless `processes` asks for a pool even then. A bad line is named in
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

    _init(ruleset_path)
    if workers <= 1 and not processes:
        for batch in _batches(_lines(source), BATCH_PER_WORKER):
            emit(*_work(batch), len(batch))
    else:
        parser()  # built before the fork, so no worker spends its start building it again
        gc.freeze()  # keep the collector from touching (and so copying) every page the workers inherit
        ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        path = _file_path(source)
        with tempfile.TemporaryDirectory(prefix="tagengine-replay-") as tmp, \
                ctx.Pool(max(1, workers), initializer=_init, initargs=(ruleset_path,)) as pool:
            if path is not None:  # workers read byte ranges and write files: the parent only moves names
                tasks = (((path, ranges, os.path.join(tmp, f"{k}.jsonl")), len(ranges))
                         for k, ranges in enumerate(_ranges(path, BATCH_PER_WORKER)))
                for (part, errors, receipts), size in _in_order(pool, _work_ranges, tasks, workers * 4):
                    _send(part, out, binary)
                    os.unlink(part)
                    emit(None, errors, receipts, size)
            else:  # stdin or a pipe: the lines travel to the workers
                batches = ((b, len(b)) for b in _batches(_lines(source), BATCH_PER_WORKER))
                for (data, errors, receipts), size in _in_order(pool, _work, batches, workers * 4):
                    emit(data, errors, receipts, size)
    if progress is not None:
        progress.write("\n")
    return summary


def replay_chat(rs: Ruleset, chat: dict[str, Any], where: str) -> dict[str, Any]:
    """One chat already read (a SillyTavern chat file: `sillytavern/chatreplay.py`): its output object as
    `replay_line` makes it, or `{"id", "error"}` with the error after `where`. Never raises (F-4)."""
    return _replay_named(rs, chat, 0, where)
