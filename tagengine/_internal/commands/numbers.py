"""Numbers in tags (DEC-9): whole numbers with an optional sign, at most nine digits."""

from __future__ import annotations

import re
from functools import lru_cache

_INT = re.compile(r"[+-]?\d{1,9}")


@lru_cache(maxsize=1024)
def parse_int(value: str | None) -> int | None:
    """The integer `value` spells, or None (-> `invalid-amount`)."""
    if value is None:
        return None
    v = value.strip()
    return int(v) if _INT.fullmatch(v) else None
