"""The two digests the engine's cold paths take: SHA-256 for the dice (`state.values.die`, DEC-5: the same faces on
every platform) and a new state's seed, and BLAKE2b for the cache folder's keys (`disk_cache`).

Each is hashlib's own, taken from the module hashlib takes it from, as the standard library's `random` takes its
SHA-512: `import hashlib` loads OpenSSL and lists every digest it provides, some 5 % of the instructions of a cold
command that hashes a few bytes of dice and a hundred kilobytes of source (decision PF-72). The built-in SHA-256 is also
twice as fast as OpenSSL's on a die's few bytes; BLAKE2b is hashlib's built-in one in any case. Where a Python is
built without them, hashlib's are taken; `tests/test_digests.py` holds each to hashlib's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from typing import Protocol

try:
    from _blake2 import blake2b  # every command that reads the cache folder keys it with this
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

__all__ = ["Hash", "blake2b", "sha256"]


class Hash(Protocol):
    """What the engine calls of a hash object."""

    def update(self, data: bytes, /) -> None: ...
    def digest(self) -> bytes: ...
    def hexdigest(self) -> str: ...


@cache
def _sha256() -> Callable[..., Hash]:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha256
    return sha256  # type: ignore[no-any-return]


def sha256(data: bytes = b"", /) -> Hash:
    """SHA-256 of `data`, its module loaded on the first call: most commands roll no dice."""
    return _sha256()(data)
