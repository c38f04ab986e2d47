"""Command families keyed by tag name and op, so each family plugs in without touching the dispatcher."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag
from .result import Outcome, Result

Handler = Callable[[Ruleset, GameState, Tag], Outcome]
OpOf = Callable[[Ruleset, Tag], "str | Result"]


@dataclass
class Family:
    """One tag name (`clock`, `sheet`): how to tell its op, and a handler per op."""

    name: str
    op_of: OpOf
    handlers: dict[str, Handler] = field(default_factory=dict)

    def op(self, *ops: str) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            for op in ops:
                self.handlers[op] = fn
            return fn

        return register


FAMILIES: dict[str, Family] = {}


def family(name: str, op_of: OpOf) -> Family:
    fam = FAMILIES.get(name)
    if fam is None:
        fam = FAMILIES[name] = Family(name, op_of)
    return fam
