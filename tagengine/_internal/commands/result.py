"""What one command did: the receipt's `result`, `now` and `reason` (DEC-4, DEC-11), and a check's roll record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..state import GameState
from .reasons import REASONS

Status = Literal["ok", "refused", "partial"]


@dataclass(frozen=True, slots=True)
class Result:
    result: Status
    now: str | None = None
    reason: str | None = None
    # More receipt attributes, after result/now/reason: a check's roll record (dice, rolled, outcome...).
    # Their names are listed in the kind's vocabulary row, so a second pass drops them (DEC-5).
    record: tuple[tuple[str, str], ...] = ()

    def attrs(self) -> tuple[tuple[str, str], ...]:
        out: tuple[tuple[str, str], ...] = (("result", self.result),)
        if self.now is not None:
            out += (("now", self.now),)
        if self.reason is not None:
            out += (("reason", self.reason),)
        return out + self.record if self.record else out


def ok(now: str | None = None) -> Result:
    return Result("ok", now=now)


_REFUSED = {reason: Result("refused", reason=reason) for reason in REASONS}  # results are values: share them


def refused(reason: str) -> Result:
    """The refusal for `reason`; ValueError for a reason outside the table (a programming error, caught by
    the reason-table test)."""
    result = _REFUSED.get(reason)
    if result is None:
        raise ValueError(f"{reason!r} is not in the reason table (DEC-20)")
    return result


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command's result and the state after it (the same object when nothing changed)."""

    result: Result
    state: GameState


def refuse(state: GameState, reason: str) -> Outcome:
    return Outcome(refused(reason), state)
