"""What one command did: the receipt's `result`, `now` and `reason` (DEC-4, DEC-11), and a check's roll record."""

from __future__ import annotations

from dataclasses import field
from functools import lru_cache
from typing import Literal, NamedTuple

from ..records import frozen
from ..state import GameState
from ..tags.model import written
from .reasons import REASONS

Status = Literal["ok", "refused", "partial"]


@frozen(slots=True)
class Result:
    """What a command answers: the receipt's result, and its `now`, `reason` and record when it has them."""

    result: Status
    now: str | None = None
    reason: str | None = None
    # More receipt attributes, after result/now/reason: a check's roll record (dice, rolled, outcome...).
    # Their names are listed in the kind's vocabulary row, so a second pass drops them (DEC-5).
    record: tuple[tuple[str, str], ...] = ()
    # What the receipt writes after the model's attributes, worked out once: results are shared values
    # (`ok`, `refused`), and every tag's receipt asks for it.
    written: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    text: str = field(init=False, repr=False, compare=False)  # `written` as the receipt writes it

    def __post_init__(self) -> None:
        out: tuple[tuple[str, str], ...] = (("result", self.result),)
        if self.now is not None:
            out += (("now", self.now),)
        if self.reason is not None:
            out += (("reason", self.reason),)
        out = out + self.record if self.record else out
        object.__setattr__(self, "written", out)
        object.__setattr__(self, "text", written(out))

    def attrs(self) -> tuple[tuple[str, str], ...]:
        return self.written


@lru_cache(maxsize=4096)
def ok(now: str | None = None) -> Result:
    """The ok result for `now`: a value, shared like the refusals (a command's `now` repeats: `3/5`, `1/6`)."""
    return Result("ok", now=now)


_REFUSED = {reason: Result("refused", reason=reason) for reason in REASONS}  # results are values: share them


def refused(reason: str) -> Result:
    """The refusal for `reason`; ValueError for a reason outside the table (a programming error, caught by
    the reason-table test)."""
    result = _REFUSED.get(reason)
    if result is None:
        raise ValueError(f"{reason!r} is not in the reason table (DEC-20)")
    return result


class Outcome(NamedTuple):
    """A command's result and the state after it (the same object when nothing changed). A named tuple:
    every command makes one, in a third of a frozen dataclass's time."""

    result: Result
    state: GameState


def refuse(state: GameState, reason: str) -> Outcome:
    return Outcome(refused(reason), state)
