"""The `[sheet: ...]` family: its op is the `op` attribute. Each op's module registers itself here."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..tags import Tag
from .registry import family
from .result import Result, refused


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    op = tag.get("op")
    if op is None:
        return refused("missing-attribute")
    return op.strip().lower()


SHEETS = family("sheet", op_of)
