"""The one object every import inspection reads and reports into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import Problem
from ...text import prompt_unsafe
from ..index import SheetIndex
from ..top import RulesetDef


@dataclass
class Inspection:
    rs: RulesetDef
    sheet: SheetIndex
    party: SheetIndex | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def add(self, path: str, code: str, message: str, value: Any = None) -> None:
        self.problems.append(Problem(path, code, message, value))

    def warn(self, path: str, code: str, message: str, value: Any = None) -> None:
        self.warnings.append(Problem(path, code, message, value))

    def safe_text(self, path: str, text: str | None, limit: int, rule: str, *, label: bool = False) -> None:
        """Prompt-safe text (DEC-25) within its length limit."""
        if text is None:
            return
        if len(text) > limit:
            self.add(path, "too-long", f"is {len(text)} characters; the limit is {limit} ({rule})",
                     text[:60] + "…")
        why = prompt_unsafe(text, label=label)
        if why:
            self.add(path, "unsafe-text", f"{why} (DEC-25)", text if len(text) <= 80 else text[:80] + "…")


def count_problem(ctx: Inspection, path: str, items: list[Any] | None, lo: int, hi: int, what: str, rule: str) -> None:
    """Report a collection whose size is outside lo..hi."""
    if items is None:
        return
    n = len(items)
    if not lo <= n <= hi:
        bound = f"at most {hi}" if n > hi else f"at least {lo}"
        ctx.add(path, "bad-count", f"has {n} {what}; {bound} allowed ({rule})", n)
