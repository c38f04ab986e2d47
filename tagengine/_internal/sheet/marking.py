"""Wound-track mark algebra (WOUND-15..26, 40..53): pure functions over a tuple of marks.

Severity fill keeps marks dense and sorted most severe first. Indexed fill keeps one slot per box
(`None` for a free box) and never moves a mark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Slots = tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class TrackShape:
    """What the algebra needs to know about one track as it stands."""

    length: int
    severity: Mapping[str, int]  # kind id -> severity
    indexed: bool = False
    refuse_when_full: bool = False

    @property
    def scale(self) -> list[str]:
        """Kind ids from lightest to most severe: the ruleset's scale of kinds (WOUND-20)."""
        return sorted(self.severity, key=lambda k: self.severity[k])


class TrackFull(Exception):
    """No free box for a mark on a track that refuses when full (WOUND-52, WOUND-53)."""


def normalise(t: TrackShape, marks: Sequence[str | None], overflow: int) -> tuple[Slots, int]:
    """Marks that no longer fit the track's length are overflow (WOUND-60); severity order (WOUND-15)."""
    kept = list(marks[: t.length])
    overflow += sum(1 for m in marks[t.length:] if m is not None)
    if not t.indexed:
        kept = sorted((m for m in kept if m is not None), key=lambda m: -t.severity.get(m, 0))
    while kept and kept[-1] is None:
        kept.pop()
    return tuple(kept), overflow


def _insert(t: TrackShape, marks: list[str | None], kind: str) -> None:
    """WOUND-17: by severity, the highest level its severity entitles it to; lighter marks move down."""
    sev = t.severity[kind]
    at = next((i for i, m in enumerate(marks) if m is not None and t.severity[m] < sev), len(marks))
    marks.insert(at, kind)


def mark(t: TrackShape, marks: Slots, overflow: int, kind: str, amount: int,
         box: int | None = None) -> tuple[Slots, int]:
    """Add `amount` marks of `kind`, one at a time (WOUND-19). Raises TrackFull, having changed nothing."""
    if t.indexed or t.refuse_when_full:
        free = t.length - sum(1 for m in marks if m is not None)
        if amount > free:
            raise TrackFull  # WOUND-53: the whole command is refused
    if t.indexed:
        return _mark_indexed(t, marks, kind, amount, box), overflow
    out = [m for m in marks if m is not None]
    for _ in range(amount):
        if len(out) < t.length:
            _insert(t, out, kind)
            continue
        scale = t.scale
        lightest = min(range(len(out)), key=lambda i: (t.severity[out[i]], -i)) if out else None
        if lightest is None or scale.index(out[lightest]) == len(scale) - 1:
            overflow += 1  # WOUND-21: past the highest severity
            continue
        raised = scale[scale.index(out[lightest]) + 1]  # WOUND-20: one step, whatever the new mark's kind
        del out[lightest]
        _insert(t, out, raised)
    return tuple(out), overflow


def _mark_indexed(t: TrackShape, marks: Slots, kind: str, amount: int, box: int | None) -> Slots:
    """WOUND-48, WOUND-49: the named box or the first; if taken, the next free box above."""
    slots: list[str | None] = [*marks, *([None] * (t.length - len(marks)))]
    start = (box or 1) - 1
    for _ in range(amount):
        i = next((j for j in range(start, t.length) if slots[j] is None), None)
        if i is None:
            raise TrackFull
        slots[i] = kind
    while slots and slots[-1] is None:
        slots.pop()
    return tuple(slots)


def heal(t: TrackShape, marks: Slots, overflow: int, count: int, kind: str | None = None) -> tuple[Slots, int]:
    """Clear `count`: overflow first (WOUND-24), then the lightest marks (WOUND-26); with a kind of the
    track, only marks of that kind and no overflow (WOUND-25). Indexed: the highest of the lightest
    (WOUND-50)."""
    if kind is not None and kind not in t.severity:
        kind = None  # WOUND-26 (interpretation): a kind the track does not have clears the lightest
    slots: list[str | None] = list(marks)
    for _ in range(count):
        if kind is None and overflow > 0:
            overflow -= 1
            continue
        candidates = [i for i, m in enumerate(slots) if m is not None and (kind is None or m == kind)]
        if not candidates:
            break
        lightest = min(t.severity[slots[i]] for i in candidates)  # type: ignore[index]
        i = max(i for i in candidates if t.severity[slots[i]] == lightest)  # type: ignore[index]
        if t.indexed:
            slots[i] = None
        else:
            del slots[i]
    while slots and slots[-1] is None:
        slots.pop()
    return tuple(slots), overflow


def reduce_to(t: TrackShape, marks: Slots, overflow: int, keep: int, kind: str | None = None) -> tuple[Slots, int]:
    """WOUND-40, WOUND-42: a rest step with `to` leaves at most `keep` marks, overflow included (or, with
    a kind, at most `keep` marks of that kind). Never adds marks (WOUND-43)."""
    filled = sum(1 for m in marks if m is not None and (kind is None or m == kind))
    have = filled if kind is not None else filled + overflow
    return heal(t, marks, overflow, max(0, have - keep), kind)
