"""A command family: one tag name (`sheet`, `clock`), how to tell a tag's op, a handler per op, and what
the reminder teaches of it.

Families are plain values. The engine is built from an explicit, ordered table of them (table.py), so
nothing registers itself by being imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any

from ..records import frozen
from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from .result import Outcome, Result

Handler = Callable[[Ruleset, GameState, Tag], Outcome]
OpOf = Callable[[Ruleset, Tag], "str | Result"]
# the data of prompts/teach/<name>.j2, from the ruleset, the state's cards and its party sheet only: the reminder keeps
# a teaching by those three (`prompt.template_data.teaching`), so a turn's numbers (live values, clocks, dice) must not
# change it
Teach = Callable[[Ruleset, GameState], "Mapping[str, Any] | None"]


@frozen(slots=True)
class Shape:
    """How a tag of one op is written, for the reply's grammar (commands/reply_grammar.py), kept beside the
    handler that checks the same attributes, so the two cannot drift apart. The grammar writes the keys in this
    order: `fixed` (`op="spend"`), then `required`, one of `choose_one`, then each of `optional` or not; the
    values each key takes come from reply_grammar's table of domains. `party`: `sheet="party"` may name the
    party sheet; `character`: `who` names a character (or `party`, for each of them); `roller`: `who` names one
    character. An op without a Shape is written with the tag syntax alone (any attributes)."""

    fixed: tuple[tuple[str, str], ...] = ()
    required: tuple[str, ...] = ()
    choose_one: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    party: bool = False
    character: bool = False
    roller: bool = False


@frozen(slots=True)
class Op:
    """One op of a family (`spend`, `tick`) and the handler that applies it."""

    name: str
    handler: Handler
    shape: Shape | None = None  # how the reply's grammar writes it; None: any attributes


@frozen
class Family:
    """One tag name, how to tell which op a tag asks for, and the ops in the order they are listed."""

    name: str
    op_of: OpOf
    ops: Mapping[str, Handler]
    teach: Teach | None = None  # what the reminder teaches of this kind; None: nothing (DEC-18)
    shapes: Mapping[str, Shape | None] = field(default_factory=dict)  # op -> how the reply's grammar writes it

    @classmethod
    def of(cls, name: str, op_of: OpOf, ops: Iterable[Op], teach: Teach | None = None) -> Family:
        table: dict[str, Handler] = {}
        shapes: dict[str, Shape | None] = {}
        for op in ops:
            if op.name in table:
                raise ValueError(f"family {name!r} lists op {op.name!r} twice")
            table[op.name] = op.handler
            shapes[op.name] = op.shape
        return cls(name, op_of, MappingProxyType(table), teach, MappingProxyType(shapes))
