"""A list column filled by a roll (SHEET-32..34): the dice its Roll button rolls for a row, which the editor's
form shows and an edit rolls."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..ruleset.refs import ValueRefDef
from ..ruleset.sheet import ColumnDef, ColumnRefDef, ListDef
from .evaluator import Eval

_DIE = re.compile(r"[0-9]*[dD]([0-9]{1,4})")


def die_sides(cell: Any) -> int | None:
    """A cell read as a die's sides (SHEET-33): a number, or an enum value that reads as dice (`d8`, `2d6`: the
    sides after the `d`); None for anything else."""
    if isinstance(cell, str):
        m = _DIE.fullmatch(cell)
        return int(m.group(1)) if m else None
    return cell if isinstance(cell, int) and not isinstance(cell, bool) else None


def roll_sides(ev: Eval, lst: ListDef, col: ColumnDef, row: Mapping[str, Any]) -> int | None:
    """The sides of the die `col` rolls for `row` (its cells as the sheet reads them, `fields.rows`): a number,
    another column of the row, or a value of the sheet (SHEET-33); None when the column has no roll or the
    other column holds no die."""
    if col.roll is None:
        return None
    sides = col.roll.sides
    if isinstance(sides, int):
        return sides
    if isinstance(sides, ColumnRefDef):
        return die_sides(row.get(sides.column))
    assert isinstance(sides, ValueRefDef)
    return ev.read(sides)


def roll_text(ev: Eval, lst: ListDef, col: ColumnDef, row: Mapping[str, Any] | None) -> str | None:
    """What a Roll button rolls (SHEET-34): `1d8` for a row, or for the column `1d(Die)` when the die comes from
    another column; None for a column without a roll."""
    if col.roll is None:
        return None
    sides = col.roll.sides
    if row is None and isinstance(sides, ColumnRefDef):
        other = next((c.label for c in lst.columns if c.id == sides.column), sides.column)
        return f"{col.roll.count}d({other})"
    n = roll_sides(ev, lst, col, row or {})
    return f"{col.roll.count}d{'?' if n is None else n}"
