"""What tagengine keeps in the user's cache folder between runs, so a command started once per reply does not
redo work whose inputs have not changed (decisions PF-2, PF-3, PF-5): a validated ruleset, the tag grammar's
terminals, Jinja's compiled templates. Losing the folder costs time, never a result.

Where: `$TAGENGINE_CACHE` when set (set and empty: nothing is kept), else `$XDG_CACHE_HOME/tagengine`, else
`~/.cache/tagengine`; one subfolder per kind of entry. The caller gives each entry a key naming everything its
content was computed from (for a ruleset: the file's bytes, the code that validates it, pydantic's version),
so an entry written by another version of tagengine or of a library is simply never found.

Nothing read back is trusted blindly: an entry starts with a header line naming the format, its key and the
digest of its payload, and an entry whose header does not match (cut short, changed, another format) is a
miss, and is replaced by the next write. Every failure to read or write (no home, a read-only or full disk,
a folder that is not ours) is a miss too, never an error: the caller computes the value as if nothing had
been kept. Writes go through `files.write_atomic`, so a reader sees a whole entry or none, and processes
that write the same entry at once each leave a whole one; without its fsyncs (tens of milliseconds on a
busy disk, paid by the command that misses), since an entry a power cut spoils is a miss like any other.
At most MAX_ENTRIES entries of a kind are kept; reading an entry marks it used, and the least recently
used go first.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress

from .digests import blake2b
from .files import write_atomic

VARIABLE = "TAGENGINE_CACHE"
FORMAT = b"tagengine-cache/2"  # /2: keys and payloads hashed with BLAKE2b (SHA-256 in /1)
DIGEST_SIZE = 32  # bytes: 64 hex digits, as SHA-256 gave
MAX_ENTRIES = 64  # per kind: a user edits a ruleset now and then; each edit is a new entry
_STALE_TEMP = 600.0  # seconds: a temporary file older than this was left by a writer that was killed


def folder() -> str | None:
    """The cache folder, or None when the environment says to keep nothing. Read on each call, as
    `$TAGENGINE_CACHE` and `$XDG_CACHE_HOME` are: the environment may change. Text, not a Path: the entries
    are read and written with os.path, not pathlib, which a cold command would otherwise import for them alone
    (PF-44)."""
    chosen = os.environ.get(VARIABLE)
    if chosen is not None:
        return os.path.expanduser(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tagengine")


def digest(*parts: bytes) -> str:
    """A key from the parts an entry is computed from (each part's length is hashed too, so no two lists of
    parts run together into one)."""
    h = blake2b(digest_size=DIGEST_SIZE)
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _entry(kind: str, key: str) -> str | None:
    base = folder()
    return None if base is None else os.path.join(base, kind, key)


def read_entry(kind: str, key: str) -> bytes | None:
    """The payload kept under `key`, or None: absent, unreadable, or not exactly what `write_entry` wrote for it."""
    path = _entry(kind, key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    header, newline, payload = data.partition(b"\n")
    if not newline or header != _header(key, payload):
        return None
    with suppress(OSError):
        os.utime(path)  # used now: the least recently used entries are the ones pruned
    return payload


def write_entry(kind: str, key: str, payload: bytes) -> None:
    """Keep `payload` under `key`, whole or not at all; never raises."""
    path = _entry(kind, key)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_atomic(path, _header(key, payload) + b"\n" + payload, durable=False)
    except OSError:
        return
    _prune(os.path.dirname(path))


def _header(key: str, payload: bytes) -> bytes:
    payload_digest = blake2b(payload, digest_size=DIGEST_SIZE).hexdigest()
    return b" ".join((FORMAT, key.encode("ascii"), payload_digest.encode("ascii")))


def _prune(kind_folder: str) -> None:
    """Keep the MAX_ENTRIES most recently used entries, and remove what killed writers left behind."""
    entries: list[tuple[float, str]] = []
    now = time.time()
    try:
        with os.scandir(kind_folder) as it:
            for e in it:
                with suppress(OSError):
                    st = e.stat(follow_symlinks=False)
                    if not e.name.startswith("."):
                        entries.append((st.st_mtime, e.path))
                    elif now - st.st_mtime > _STALE_TEMP:  # a temporary file of files.atomic_writer, abandoned
                        os.unlink(e.path)
    except OSError:
        return
    entries.sort()
    for _, path in entries[:max(0, len(entries) - MAX_ENTRIES)]:
        with suppress(OSError):
            os.unlink(path)
