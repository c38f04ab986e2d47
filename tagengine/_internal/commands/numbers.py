"""Numbers in tags (DEC-9): whole numbers with an optional sign, at most nine ASCII digits.

Nine digits keep every amount at or below NUMBER_MAX, so arithmetic on a tag's number is cheap and no
reply can ask for an integer too large to handle (docs/decisions.md G-6, H-2). Only `0-9` count as
digits: Python's `\\d` and `int()` also read fullwidth or Arabic-Indic digits, which DEC-9 does not mean.
"""

from __future__ import annotations

import re
from functools import lru_cache

_INT = re.compile(r"[+-]?[0-9]{1,9}")


@lru_cache(maxsize=1024)
def parse_int(value: str | None) -> int | None:
    """The integer `value` spells, or None (-> `invalid-amount`). White space around it is trimmed, as
    around a name (DEC-8, docs/decisions.md H-2); nothing else but the sign and the digits is allowed."""
    if value is None:
        return None
    v = value.strip()
    return int(v) if _INT.fullmatch(v) else None
