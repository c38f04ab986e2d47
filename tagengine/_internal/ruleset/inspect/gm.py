"""GM texts and summary (GM-1..18, GMREF-1..7), and clocks (CLOCK-3..7)."""

from __future__ import annotations

from ..index import SheetIndex
from ..top import SummaryDef
from .inspection import Inspection, count_problem


def summary_def(ctx: Inspection, sm: SummaryDef | None, path: str, idx: SheetIndex) -> None:
    """`gm.sheetSummary` or `party.summary`: every name exists; list columns fit (GM-13..17)."""
    if sm is None:
        return
    for i, fid in enumerate(sm.fields):
        if fid not in idx.fields:
            ctx.add(f"{path}.fields[{i}]", "unknown-ref", f"names field {fid!r}, which the sheet does not declare "
                    "(GM-13)", fid)
    if idx.party and sm.derived:
        ctx.add(f"{path}.derived", "must-be-empty", "a party summary has no derived values (PARTY-13)", sm.derived)
    else:
        for i, did in enumerate(sm.derived):
            if did not in idx.derived:
                ctx.add(f"{path}.derived[{i}]", "unknown-ref", f"names derived value {did!r}, which the sheet does "
                        "not declare (GM-13)", did)
    for i, sl in enumerate(sm.lists):
        lp = f"{path}.lists[{i}]"
        lst = idx.lists.get(sl.list)
        if lst is None:
            rule = "PARTY-13, PARTY-32" if idx.party else "GM-13"
            ctx.add(f"{lp}.list", "unknown-ref", f"names list {sl.list!r}, which the sheet does not declare ({rule})",
                    sl.list)
            continue
        cols = {c.id: c for c in lst.columns}
        if sl.nameColumn is not None:
            c = cols.get(sl.nameColumn)
            if c is None or c.type not in ("text", "enum"):
                ctx.add(f"{lp}.nameColumn", "bad-name-column", f"nameColumn must be a text or enum column of "
                        f"{sl.list!r} (GM-15)", sl.nameColumn)
        count_problem(ctx, f"{lp}.columns", sl.columns, 0, 3, "columns", "GM-16")
        for j, cid in enumerate(sl.columns or []):
            if cid not in cols:
                ctx.add(f"{lp}.columns[{j}]", "unknown-ref", f"list {sl.list!r} has no column {cid!r} (GM-16)", cid)


def inspect_gm(ctx: Inspection) -> None:
    rs = ctx.rs
    if rs.gm is not None:
        for key in ("checkGuidance", "sheetGuidance", "worldGuidance"):
            ctx.safe_text(f"gm.{key}", getattr(rs.gm, key), 1500, "GMREF-3")
        summary_def(ctx, rs.gm.sheetSummary, "gm.sheetSummary", ctx.sheet)
    ctx.safe_text("gmReference", rs.gmReference, 16000, "GMREF-1, GMREF-7")
    if rs.clocks is not None:
        c = rs.clocks
        count_problem(ctx, "clocks.sizes", c.sizes, 1, 6, "sizes", "CLOCK-4")
        if len(set(c.sizes)) != len(c.sizes):
            ctx.add("clocks.sizes", "duplicate-value", f"sizes must be distinct: {c.sizes} (CLOCK-4)", c.sizes)
        for i, size in enumerate(c.sizes):
            if not 2 <= size <= 12:
                ctx.add(f"clocks.sizes[{i}]", "out-of-range", f"a clock has 2 to 12 segments, not {size} (CLOCK-4)",
                        size)
        if not 1 <= c.max <= 12:
            ctx.add("clocks.max", "out-of-range", f"clocks.max is 1 to 12, not {c.max} (CLOCK-5)", c.max)
        ctx.safe_text("clocks.text", c.text, 400, "CLOCK-6")
