"""Wound-track mark algebra (WOUND-15..26, 40..53): pure functions over a tuple of marks.

Severity fill keeps marks dense and sorted most severe first. Indexed fill keeps one slot per box
(`None` for a free box) and never moves a mark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

from ..records import frozen
from ..state import COUNT_MAX

Slots = tuple[str | None, ...]


@frozen(slots=True)
class TrackShape:
    """What the algebra needs to know about one track as it stands."""

    length: int
    severity: Mapping[str, int]  # kind id -> severity
    indexed: bool = False
    refuse_when_full: bool = False
    # Kind ids from lightest to most severe: the ruleset's scale of kinds (WOUND-20). Worked out once: a
    # track's shape is built once per track and length (wounds.shape).
    scale: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", tuple(sorted(self.severity, key=lambda k: self.severity[k])))


OVERFLOW_MAX = COUNT_MAX
"""The most overflow a track keeps (docs/decisions.md H-1): the largest number a tag can spell (G-6)."""


class TrackFull(Exception):
    """No free box for a mark on a track that refuses when full (WOUND-52, WOUND-53)."""


def fit_marks(t: TrackShape, marks: Sequence[str | None], overflow: int) -> tuple[Slots, int]:
    """Marks that no longer fit the track's length are overflow (WOUND-60); severity order (WOUND-15)."""
    kept = list(marks[: t.length])
    past = sum(1 for m in marks[t.length:] if m is not None) if len(marks) > t.length else 0
    overflow = min(OVERFLOW_MAX, overflow + past)
    if not t.indexed and kept:
        kept = sorted((m for m in kept if m is not None), key=lambda m: -t.severity.get(m or "", 0))
    while kept and kept[-1] is None:
        kept.pop()
    return tuple(kept), overflow


def _insert(t: TrackShape, marks: list[str | None], kind: str, count: int = 1) -> None:
    """WOUND-17: by severity, the highest level its severity entitles it to; lighter marks move down.
    `count` marks of one kind land side by side, exactly where one-at-a-time insertion puts them."""
    sev = t.severity[kind]
    at = next((i for i, m in enumerate(marks) if m is not None and t.severity[m] < sev), len(marks))
    marks[at:at] = [kind] * count


def mark(t: TrackShape, marks: Slots, overflow: int, kind: str, amount: int,
         box: int | None = None) -> tuple[Slots, int]:
    """Add `amount` marks of `kind`, as if one at a time (WOUND-19). Raises TrackFull, having changed nothing.

    `marks` are as `fit_marks` leaves them (every caller reads them through it). The cost depends on the
    track's length and its number of kinds, never on `amount`: the marks that fit are inserted at once,
    then each further mark raises the lightest mark one step (WOUND-20) until every mark is at the
    highest severity, and whatever is left is overflow (WOUND-21), capped at OVERFLOW_MAX (docs/decisions.md H-1)."""
    if t.indexed or t.refuse_when_full:
        free = t.length - (len(marks) - marks.count(None))
        if amount > free:
            raise TrackFull  # WOUND-53: the whole command is refused
    if t.indexed:
        return _mark_indexed(t, marks, kind, amount, box), overflow
    out: list[str | None] = [m for m in marks if m is not None]
    if amount <= 0:
        return tuple(out), overflow
    fits = max(0, min(amount, t.length - len(out)))
    if fits:
        _insert(t, out, kind, fits)
    left = amount - fits
    if left and out:
        out, left = _raise_lightest(t, out, left)
    return tuple(out), min(OVERFLOW_MAX, overflow + left)


def _raise_lightest(t: TrackShape, out: Sequence[str | None], raises: int) -> tuple[list[str | None], int]:
    """WOUND-20 repeated `raises` times on a full track: each raise moves the lightest mark one step up
    the scale. All the marks on the lowest occupied step go up before any mark above them moves, so
    the marks are counted per step and moved a step at a time. Returns the marks, most severe first,
    and the raises left over once every mark is at the highest severity (WOUND-21)."""
    scale = t.scale
    counts = [0] * len(scale)
    step = {k: i for i, k in enumerate(scale)}
    for m in out:
        if m is not None:
            counts[step[m]] += 1
    for i in range(len(scale) - 1):
        moved = min(counts[i], raises)
        counts[i] -= moved
        counts[i + 1] += moved
        raises -= moved
        if not raises:
            break
    marks: list[str | None] = [scale[i] for i in range(len(scale) - 1, -1, -1) for _ in range(counts[i])]
    return marks, raises


