"""Reading a wound track (WOUND-13..18, 44..47, 55..60): its length, levels, marks and penalty."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..memo import IdentityCache
from ..ruleset.live import TrackDef
from ..state import WoundMarks
from .marking import TrackShape
from .ops import step
from .views import WoundLevel, WoundView

_BASE: IdentityCache[tuple[WoundLevel, ...]] = IdentityCache()
_SEVERITY: IdentityCache[Mapping[str, int]] = IdentityCache()
_SHAPES: IdentityCache[dict[int, TrackShape]] = IdentityCache()


def base_levels(track: TrackDef) -> tuple[WoundLevel, ...]:
    """The track's own named levels, built once per track model."""
    return _BASE.get((track,), lambda: tuple(WoundLevel(lv.label, lv.penalty) for lv in track.levels or []))


def levels_with_extra(track: TrackDef, rows: list[dict[str, Any]] | None) -> tuple[WoundLevel, ...]:
    """Named levels plus those a list adds (WOUND-55..58); a hidden list (rows=None) adds nothing (WOUND-59)."""
    ex = track.extra
    if ex is None or not rows:
        return base_levels(track)
    levels = list(base_levels(track))
    for row in rows:
        count = max(0, min(16, int(row.get(ex.countColumn) or 0)))  # WOUND-56: at most 16 per row
        penalty = min(0, int(row.get(ex.penaltyColumn) or 0))
        at = 0
        for i, lv in enumerate(levels):
            if lv.penalty >= penalty:  # WOUND-57: after the last level at least as good
                at = i + 1
        before = levels[at - 1] if at else None
        label = before.label if before is not None and before.penalty == penalty else str(penalty)  # WOUND-58
        levels[at:at] = [WoundLevel(label, penalty, extra=True)] * count
    return tuple(levels)


def view(track: TrackDef, marks: WoundMarks | None, length: int, rows: list[dict[str, Any]] | None) -> WoundView:
    """The track as it stands. Marks past the track's current length are overflow (WOUND-60)."""
    marks = marks or WoundMarks()
    kinds = tuple((k.id, k.label, k.severity) for k in track.kinds or [])
    if track.boxes is not None:
        levels: tuple[WoundLevel, ...] = ()
    else:
        levels = levels_with_extra(track, rows)
        length = len(levels)
    kept = marks.marks[:length]
    lost = sum(1 for m in marks.marks[length:] if m is not None)
    filled = sum(1 for m in kept if m is not None)
    if track.boxes is not None:
        pen = track.boxes.penalty
        penalty = step(pen.table, filled if pen.by == "filled" else length - filled) if pen else 0
        penalty = min(0, penalty)
    else:
        penalty = levels[filled - 1].penalty if filled else 0  # WOUND-18: the lowest marked level, not a sum
    return WoundView(track.id, track.label, track.boxes is not None, length, levels, tuple(kept),
                     marks.overflow + lost, penalty, kinds)


def shape(track: TrackDef, length: int) -> TrackShape:
    """What the mark algebra needs of the track at `length` boxes or levels, built once per track model and
    length: every wound command reads it."""
    by_length = _SHAPES.get((track,), dict)
    found = by_length.get(length)
    if found is None:
        found = by_length[length] = TrackShape(length, severity_of(track), track.fill == "indexed",
                                               track.onFull == "refuse")
    return found


def severity_of(track: TrackDef) -> Mapping[str, int]:
    """Kind id -> severity, built once per track model."""
    return _SEVERITY.get((track,), lambda: {k.id: k.severity for k in track.kinds or []})
