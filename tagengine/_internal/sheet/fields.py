"""Field and cell values as the sheet editor shows them (HIDE-5): unset or no longer offered reads the default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ruleset.sheet import ColumnDef, FieldDef
from ..state import default_value


def read_value(f: FieldDef | ColumnDef, raw: Any) -> Any:
    """A field's or cell's stored value as the sheet reads it: unset, of the wrong type or no longer offered, its
    default; a number beyond its bounds, the bound."""
    if raw is None:
        return default_value(f)
    t = f.type
    if t == "number":
        if not isinstance(raw, int) or isinstance(raw, bool):
            return default_value(f)
        if f.min is not None and raw < f.min:
            return f.min
        if f.max is not None and raw > f.max:
            return f.max
        return raw
    if t == "boolean":
        return raw if isinstance(raw, bool) else default_value(f)
    if t == "enum":
        return raw if raw in (f.values or []) else default_value(f)
    return raw if isinstance(raw, str) else default_value(f)


def field_values(defs: list[FieldDef], stored: Mapping[str, Any]) -> dict[str, Any]:
    return {f.id: read_value(f, stored.get(f.id)) for f in defs}


def rows(columns: list[ColumnDef], stored: list[Any]) -> list[dict[str, Any]]:
    """Every row with every cell, an empty cell read as its column's default (REF-4)."""
    out = []
    for row in stored:
        r = row if isinstance(row, Mapping) else {}
        out.append({c.id: read_value(c, r.get(c.id)) for c in columns})
    return out
