"""`replay --states-dir DIR`: each chat's final state from the replay's output, as a state file of its own.

Read back from the output once the replay is complete (a local replay's one file, or a Dask replay's parts in
the order of its summary), so the states are exactly what the output says, whichever way it was made.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from .batch import line_doc
from .files import write_atomic


def state_file_name(cid: Any) -> str:
    """A file name for a chat id that no other id shares (F-11): the id itself when it is a safe name,
    else its safe characters plus 8 hex digits of the id's SHA-256 (`a/b` -> `a_b-c14cddc0.json`)."""
    text = cid if isinstance(cid, str) else json.dumps(cid, ensure_ascii=False)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:100]
    if name == text and name and not name.startswith(".") and isinstance(cid, str):
        return name
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name.lstrip('.') or 'chat'}-{digest}"


def lines_of(name: str, f: BinaryIO) -> Iterator[tuple[str, int, bytes]]:
    """(the file's name, the line's number in it, the line) for each line of an open output file."""
    for number, line in enumerate(f, 1):
        yield name, number, line


def write_states(lines: Iterable[tuple[str, int, bytes]], folder: str, err: TextIO | None = None) -> int:
    """Each chat's final state as a state file, ready for `tagengine preview` or `apply`; the number of files
    written, also said on `err`. `lines`: the output's lines in order, each with its file and line number (a
    Dask replay's output is several files). Two chats with one id (or ids a case-blind file system takes for
    one) both keep their state: the later one's name gets its line number in the whole output, and a warning
    says so (F-11)."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    used: dict[str, tuple[str, int]] = {}  # the name's case-folded form -> the file and line that took it
    for count, (source, number, line) in enumerate(lines, 1):
        doc = line_doc(line)  # the output keeps bytes that are not UTF-8 as they came (F-4)
        if not isinstance(doc, dict) or "state" not in doc or doc.get("id") is None:
            continue
        name = state_file_name(doc["id"])
        if name.casefold() in used:
            where, first = used[name.casefold()]
            name = f"{name}~{count}"
            if err is not None:
                before = f"line {first}" if where == source else f"{where} line {first}"
                err.write(f"{source}: line {number}: chat id {doc['id']!r} was on {before} too; this state goes "
                          f"to {name}.json\n")
        used[name.casefold()] = (source, number)
        write_atomic(target / f"{name}.json",
                     (json.dumps(doc["state"], ensure_ascii=False, indent=2) + "\n").encode("utf-8", "surrogateescape"))
    if err is not None:
        err.write(f"wrote {len(used)} final state(s) to {folder}/\n")
    return len(used)
