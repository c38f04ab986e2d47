"""The pages' sign-ins (UI-10, TR-4): what the cookie holds, and the secret that ends them all.

A cookie holds the time it was given and an HMAC of that time and of the server's API key under a secret
kept in the data folder (`sessions.secret`, readable by its owner only). So a cookie is good until it is 30
days old, until `--api-key` changes, or until the secret is replaced: `end_all` (the pages' "Sign out
everywhere", or `tagengine sessions end` while the server runs or not) writes a new one, and the server
reads it again when the file changes. A data folder that cannot hold the file gives a secret in memory:
sign-ins then end when the server stops (said in the log).

No Starlette here: `tagengine sessions end` imports this module alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from ..limits import SESSION_SECONDS

log = logging.getLogger("tagengine.serve")
SECRET_FILE = "sessions.secret"
SKEW = 300  # seconds a cookie's time may be ahead of this clock (a clock set back)


def end_all(folder: Path) -> None:
    """A new secret in `folder`: every cookie given under the old one stops opening the pages. OSError when
    the folder cannot take it."""
    _write_secret(folder / SECRET_FILE, secrets.token_hex(32))


def _write_secret(path: Path, text: str) -> None:
    """`text` into `path`, whole or not at all, readable by its owner only from its first byte (a temporary
    file made with mode 0600, then renamed over the old one)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Sessions:
    """The cookies of one server with `--api-key KEY`: `issue` one, check one (`valid`), end them all."""

    def __init__(self, folder: Path, key: str, clock: Callable[[], float] = time.time) -> None:
        self.path = folder / SECRET_FILE
        self.key = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        self.clock = clock
        self.memory: bytes | None = None  # the secret when the folder cannot keep one
        self.seen: tuple[int, int, int] | None = None  # the file's (inode, size, mtime) when it was read
        self.secret = self._load()

    def _load(self) -> bytes:
        try:
            text = self.path.read_text(encoding="ascii").strip()
            if len(text) < 32:
                raise ValueError("too short")
        except FileNotFoundError:
            text = secrets.token_hex(32)
            try:
                _write_secret(self.path, text)
            except OSError as e:
                return self._in_memory(e)
        except (OSError, ValueError) as e:
            return self._in_memory(e)
        self.seen = self._stat()
        return text.encode("ascii")

    def _in_memory(self, e: Exception) -> bytes:
        if self.memory is None:
            log.warning("the pages' sign-ins cannot be kept in %s (%s): they end when the server stops", self.path, e)
            self.memory = secrets.token_hex(32).encode("ascii")
        return self.memory

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def _current(self) -> bytes:
        """The secret, read again when the file changed (`tagengine sessions end` from another process)."""
        if self.memory is None and self._stat() != self.seen:
            self.secret = self._load()
        return self.secret

    def _mac(self, secret: bytes, issued: str) -> str:
        return hmac.new(secret, b"tagengine.ui/2\0" + issued.encode() + b"\0" + self.key, hashlib.sha256).hexdigest()

    def issue(self) -> str:
        issued = str(int(self.clock()))
        return f"{issued}.{self._mac(self._current(), issued)}"

    def valid(self, token: str) -> bool:
        """Whether the cookie `token` opens the pages: made under the current secret for this key, and younger
        than SESSION_SECONDS. In constant time for its HMAC."""
        issued, _, mac = token.partition(".")
        if not issued.isascii() or not issued.isdigit() or len(issued) > 12:
            return False
        age = self.clock() - int(issued)
        if not -SKEW <= age <= SESSION_SECONDS:
            return False
        return hmac.compare_digest(mac.encode("ascii", "replace"), self._mac(self._current(), issued).encode())

    def end_all(self) -> None:
        """Every cookie given so far stops opening the pages (a new secret, in the file when it can be)."""
        if self.memory is not None:
            self.memory = secrets.token_hex(32).encode("ascii")
            self.secret = self.memory
            return
        try:
            end_all(self.path.parent)
        except OSError as e:
            self.secret = self._in_memory(e)
            return
        self.secret = self._load()
