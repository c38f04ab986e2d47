"""Progress clocks (spec section 16, CLOCK-1..27): create, tick, clear."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..ruleset import Ruleset
from ..state import Clock, GameState
from ..tags import Tag
from ..text import normalise, prompt_unsafe
from .family import Family, Handler, Op, Shape
from .numbers import parse_int
from .result import Outcome, Result, ok, refuse, refused

ACTIONS = ("size", "tick", "clear")
ACTION_SET = frozenset(ACTIONS)
ATTRIBUTES = frozenset({"name", *ACTIONS})


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    """The one action a clock tag asks for (CLOCK-17), after the checks every clock tag shares."""
    if rs.file.clocks is None:
        return refused("clocks-disabled")  # CLOCK-2
    if not tag.keyset <= ATTRIBUTES:
        return refused("unknown-attribute")
    if tag.get("name") is None:
        return refused("missing-attribute")
    actions = tag.keyset & ACTION_SET  # a key written twice never gets here (duplicate-attribute, DEC-7)
    if len(actions) != 1:
        return refused("one-action")
    if bad_name(name_of(tag)):
        return refused("bad-name")
    return next(iter(actions))


def name_of(tag: Tag) -> str:
    return (tag.get("name") or "").strip()


def clock_op(name: str) -> Callable[[Handler], Op]:
    """A clock op: its handler runs after `op_of` has checked what every clock tag shares; its one action
    is its name, written after the clock's (CLOCK-17)."""
    return lambda fn: Op(name, fn, Shape(required=("name", name)))


@lru_cache(maxsize=1024)
def bad_name(name: str) -> bool:
    """CLOCK-16: one line of 1 to 100 characters, no double quotes, brackets, control characters or {{ }}."""
    return not 1 <= len(name) <= 100 or prompt_unsafe(name, label=True) is not None


def clock_index(state: GameState, name: str) -> int | None:
    """The index of the clock named `name` (DEC-8: case and spacing aside) in the state's clocks, or None."""
    key = normalise(name)
    for i, c in enumerate(state.clocks):
        if normalise(c.name) == key:
            return i
    return None


def fill(c: Clock) -> str:
    return f"{c.filled}/{c.size}"


@clock_op("size")
def create(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    """CLOCK-10, CLOCK-11: an empty clock of an allowed size, a new name, under `max`."""
    cfg = rs.file.clocks
    assert cfg is not None
    name = name_of(tag)
    size = parse_int(tag.get("size"))
    if size is None:
        return refuse(state, "invalid-amount")
    if size not in cfg.sizes:
        return refuse(state, "bad-size")
    if clock_index(state, name) is not None:
        return refuse(state, "clock-exists")
    if len(state.clocks) >= cfg.max:  # complete clocks count until cleared (CLOCK-13)
        return refuse(state, "clock-limit")
    clock = Clock(name, size, 0)
    return Outcome(ok(fill(clock)), state.with_clocks((*state.clocks, clock)))


@clock_op("tick")
def tick(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    """CLOCK-12..14: add (or with a negative tick remove) segments, clamped to 0..size."""
    by = parse_int(tag.get("tick"))
    if by is None:
        return refuse(state, "invalid-amount")
    i = clock_index(state, name_of(tag))
    if i is None:
        return refuse(state, "unknown-clock")
    c = state.clocks[i]
    new = Clock(c.name, c.size, max(0, min(c.size, c.filled + by)))
    clocks = (*state.clocks[:i], new, *state.clocks[i + 1:])
    return Outcome(ok(fill(new)), state.with_clocks(clocks))


@clock_op("clear")
def clear(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    """CLOCK-15: remove the named clock; `clear` is a bare flag word (DEC-1)."""
    if tag.get("clear") is not None:
        return refuse(state, "invalid-value")
    i = clock_index(state, name_of(tag))
    if i is None:
        return refuse(state, "unknown-clock")
    return Outcome(ok("cleared"), state.with_clocks(state.clocks[:i] + state.clocks[i + 1:]))


def teach(rs: Ruleset, state: GameState) -> dict[str, Any] | None:
    """What prompts/teach/clock.j2 reads: the sizes and the most clocks kept; nothing without clocks (DEC-18)."""
    cfg = rs.file.clocks
    return None if cfg is None else {"sizes": cfg.sizes, "max": cfg.max}


FAMILY = Family.of("clock", op_of, (create, tick, clear), teach)