def _mark_indexed(t: TrackShape, marks: Slots, kind: str, amount: int, box: int | None) -> Slots:
    """WOUND-48, WOUND-49: the named box or the first; if taken, the next free box above."""
    slots: list[str | None] = [*marks, *([None] * (t.length - len(marks)))]
    start = (box or 1) - 1
    if amount > 0:
        free = [j for j in range(start, t.length) if slots[j] is None][:amount]
        if len(free) < amount:
            raise TrackFull
        for j in free:
            slots[j] = kind
    while slots and slots[-1] is None:
        slots.pop()
    return tuple(slots)


def mark_hit(t: TrackShape, marks: Slots, overflow: int, kind: str, count: int, box: int = 1) -> tuple[Slots, int]:
    """A landed hit (WOUND-33..36): `count` marks of `kind`, never refused. A track that escalates marks as
    `mark` does (WOUND-20, WOUND-21). On a track that refuses when full, each mark goes on box `box` or the
    next free box above (indexed, WOUND-35, WOUND-48), or by severity; a mark no box can take is overflow,
    which puts the character down (WOUND-36, docs/decisions.md CB-4)."""
    if not (t.indexed or t.refuse_when_full):
        return mark(t, marks, overflow, kind, count)
    count = max(0, count)
    if t.indexed:
        slots: list[str | None] = [*marks, *([None] * (t.length - len(marks)))]
        free = [j for j in range(max(0, box - 1), t.length) if slots[j] is None][:count]
        for j in free:
            slots[j] = kind
        while slots and slots[-1] is None:
            slots.pop()
        placed, out = len(free), tuple(slots)
    else:
        placed = min(count, t.length - sum(1 for m in marks if m is not None))
        out = mark(t, marks, overflow, kind, placed)[0]
    return out, min(OVERFLOW_MAX, overflow + count - placed)


def heal(t: TrackShape, marks: Slots, overflow: int, count: int, kind: str | None = None) -> tuple[Slots, int]:
    """Clear `count`: overflow first (WOUND-24), then the lightest marks (WOUND-26); with a kind of the
    track, only marks of that kind and no overflow (WOUND-25). Indexed: the highest of the lightest
    (WOUND-50). Clearing one mark never changes which of the others is lightest, so the marks to clear
    are the first `count` in that order, found in one sort: the cost does not depend on `count`."""
    if kind is not None and kind not in t.severity:
        kind = None  # WOUND-26 (interpretation): a kind the track does not have clears the lightest
    slots: list[str | None] = list(marks)
    count = max(0, count)
    if kind is None:
        cleared = min(overflow, count)
        overflow, count = overflow - cleared, count - cleared
    candidates = [i for i, m in enumerate(slots) if m is not None and (kind is None or m == kind)]
    candidates.sort(key=lambda i: (t.severity.get(slots[i] or "", 0), -i))  # candidates hold marks, not None
    gone = set(candidates[:count])
    if t.indexed:
        slots = [None if i in gone else m for i, m in enumerate(slots)]
    else:
        slots = [m for i, m in enumerate(slots) if i not in gone]
    while slots and slots[-1] is None:
        slots.pop()
    return tuple(slots), overflow


def reduce_to(t: TrackShape, marks: Slots, overflow: int, keep: int, kind: str | None = None) -> tuple[Slots, int]:
    """WOUND-40, WOUND-42: a rest step with `to` leaves at most `keep` marks, overflow included (or, with
    a kind, at most `keep` marks of that kind). Never adds marks (WOUND-43)."""
    filled = sum(1 for m in marks if m is not None and (kind is None or m == kind))
    have = filled if kind is not None else filled + overflow
    return heal(t, marks, overflow, max(0, have - keep), kind)
