"""Fields and list columns (SHEET-11..18, 28..34) and `hideWhen` (HIDE-1..8)."""

from __future__ import annotations

import re
from typing import Any

from ..hide import HideWhenDef
from ..index import SheetIndex
from ..sheet import ColumnDef, ColumnRefDef, FieldDef, ListDef
from .inspection import Inspection, count_problem

DICE_VALUE = r"^\d*d\d+$"


def fits(f: FieldDef | ColumnDef, value: Any, *, bounds: bool) -> str | None:
    """Why `value` can never be held by `f`, or None when it can (HIDE-3, HIDE-4)."""
    t = f.type
    if t == "number":
        if not isinstance(value, int) or isinstance(value, bool):
            return "is not a whole number"
        if bounds and f.min is not None and value < f.min:
            return f"is below the field's min {f.min}"
        if bounds and f.max is not None and value > f.max:
            return f"is above the field's max {f.max}"
    elif t == "boolean":
        if not isinstance(value, bool):
            return "is not true or false"
    elif t == "enum":
        if value not in (f.values or []):
            return f"is not one of the field's values {f.values}"
    elif not isinstance(value, str):
        return "is not text"
    elif bounds and f.maxLength is not None and len(value) > f.maxLength:
        return f"is longer than the field's maxLength {f.maxLength}"
    return None


def hide_when(ctx: Inspection, hw: HideWhenDef | None, path: str, idx: SheetIndex) -> None:
    if hw is None:
        return
    f = idx.fields.get(hw.field)
    if f is None:
        rule = "PARTY-10" if idx.party else "HIDE-1"
        ctx.add(f"{path}.field", "unknown-ref", f"names field {hw.field!r}, which the sheet does not declare "
                f"({rule})", hw.field)
        return
    if hw.form == "in" and not hw.values:
        ctx.add(f"{path}.in", "bad-count", "`in` needs at least one value (HIDE-2)", [])
    for i, v in enumerate(hw.values):
        why = fits(f, v, bounds=hw.form != "equals")
        if why:
            sub = f"{path}.{hw.form}" + (f"[{i}]" if hw.form == "in" else "")
            ctx.add(sub, "impossible-value", f"{v!r} {why}, so this rule could never match (HIDE-3, HIDE-4)", v)


def value_def(ctx: Inspection, f: FieldDef | ColumnDef, path: str, what: str) -> None:
    """Keys that fit the type, a default the field can hold, suggestions and pick."""
    t = f.type
    if t != "number":
        for key in ("min", "max"):
            if getattr(f, key) is not None:
                ctx.add(f"{path}.{key}", "key-not-allowed", f"`{key}` applies only to number {what}s", t)
    elif f.min is not None and f.max is not None and f.min > f.max:
        ctx.add(f"{path}.min", "bad-range", f"min {f.min} is above max {f.max}", f.min)
    if f.maxLength is not None:
        if t not in ("text", "longtext"):
            ctx.add(f"{path}.maxLength", "key-not-allowed", f"`maxLength` applies only to text {what}s", t)
        elif f.maxLength < 1:
            ctx.add(f"{path}.maxLength", "out-of-range", "maxLength must be at least 1", f.maxLength)
    if t == "enum":
        if not f.values:
            ctx.add(f"{path}.values", "missing-key", f"an enum {what} lists its `values`", None)
        else:
            if len(set(f.values)) != len(f.values):
                ctx.add(f"{path}.values", "duplicate-value", "enum values must be distinct", f.values)
            for i, v in enumerate(f.values):
                ctx.safe_text(f"{path}.values[{i}]", v, 100, "STATE-4", label=True)
        for k in (f.valueLabels or {}):
            if k not in (f.values or []):
                ctx.add(f"{path}.valueLabels.{k}", "unknown-value", f"{k!r} is not one of the values", k)
    else:
        for key in ("values", "valueLabels"):
            if getattr(f, key) is not None:
                ctx.add(f"{path}.{key}", "key-not-allowed", f"`{key}` applies only to enum {what}s", t)
    if f.default is not None:
        why = fits(f, f.default, bounds=True)
        if why:
            ctx.add(f"{path}.default", "bad-default", f"default {f.default!r} {why}", f.default)
    if f.suggestions is not None:
        if t != "text":
            ctx.add(f"{path}.suggestions", "key-not-allowed", f"suggestions go on a text {what} (SHEET-13, D-2)", t)
        count_problem(ctx, f"{path}.suggestions", f.suggestions, 1, 40, "suggestions", "SHEET-13")
        for i, word in enumerate(f.suggestions):
            ctx.safe_text(f"{path}.suggestions[{i}]", word, 100, "SHEET-13", label=True)
    if f.pick is not None and f.suggestions is None:
        ctx.add(f"{path}.pick", "pick-needs-suggestions", "pick says how many suggestions to choose (SHEET-16)",
                None)


