"""Many SillyTavern chat files at once, from plain arguments: the start a command names
(`given_start`), chats imported as transcript lines (`import_chats`), one chat exported to its target
(`export_one`, also the task of `st export --dask`), and the first line of an input of any file system
(`first_line_of`, for telling chat files from our JSONL). The command line's parts (`tagengine st import`,
`st export`, `replay --format st`) are in `cli/st.py` and `cli/replay.py`.

Nothing here raises for one bad chat: it is named (FILE:LINE: key) and the others go on (F-4). Every file
is written atomically (F-1).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import Problem, ProblemsError
from ..files import json_problem, read_file, write_atomic

if TYPE_CHECKING:
    from .chatreplay import Start


def given_start(characters: Sequence[str] | None, start: str | None, rs: Any = None) -> Start | None:
    """The start a command names, if any: `characters` at their start values, else the state file `start`.
    With a ruleset, each is checked against it (StateError, naming every problem)."""
    from .chatreplay import Start

    if characters:
        if rs is not None:
            from ..state import GameState

            GameState.new(rs, characters)  # a bad name is a StateError now, not one per chat
        return Start(characters=tuple(characters))
    if not start:
        return None
    from ..state.model import MAX_STATE_BYTES  # a `--start` state file, as any state file (F-5)

    try:
        doc = json.loads(read_file(start, MAX_STATE_BYTES))
    except (RecursionError, ValueError) as e:
        raise ProblemsError([Problem("$", "not-json", json_problem(e), None)], start) from None
    if not isinstance(doc, dict):
        raise ProblemsError([Problem("$", "wrong-type", "a state is a JSON object", None)], start)
    if rs is not None:
        from ..state import from_json

        from_json(rs, doc, start)  # StateError when it is not a state of this ruleset
    return Start(state=doc)


def import_chats(paths: Sequence[str], given: Start | None, stdin: BinaryIO | None
                 ) -> tuple[bytes, int, list[str]]:
    """Each chat file (`-`: `stdin`) as one line of transcript JSONL: (the lines, how many, each problem).
    A bad file is left out and named; the others are imported."""
    from ..batch import line_bytes
    from .chatfile import ChatFileError
    from .chatreplay import load, transcript

    lines, errors = [], []
    for path in paths:
        try:
            lines.append(line_bytes(transcript(load(path, stdin), given)) + b"\n")
        except ChatFileError as e:
            errors += e.lines()
        except Exception as e:  # a bug, but this file's: name it and go on (F-4)
            errors.append(f"{path}: {type(e).__name__}: {e}")
    return b"".join(lines), len(lines), errors


def export_one(rs: Any, path: str, target: str, given: Start | None) -> tuple[bool, list[str], dict[str, int]]:
    """One chat exported to `target` (atomically): (written, errors, receipt counts); never raises (F-4). Also
    the task of `st export --dask` (DK-13)."""
    from .chatfile import ChatFileError, read_chat
    from .chatreplay import export_chat

    try:
        exported = export_chat(rs, read_chat(path), given)
    except ChatFileError as e:
        return False, e.lines(), {}
    except Exception as e:  # a bug, but this file's: name it, write nothing for it, go on (F-4)
        return False, [f"{path}: {type(e).__name__}: {e}"], {}
    try:
        write_atomic(target, exported.data)
    except OSError as e:
        return False, [f"{e.filename or target}: {e.strerror or e}"], {}
    return True, [], exported.receipts


def first_line_of(spec: str, limit: int = 1 << 20) -> bytes:
    """The first non-blank line (at most `limit` bytes) of the first file an input names (a path, a glob or
    an fsspec URL), b"" when none can be read: for telling SillyTavern chat files from our JSONL (`--format
    auto`). Here, not in batch_dask, which does not import this package (DK-10)."""
    from ..batch_dask import expand
    from .chatfile import first_line

    files, _bad = expand([spec])
    if not files:
        return b""
    _url, fs, path, _size = files[0]
    try:
        return first_line(path, limit, opener=lambda: fs.open(path, "rb"))
    except OSError:
        return b""
