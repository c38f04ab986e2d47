"""Every file tagengine writes goes through here: nothing lost, nothing half-written (decisions F-1..F-4).

A write goes to a temporary file beside the target, is flushed and fsynced, then renamed over the
target with `os.replace` (atomic on POSIX and Windows), and the directory is fsynced so the rename
survives a crash. A reader, or a process killed at any point, sees the old file or the complete new
one, never a mix. A target that is a symbolic link is refused rather than written through (F-2).
Reads are bounded (`read_limited`), and a JSON file that will not parse gets a message a person can
act on (`json_problem`).

Written here rather than taken from PyPI: `atomicwrites` is archived and unmaintained, and the other
packages add more than these few dozen lines do.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, cast

if TYPE_CHECKING:
    from pathlib import Path

BOM = b"\xef\xbb\xbf"
STDIN = "-"  # the path that names standard input on a command line


def standard_input() -> TextIO:
    """The standard input every reader of `-` reads (its `.buffer` for bytes). A process started with it
    closed (`<&-`) has `sys.stdin` None: OSError(EBADF) naming `<stdin>`, which the command line reports as
    `tagengine: <stdin>: standard input is closed`, exit 1, whatever the command (F-12)."""
    stream = sys.stdin
    if stream is None:
        raise OSError(errno.EBADF, "standard input is closed", "<stdin>")
    return stream


class SymlinkRefused(OSError):
    """The output path is a symbolic link; tagengine writes the link's target only when given its own path."""


def _named(e: OSError, path: str) -> OSError:
    """The same error, naming the file (an error from `write` or `fsync` carries no file name)."""
    if e.filename:
        return e
    return type(e)(e.errno, e.strerror or str(e), path)


def refuse_symlink(path: str | Path) -> None:
    """Refuse a symbolic link as an output path (F-2): replacing it would silently break the link, and
    writing through it would change a file the user never named."""
    if os.path.islink(path):
        raise SymlinkRefused(errno.ELOOP, "is a symbolic link; give the path of the file it points to "
                             "to overwrite that file", str(path))


@contextmanager
def atomic_writer(path: str | Path, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file that replaces `path` only when the block ends without an exception; until then
    `path` keeps its old content (or stays absent). A failed or interrupted write removes the
    temporary file; a process killed with SIGKILL leaves `.NAME.<random>.tmp` beside the target.
    `durable=False` skips the two fsyncs: still all or nothing for every reader, but a power cut may
    lose the file, which only a cache that checks what it reads may accept (disk_cache.py, PF-2)."""
    target = os.fspath(path)
    refuse_symlink(target)
    folder = os.path.dirname(target) or "."
    base = os.path.basename(target)
    mode = None
    with suppress(OSError):
        mode = os.stat(target).st_mode & 0o7777  # keep an existing file's permissions
    fd, tmp = -1, ""
    for _ in range(100):
        tmp = os.path.join(folder, f".{base}.{os.urandom(4).hex()}.tmp")  # what secrets.token_hex does
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
        except OSError as e:  # name the file asked for, not the temporary (`No such file or directory`)
            raise type(e)(e.errno, e.strerror, target) from None
    else:  # pragma: no cover - 100 random names all taken
        raise FileExistsError(errno.EEXIST, "no free temporary name beside the file", target)
    try:
        with os.fdopen(fd, "wb") as f:
            yield cast(BinaryIO, NamedStream(f, target))  # errors name the target; the methods are BinaryIO's
            try:
                f.flush()
                if mode is not None and hasattr(os, "fchmod"):
                    os.fchmod(f.fileno(), mode)
                if durable:
                    os.fsync(f.fileno())
            except OSError as e:
                raise _named(e, target) from None
        try:
            refuse_symlink(target)  # a link may have appeared while we wrote
            os.replace(tmp, target)
        except OSError as e:
            raise _named(e, target) from None
        tmp = ""
        if durable:
            fsync_dir(folder)
    finally:
        if tmp:
            with suppress(OSError):
                os.unlink(tmp)


class NamedStream:
    """A stream whose write and flush errors name it (`<stdout>: No space left on device`), not `: ...`."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream, self.name = stream, name

    def write(self, data: Any) -> int:
        try:
            written: int = self._stream.write(data)
        except OSError as e:
            raise _named(e, self.name) from None
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise _named(e, self.name) from None

    @property
    def wrapped(self) -> Any:
        return self._stream

    @property
    def buffer(self) -> NamedStream:
        return NamedStream(self._stream.buffer, self.name)  # AttributeError when there is none, as before

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._stream, attr)


def write_atomic(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data`, all or nothing (F-1); `durable` as for `atomic_writer`."""
    with atomic_writer(path, durable=durable) as f:
        f.write(data)


def fsync_dir(folder: str) -> None:
    """Make a rename in `folder` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with suppress(OSError):  # some file systems refuse fsync on a directory (EINVAL)
            os.fsync(fd)
    finally:
        os.close(fd)


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when both paths name one existing file (through links, `./`, hard links)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


class TooLarge(ValueError):
    """An input over its size limit (F-5)."""

    def __init__(self, source: str, limit: int) -> None:
        super().__init__(f"{source}: larger than {limit} bytes ({limit // (1024 * 1024)} MiB), the most tagengine "
                         "reads from one input of this kind")
        self.source, self.limit = source, limit


def read_limited(stream: BinaryIO, limit: int, source: str) -> bytes:
    """At most `limit` bytes from a binary stream, reading no more than `limit + 1` (so `/dev/zero` or
    an endless pipe is refused instead of filling memory); a leading UTF-8 BOM is dropped (F-6)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise TooLarge(source, limit)
    return strip_bom(b"".join(chunks))


def read_file(path: str | Path, limit: int) -> bytes:
    """A whole file, at most `limit` bytes, BOM dropped; OSError names the file."""
    with open(path, "rb") as f:
        return read_limited(f, limit, os.fspath(path))


def strip_bom(data: bytes) -> bytes:
    """A leading UTF-8 byte order mark is not content: every file tagengine reads drops it (F-6)."""
    return data[3:] if data.startswith(BOM) else data


def json_problem(e: Exception) -> str:
    """Why a JSON text would not parse, in words (not `ValueError`)."""
    if isinstance(e, json.JSONDecodeError):
        return f"{e.msg} at line {e.lineno} column {e.colno}"
    if isinstance(e, RecursionError):
        return "nested too deeply to read"
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte {e.start} is {e.object[e.start:e.start + 1]!r})"
    if isinstance(e, ValueError) and "digits" in str(e):
        return "a number has more digits than tagengine reads (at most 4300)"
    return f"unreadable JSON ({e})"
