"""A command family: one tag name (`sheet`, `clock`), how to tell a tag's op, a handler per op, and what
the reminder teaches of it.

Families are plain values. The engine is built from an explicit, ordered table of them (table.py), so
nothing registers itself by being imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from .result import Outcome, Result

Handler = Callable[[Ruleset, GameState, Tag], Outcome]
OpOf = Callable[[Ruleset, Tag], "str | Result"]
Teach = Callable[[Ruleset, GameState], "Mapping[str, Any] | None"]  # the data of prompts/teach/<name>.j2


@dataclass(frozen=True, slots=True)
class Op:
    """One op of a family (`spend`, `tick`) and the handler that applies it."""

    name: str
    handler: Handler


@dataclass(frozen=True)
class Family:
    """One tag name, how to tell which op a tag asks for, and the ops in the order they are listed."""

    name: str
    op_of: OpOf
    ops: Mapping[str, Handler]
    teach: Teach | None = None  # what the reminder teaches of this kind; None: nothing (DEC-18)

    @classmethod
    def of(cls, name: str, op_of: OpOf, ops: Iterable[Op], teach: Teach | None = None) -> Family:
        table: dict[str, Handler] = {}
        for op in ops:
            if op.name in table:
                raise ValueError(f"family {name!r} lists op {op.name!r} twice")
            table[op.name] = op.handler
        return cls(name, op_of, MappingProxyType(table), teach)
