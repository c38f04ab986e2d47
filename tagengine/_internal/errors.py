"""Errors as data: every problem carries a JSON path, a kebab-case code, a message and the value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from .records import frozen


@frozen(slots=True)
class Problem:
    """One thing wrong with an input file, named precisely enough to fix without a debugger."""

    path: str
    code: str
    message: str
    value: Any = None

    def __str__(self) -> str:
        return f"{self.path}: {self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class TagengineError(Exception):
    """The root of every error tagengine raises on purpose: `except tagengine.TagengineError` catches them all.
    Each kind also keeps the standard base a caller would have caught before (LookupError, ValueError...)."""


class ProblemsError(TagengineError):
    """Raised with every problem found in one input, not just the first."""

    kind = "input"

    def __init__(self, problems: Iterable[Problem], source: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        head = f"{source}: " if source else ""
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{head}{len(self.problems)} problem(s) in the {self.kind}\n{lines}")


class RulesetError(ProblemsError):
    """A ruleset file that cannot be imported (DEC-24)."""

    kind = "ruleset"


class StateError(ProblemsError):
    """A file that is not a tagengine state (DEC-27)."""

    kind = "state"


class HistoryError(ProblemsError):
    """A chat history that is not a list of `{"role", "content"}` messages."""

    kind = "history"


class NotFoundError(TagengineError, LookupError):
    """A name that names nothing: a character, a rest, a swipe, an encoding. Says what was looked for."""

    def __init__(self, what: str, name: object, known: tuple[str, ...] = ()) -> None:
        self.what, self.name, self.known = what, name, known
        choices = f"; choose one of {', '.join(known)}" if known else ""
        super().__init__(f"unknown {what} {name!r}{choices}")

    def __str__(self) -> str:  # LookupError's KeyError-style repr is not wanted here
        return str(self.args[0])
