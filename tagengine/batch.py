"""`tagengine replay`: reprocess transcripts. Chats run in parallel processes, each chat in order.

Input is JSONL, one chat per line: `{"id", "characters" | "state" | "start", "messages"}` (the shape
`make_corpus.py` writes). Output is JSONL in input order: `{"id", "characters"? , "start"?, "messages",
"state", "receipts"}` with every assistant reply rewritten, the final state, and receipts counted by
result; or `{"id", "error"}` for a bad line while the rest go on. The starting point is kept in the
output, so replaying the output gives the same output (DEC-5). Memory stays flat: lines are read,
processed and written in bounded batches.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from .commands import apply_reply
from .errors import ProblemsError
from .ruleset import Ruleset
from .state import GameState
from .state_load import from_json

BATCH_PER_WORKER = 16
_RULESET: Ruleset | None = None


def _init(ruleset_path: str) -> None:
    global _RULESET
    _RULESET = Ruleset.load(ruleset_path)


def replay_line(rs: Ruleset, line: str, number: int) -> dict[str, Any]:
    """One chat: its output object, or `{"id", "error"}` naming what is wrong. Never raises."""
    try:
        chat = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as e:
        return {"id": None, "error": f"line {number}: not JSON: {e}"}
    if not isinstance(chat, dict):
        return {"id": None, "error": f"line {number}: a chat is a JSON object"}
    cid = chat.get("id")
    try:
        return _replay(rs, chat, cid, number)
    except ProblemsError as e:
        return {"id": cid, "error": f"line {number}: " + "; ".join(str(p) for p in e.problems[:5])}
    except (ValueError, TypeError, KeyError) as e:
        return {"id": cid, "error": f"line {number}: {e}"}


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
        if m.get("role") == "assistant":
            applied = apply_reply(rs, state, m["content"])
            state = applied.state
            for r in applied.receipts:
                counts[r.result] = counts.get(r.result, 0) + 1
            m = {**m, "content": applied.text}
        rewritten.append(m)
    out.update(messages=rewritten, state=state.to_json(), receipts=counts)
    return out


def _work(item: tuple[int, str]) -> tuple[str, str | None, dict[str, int]]:
    """(output line, error, receipt counts): the summary needs no second parse of the output."""
    number, line = item
    assert _RULESET is not None
    doc = replay_line(_RULESET, line, number)
    return json.dumps(doc, ensure_ascii=False), doc.get("error"), doc.get("receipts") or {}


@dataclass
class Summary:
    chats: int = 0
    errors: list[str] = field(default_factory=list)
    receipts: dict[str, int] = field(default_factory=dict)

    def add(self, error: str | None, receipts: dict[str, int]) -> None:
        self.chats += 1
        if error is not None:
            self.errors.append(error)
        for k, v in receipts.items():
            self.receipts[k] = self.receipts.get(k, 0) + v

    def __str__(self) -> str:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(self.receipts.items())) or "no tags"
        text = f"{self.chats} chats replayed; receipts: {counts}; {len(self.errors)} bad line(s)"
        return text + "".join(f"\n  {e}" for e in self.errors)


def _lines(stream: TextIO) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(stream, 1):
        if line.strip():
            yield number, line


def _batches(items: Iterable[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    batch: list[tuple[int, str]] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def replay(ruleset_path: str, source: TextIO, sink: TextIO, workers: int = 1,
           progress: TextIO | None = None) -> Summary:
    """Replay every chat of `source` into `sink`, in input order."""
    summary = Summary()
    lines = _lines(source)

    def emit(result: tuple[str, str | None, dict[str, int]]) -> None:
        text, error, receipts = result
        sink.write(text + "\n")
        summary.add(error, receipts)
        if progress is not None:
            progress.write(f"\rreplayed {summary.chats} chats, {len(summary.errors)} bad")
            progress.flush()

    if workers <= 1:
        _init(ruleset_path)
        for item in lines:
            emit(_work(item))
    else:
        ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        with ctx.Pool(workers, initializer=_init, initargs=(ruleset_path,)) as pool:
            for batch in _batches(lines, workers * BATCH_PER_WORKER):
                for result in pool.imap(_work, batch, chunksize=max(1, len(batch) // (workers * 4))):
                    emit(result)
    if progress is not None:
        progress.write("\n")
    return summary