def inspect_fields(ctx: Inspection) -> None:
    inspect_sheet_fields(ctx, ctx.sheet, ctx.rs.sheet.fields, ctx.rs.sheet.lists, "sheet")
    idx = ctx.sheet
    for i, d in enumerate(ctx.rs.sheet.derived):
        hide_when(ctx, d.hideWhen, f"sheet.derived[{i}].hideWhen", idx)
    for i, p in enumerate(ctx.rs.sheet.live.pools):
        hide_when(ctx, p.hideWhen, f"sheet.live.pools[{i}].hideWhen", idx)
    for i, t in enumerate(ctx.rs.sheet.live.tracks):
        hide_when(ctx, t.hideWhen, f"sheet.live.tracks[{i}].hideWhen", idx)
    for i, st in enumerate(ctx.rs.sheet.live.states):
        hide_when(ctx, st.hideWhen, f"sheet.live.states[{i}].hideWhen", idx)


def inspect_sheet_fields(ctx: Inspection, idx: SheetIndex, fields: list[FieldDef], lists: list[ListDef],
                         base: str) -> None:
    """Fields and lists of a character or party sheet (PARTY-2: the same schema)."""
    for i, f in enumerate(fields):
        value_def(ctx, f, f"{base}.fields[{i}]", "field")
        hide_when(ctx, f.hideWhen, f"{base}.fields[{i}].hideWhen", idx)
    for i, lst in enumerate(lists):
        path = f"{base}.lists[{i}]"
        count_problem(ctx, f"{path}.columns", lst.columns, 1, 24, "columns", "SHEET-29")
        cols = {c.id: c for c in lst.columns}
        for j, c in enumerate(lst.columns):
            cpath = f"{path}.columns[{j}]"
            value_def(ctx, c, cpath, "column")
            if c.roll is not None:
                if c.type != "number":
                    ctx.add(f"{cpath}.roll", "key-not-allowed", "a roll fills a numeric column (SHEET-32)", c.type)
                sides = c.roll.sides
                if isinstance(sides, int) and sides < 2:
                    ctx.add(f"{cpath}.roll.sides", "out-of-range", "a die has at least 2 sides (SHEET-33)", sides)
                if isinstance(sides, ColumnRefDef):
                    other = cols.get(sides.column)
                    ok = other is not None and (other.type == "number" or (
                        other.type == "enum" and all(re.match(DICE_VALUE, v) for v in other.values or [])))
                    if not ok:
                        ctx.add(f"{cpath}.roll.sides.column", "bad-sides", "sides names a numeric column or an "
                                "enum column whose values read as dice, such as d8 (SHEET-33)", sides.column)
        if lst.pools is not None:
            mc = cols.get(lst.pools.maxColumn)
            if mc is None or mc.type != "number":
                ctx.add(f"{path}.pools.maxColumn", "not-numeric", "a row pool's max is a numeric column (SHEET-31)",
                        lst.pools.maxColumn)
        hide_when(ctx, lst.hideWhen, f"{path}.hideWhen", idx)
