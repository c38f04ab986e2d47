"""Plain tracks (TRACK-1..7) and wound tracks (WOUND-4..14, 44, 48, 54..57, HIDE-7)."""

from __future__ import annotations

from ..live import TrackDef
from .derived import step_table
from .inspection import Inspection, count_problem


def plain(ctx: Inspection, t: TrackDef, path: str) -> None:
    if t.max is None:
        ctx.add(f"{path}.max", "missing-key", "a plain track needs a `max` (TRACK-2)", None)
    for key in ("fill", "onFull", "extra"):
        if getattr(t, key) is not None:
            ctx.add(f"{path}.{key}", "key-not-allowed", f"`{key}` belongs to wound tracks (WOUND-1)", None)
    default = t.default if t.default is not None else t.min
    if isinstance(t.max, int):
        if t.min > t.max:
            ctx.add(f"{path}.min", "bad-range", f"min {t.min} is above max {t.max} (TRACK-3)", t.min)
        elif not t.min <= default <= t.max:
            ctx.add(f"{path}.default", "bad-default", f"default {default} is outside {t.min}..{t.max} (TRACK-3)",
                    default)
    elif t.default is not None and t.default < t.min:
        ctx.add(f"{path}.default", "bad-default", f"default {t.default} is below min {t.min} (TRACK-3)", t.default)


def wound(ctx: Inspection, t: TrackDef, path: str) -> None:
    if t.kinds is None:
        ctx.add(f"{path}.kinds", "missing-kinds", "levels or boxes without kinds: a mark must have a kind (WOUND-9)",
                None)
    elif t.levels is None and t.boxes is None:
        ctx.add(path, "nowhere-to-mark", "kinds without levels or boxes: there is nowhere to mark (WOUND-8)", t.id)
    if t.levels is not None and t.boxes is not None:
        ctx.add(path, "levels-and-boxes", "a track has levels or boxes, never both (WOUND-10)", t.id)
    if t.kinds is not None:
        count_problem(ctx, f"{path}.kinds", t.kinds, 1, 6, "kinds", "WOUND-6")
        severities = [k.severity for k in t.kinds]
        if len(set(severities)) != len(severities):
            ctx.add(f"{path}.kinds", "duplicate-severity", f"severities must be distinct: {severities} (WOUND-7)",
                    severities)
    if t.min != 0:
        ctx.add(f"{path}.min", "bad-min", f"a wound track starts with no marks, so its min is 0, not {t.min} "
                "(WOUND-12)", t.min)
    if t.default is not None:
        ctx.add(f"{path}.default", "key-not-allowed", "a wound track starts unmarked; it has no default (WOUND-12)",
                t.default)
    if t.hideWhen is not None:
        ctx.add(f"{path}.hideWhen", "hidden-wound-track", "a wound track cannot be hidden: rolls and fights read "
                "it whatever the sheet shows (HIDE-7)", None)
    if t.levels is not None:
        count_problem(ctx, f"{path}.levels", t.levels, 1, 16, "levels", "WOUND-4")
        for i, lvl in enumerate(t.levels):
            if lvl.penalty > 0:
                ctx.add(f"{path}.levels[{i}].penalty", "bad-penalty", f"penalty {lvl.penalty} is above 0 (WOUND-5)",
                        lvl.penalty)
        if t.max is not None and t.max != len(t.levels):
            ctx.add(f"{path}.max", "wound-max-mismatch", f"max is {t.max if isinstance(t.max, int) else 'a value'} "
                    f"but {len(t.levels)} levels; it is refused, not corrected (WOUND-13)", t.max
                    if isinstance(t.max, int) else t.max.describe())
        if t.fill == "indexed":
            ctx.add(f"{path}.fill", "indexed-needs-boxes", "only a track with numbered boxes fills by box (WOUND-48)",
                    "indexed")
    if t.boxes is not None:
        if t.max is None:
            ctx.add(f"{path}.max", "missing-key", "a boxed track is as long as its own max (WOUND-14, WOUND-44)", None)
        elif isinstance(t.max, int) and not 1 <= t.max <= 64:
            ctx.add(f"{path}.max", "out-of-range", f"a boxed track has 1 to 64 boxes, not {t.max} (WOUND-44)", t.max)
        if t.boxes.penalty is not None:
            step_table(ctx, f"{path}.boxes.penalty.table", t.boxes.penalty.table, penalties=True)
    if t.fill == "indexed" and t.onFull != "refuse":
        ctx.add(f"{path}.onFull", "indexed-must-refuse", 'an indexed track always refuses when full; declare '
                '"onFull": "refuse" next to "fill": "indexed" (WOUND-54)', t.onFull)
    if t.extra is not None:
        extra(ctx, t, f"{path}.extra")


def extra(ctx: Inspection, t: TrackDef, path: str) -> None:
    ex = t.extra
    assert ex is not None
    if t.levels is None:
        ctx.add(path, "extra-needs-levels", "extra levels lengthen a track with named levels (WOUND-55)", None)
    lst = ctx.sheet.lists.get(ex.list)
    if lst is None:
        ctx.add(f"{path}.list", "unknown-ref", f"names list {ex.list!r}, which the sheet does not declare (WOUND-55)",
                ex.list)
        return
    cols = {c.id: c for c in lst.columns}
    for key in ("countColumn", "penaltyColumn"):
        cid = getattr(ex, key)
        c = cols.get(cid)
        if c is None or c.type != "number":
            ctx.add(f"{path}.{key}", "not-numeric", f"{key} must name a number column of list {ex.list!r} (WOUND-56)",
                    cid)


def inspect_tracks(ctx: Inspection) -> None:
    for i, t in enumerate(ctx.rs.sheet.live.tracks):
        path = f"sheet.live.tracks[{i}]"
        if t.is_wound:
            wound(ctx, t, path)
        else:
            plain(ctx, t, path)
