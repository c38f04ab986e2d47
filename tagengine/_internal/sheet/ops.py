"""Derived-value operations (SHEET-23..27, ENUM-1..5) as pure functions of numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence


def rounded(x: float, how: str | None) -> int:
    """`down`, `up`, or `nearest` (halves away from zero; the default)."""
    if how == "down":
        return math.floor(x)
    if how == "up":
        return math.ceil(x)
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def step(table: Sequence[tuple[int, int]], x: int, default: int = 0) -> int:
    """The value of the last threshold at or below `x`; `default` below the first (SHEET-26, WOUND-45)."""
    out = default
    for threshold, value in table:
        if x >= threshold:
            out = value
        else:
            break
    return out
