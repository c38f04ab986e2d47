"""Derived values: each op's operands (SHEET-19..27) and `enumTable` (ENUM-1..10)."""

from __future__ import annotations

from ..sheet import DerivedDef
from .inspection import Inspection, count_problem

OPERANDS = {
    "sum": ({"of"}, set()),
    "min": ({"of"}, set()),
    "max": ({"of"}, set()),
    "multiply": ({"of"}, set()),
    "scale": ({"from_", "by"}, {"round"}),
    "stepTable": ({"from_", "table"}, {"default"}),
    "enumTable": ({"from_", "table"}, {"default"}),
}
SHARED_KEYS = {"id", "label", "op", "section", "hideWhen"}


def step_table(ctx: Inspection, path: str, table: object, *, penalties: bool = False) -> None:
    """A step table is `[[threshold, value], ...]` with thresholds rising (SHEET-26, WOUND-45)."""
    if not isinstance(table, list) or not table:
        ctx.add(path, "bad-table", "a step table is a non-empty list of [threshold, value] pairs (SHEET-26)", table)
        return
    last = None
    for i, (threshold, value) in enumerate(table):
        if last is not None and threshold <= last:
            ctx.add(f"{path}[{i}]", "bad-table", f"thresholds must rise; {threshold} follows {last} (SHEET-26)",
                    threshold)
        last = threshold
        if penalties and value > 0:
            ctx.add(f"{path}[{i}]", "bad-penalty", f"penalty {value} is above 0 (WOUND-45)", value)


def enum_table(ctx: Inspection, d: DerivedDef, path: str) -> None:
    src = d.from_
    if src is None or src.key not in ("field", "liveState"):
        ctx.add(f"{path}.from", "bad-enum-source", "an enumTable reads exactly one of `field` (an enum field) or "
                "`liveState` (ENUM-2)", src.key if src else None)
        return
    if src.key == "field":
        f = ctx.sheet.fields.get(src.target)
        if f is None:
            ctx.add(f"{path}.from.field", "unknown-ref", f"names field {src.target!r}, which the sheet does not "
                    "declare (ENUM-2)", src.target)
            return
        if f.type != "enum":
            ctx.add(f"{path}.from.field", "not-enum", f"field {src.target!r} is a {f.type} field; an enumTable "
                    "reads an enum field (ENUM-2)", src.target)
            return
        possible = set(f.values or [])
    else:
        st = ctx.sheet.states.get(src.target)
        if st is None:
            ctx.add(f"{path}.from.liveState", "unknown-ref", f"names live state {src.target!r}, which the sheet "
                    "does not declare (ENUM-2)", src.target)
            return
        possible = set(st.values)
    if not isinstance(d.table, dict):
        ctx.add(f"{path}.table", "bad-table", "an enumTable's table maps each value to a number (ENUM-1)", d.table)
        return
    count_problem(ctx, f"{path}.table", list(d.table), 1, 40, "rows", "ENUM-3")
    for key in d.table:
        if key not in possible:
            ctx.add(f"{path}.table.{key}", "unknown-value", f"{key!r} is not a value {src.describe()} can hold "
                    "(ENUM-3)", key)


def inspect_derived(ctx: Inspection) -> None:
    derived = ctx.rs.sheet.derived
    count_problem(ctx, "sheet.derived", derived, 0, 800, "derived values", "SHEET-20")
    for i, d in enumerate(derived):
        path = f"sheet.derived[{i}]"
        needed, optional = OPERANDS[d.op]
        written = d.written - SHARED_KEYS
        for key in sorted(needed - written):
            name = "from" if key == "from_" else key
            ctx.add(f"{path}.{name}", "missing-key", f"op {d.op!r} needs `{name}` (SHEET-23)", None)
        for key in sorted(written - needed - optional):
            name = "from" if key == "from_" else key
            ctx.add(f"{path}.{name}", "key-not-allowed", f"op {d.op!r} does not take `{name}` (SHEET-23)", None)
        if d.op == "multiply":
            count_problem(ctx, f"{path}.of", d.of, 2, 6, "operands", "SHEET-25")
        elif d.op in ("sum", "min", "max"):
            count_problem(ctx, f"{path}.of", d.of, 1, 64, "operands", "SHEET-23")
        elif d.op == "stepTable" and d.table is not None:
            step_table(ctx, f"{path}.table", d.table)
        elif d.op == "enumTable":
            enum_table(ctx, d, path)
