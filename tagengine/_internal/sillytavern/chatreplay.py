"""SillyTavern chats replayed (docs/sillytavern.md, "Chat files"; STF-1..).

- `transcript`: a chat file as one chat of our transcript JSONL (`tagengine st import`, and what
  `tagengine replay --format st` replays): every message but system notes, hidden ones included (their
  tags changed the state), `is_user` as `user`, the rest as `assistant`, the selected swipe's text.
- `replay_files`: `tagengine replay` over chat files, one output line per file, as `batch.replay` writes.
- `export_chat`: the chat file written back after a replay: each reply's selected swipe rewritten in
  `mes` and `swipes[swipe_id]`, every other swipe replayed from the same state as an alternative, the
  state after each swipe in its `swipe_info[j].extra.tagengine` and the selected one's in the message's
  `extra.tagengine` (SillyTavern copies one to the other when it swipes), the current state and the
  starting point in `chat_metadata.tagengine`. Nothing else changes.

The start of a chat is the `--character`/`--start` given, else what an earlier export wrote in
`chat_metadata.tagengine` (`characters` or `start`); a chat with neither is named, not guessed.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TextIO

from .. import ordered_pool
from ..files import STDIN, standard_input
from ..records import frozen
from .chatfile import TAGENGINE, ChatFile, ChatFileError, Entry, LineProblem, parse_chat, read_chat


@frozen
class Start:
    """Where a chat starts: characters at their start values, or a state document."""

    characters: tuple[str, ...] | None = None
    state: dict[str, Any] | None = None

    def keys(self) -> dict[str, Any]:
        """The transcript's (and `chat_metadata.tagengine`'s) keys for it: `characters` or `start`."""
        return {"characters": list(self.characters)} if self.characters is not None else {"start": self.state}


def start_of(chat: ChatFile, given: Start | None) -> Start:
    """The start given on the command line, else the one an earlier export left in the header."""
    if given is not None:
        return given
    meta = chat.metadata
    saved = meta.get(TAGENGINE) if meta is not None else None
    if isinstance(saved, dict):
        if isinstance(saved.get("characters"), list):
            return Start(characters=tuple(saved["characters"]))
        if isinstance(saved.get("start"), dict):
            return Start(state=saved["start"])
    raise ChatFileError(chat.path, [LineProblem("$", "no-start", "the chat names no starting point: give "
                                                "--character NAME (once per character) or --start STATE")])


def replies(chat: ChatFile) -> Iterator[Entry]:
    """The messages replayed: all but system notes, in order (hidden messages too)."""
    return (e for e in chat.messages if not e.is_note)


def transcript(chat: ChatFile, given: Start | None) -> dict[str, Any]:
    """The chat as one chat of our transcript JSONL: `{"id": its path, "characters" | "start", "messages"}`,
    each message `{"role", "content", "name"?}`. ChatFileError when it has no starting point."""
    messages = []
    for e in replies(chat):
        m = {"role": "user" if e.is_user else "assistant", "content": e.doc["mes"]}
        if isinstance(e.doc.get("name"), str):
            m["name"] = e.doc["name"]
        messages.append(m)
    return {"id": chat.path, **start_of(chat, given).keys(), "messages": messages}


def load(path: str, stdin: BinaryIO | None = None) -> ChatFile:
    """A chat file by path, or `-` for standard input (`stdin`, else the process's: OSError naming `<stdin>`
    when it is closed, F-12)."""
    if path != STDIN:
        return read_chat(path)
    from ..files import read_limited
    from .chatfile import MAX_CHAT_FILE_BYTES

    raw = read_limited(stdin or standard_input().buffer, MAX_CHAT_FILE_BYTES, "<stdin>")  # BOM dropped (F-6)
    return parse_chat(raw, "<stdin>")


# -- replay -------------------------------------------------------------------------------------------------

_RULESET: Any = None  # a worker's ruleset, loaded once per process
_GIVEN: Start | None = None


def _start_worker(ruleset_path: str, given: Start | None) -> None:
    global _RULESET, _GIVEN
    from ..ruleset import Ruleset

    _RULESET, _GIVEN = Ruleset.load(ruleset_path), given


def replay_file(rs: Any, path: str, given: Start | None, opener: Callable[[], Any] | None = None,
                ) -> tuple[bytes, list[str], dict[str, int]]:
    """One chat file replayed: (its output line, errors, receipt counts). Never raises (F-4). `opener` opens
    the file elsewhere (`replay_on_fs`)."""
    from ..batch import line_bytes, replay_chat

    try:
        chat = load(path) if opener is None else read_chat(path, opener)
        doc = replay_chat(rs, transcript(chat, given), path)
    except ChatFileError as e:
        doc = {"id": path, "error": str(e)}  # its first five problems, as FILE:LINE: key
    except Exception as e:  # a bug, but this file's: name it and go on
        doc = {"id": path, "error": f"{path}: {type(e).__name__}: {e}"}
    errors = [doc["error"]] if "error" in doc else []
    return line_bytes(doc) + b"\n", errors, dict(doc.get("receipts") or {})


def replay_on_fs(rs: Any, fs: Any, fspath: str, url: str, given: Start | None = None,
                 ) -> tuple[bytes, list[str], dict[str, int]]:
    """`replay --format st --dask`: one chat file on an fsspec file system, one Dask task (DK-10); the same
    line as `replay_file` gives for `url`, the name it was given by."""
    return replay_file(rs, url, given, opener=lambda: fs.open(fspath, "rb"))


def _replay_path(path: str) -> tuple[bytes, list[str], dict[str, int]]:
    return replay_file(_RULESET, path, _GIVEN)


def _replay_unless_stdin(path: str) -> tuple[bytes, list[str], dict[str, int]] | None:
    return None if path == STDIN else _replay_path(path)


def _next_file(count: int, cursor: Any) -> int | None:
    """The index of the next chat file to replay (`ordered_pool.run_ordered`'s `take`), None after the last."""
    i = int(cursor[0])
    if i >= count:
        return None
    cursor[0] = i + 1
    return i


def replay_files(ruleset_path: str, paths: Iterable[str], sink: TextIO | BinaryIO, workers: int = 1,
                 progress: TextIO | None = None, given: Start | None = None,
                 tick: Callable[[int, int], None] | None = None) -> Any:
    """`tagengine replay --format st`: each chat file replayed into one line of `sink`, in order, as
    `batch.replay` writes them; a bad file is a `{"id": path, "error": "FILE:LINE: key: ..."}` line and
    a line of the summary, and the rest go on. `tick(chats, bad)` after each file, as `batch.replay`'s.
    Returns the batch `Summary`."""
    from ..batch import Summary

    summary = Summary()
    out: Any = getattr(sink, "buffer", sink)
    binary = not isinstance(getattr(out, "wrapped", out), io.TextIOBase)

    def counted(errors: list[str], receipts: dict[str, int]) -> None:
        summary.add(1, errors, receipts)
        if tick is not None:
            tick(1, len(errors))
        if progress is not None:
            progress.write(f"\rreplayed {summary.chats} chats, {len(summary.errors)} bad")
            progress.flush()

    def emit(result: tuple[bytes, list[str], dict[str, int]]) -> None:
        data, errors, receipts = result
        out.write(data if binary else data.decode("utf-8", "surrogateescape"))
        counted(errors, receipts)

    _start_worker(ruleset_path, given)
    paths = list(paths)
    if workers <= 1 or len(paths) <= 1:
        for path in paths:
            emit(_replay_path(path))
    else:
        from ..tags.parse import parser

        parser()  # built once, before the fork
        # a chat read from standard input is replayed here, before the others: a child reading it would share
        # the stream with this process (and a `multiprocessing` child reads /dev/null there)
        early = {i: _replay_path(p) for i, p in enumerate(paths) if p == STDIN}
        if ordered_pool.writes_ordered(sink):  # each process writes its chats' lines in turn (PF-13)

            def work(i: int) -> tuple[bytes, tuple[list[str], dict[str, int]]]:
                data, errors, receipts = early[i] if i in early else _replay_path(paths[i])
                return data, (errors, receipts)

            ordered_pool.run_ordered(functools.partial(_next_file, len(paths)), work, sink, min(workers, len(paths)),
                                lambda result: counted(*result))
        else:  # text in memory: the lines travel through this process
            import multiprocessing as mp

            ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
            with ctx.Pool(min(workers, len(paths)), initializer=_start_worker, initargs=(ruleset_path, given)) as pool:
                for i, result in enumerate(pool.imap(_replay_unless_stdin, paths, chunksize=1)):  # in order
                    emit(early[i] if result is None else result)
    if progress is not None:
        progress.write("\n")
    return summary


# -- export -------------------------------------------------------------------------------------------------

@frozen
class Exported:
    """A chat file written back: its bytes, and the receipts of the selected swipes counted by result."""

    data: bytes
    receipts: dict[str, int]


def _with_state(extra: Any, state: dict[str, Any]) -> dict[str, Any]:
    """`extra` with `tagengine` set to the state (an `extra` made for it when there was none)."""
    return {**(extra if isinstance(extra, dict) else {}), TAGENGINE: state}


def export_chat(rs: Any, chat: ChatFile, given: Start | None) -> Exported:
    """Replay the chat and write it back (see the module's text). ChatFileError when it has no starting
    point or that start is not a state of this ruleset."""
    from ..commands import apply_reply
    from ..errors import ProblemsError
    from ..state import GameState, from_json

    start = start_of(chat, given)
    try:
        state = GameState.new(rs, start.characters) if start.characters is not None else \
            from_json(rs, start.state, "start")
    except ProblemsError as e:
        line = chat.header.line if chat.header else 0
        raise ChatFileError(chat.path, [LineProblem("start", p.code, f"{p.path}: {p.message}", p.value, line=line)
                                        for p in e.problems]) from None
    changed: dict[int, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    after = state.to_json()  # the state's document, serialised once per reply
    for entry in replies(chat):
        if entry.is_user:
            continue
        doc, before = entry.doc, state
        applied = apply_reply(rs, before, doc["mes"])
        state, after = applied.state, applied.state.to_json()
        for r in applied.receipts:
            counts[r.result] = counts.get(r.result, 0) + 1
        new = {**doc, "mes": applied.text}
        swipes, sid = doc.get("swipes"), doc.get("swipe_id")
        if isinstance(swipes, list):
            texts, states = [], []
            for j, text in enumerate(swipes):
                alt = applied if j == sid and text == doc["mes"] else apply_reply(rs, before, text)
                texts.append(alt.text)
                states.append(after if alt is applied else alt.state.to_json())
            new["swipes"] = texts
            info = doc.get("swipe_info")
            if isinstance(info, list):  # entries are never added or removed: len(swipe_info) stays as it was
                new["swipe_info"] = [{**item, "extra": _with_state(item.get("extra"), states[j])}
                                     if isinstance(item, dict) and j < len(states) else item
                                     for j, item in enumerate(info)]
        new["extra"] = _with_state(doc.get("extra"), after)
        changed[entry.index] = new
    if chat.header is not None:
        meta = chat.metadata or {}
        saved = {**start.keys(), "state": after}
        changed[chat.header.index] = {**chat.header.doc, "chat_metadata": {**meta, TAGENGINE: saved}}
    return Exported(chat.render(changed), counts)
