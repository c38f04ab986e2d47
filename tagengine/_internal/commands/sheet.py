"""The `[sheet: ...]` family: its op is the `op` attribute; each op lives in a module of its own."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..tags import Tag
from . import advance, conditions, livetext, pools, rests, states, tracks, wounds
from .family import Family
from .result import Result, refused


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    op = tag.get("op")
    if op is None:
        return refused("missing-attribute")
    return op.strip().lower()


# The sheet ops, in the order the docs and the reminder list them. Add an op here.
FAMILY = Family.of("sheet", op_of, (
    pools.spend, pools.restore, wounds.damage, tracks.track, states.set_state, conditions.condition,
    livetext.set_text, rests.rest, advance.advance,
))
