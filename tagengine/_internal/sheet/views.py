"""What an evaluated sheet holds: the numbers the sheet shows, each with where it came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from types import MappingProxyType
from typing import Any

from ..records import frozen
from ..state import empty_map, freeze


@frozen(slots=True)
class CheckNumber:
    """The number a check with an ability, skill or save rolls (UNTR, CAP, PEN, ADJ), with its breakdown.

    `total` is None when the check is refused untrained (UNTR-9, UNTR-13). Under `dice-pool` it is a
    number of dice; under `dice-sum` a modifier.
    """

    kind: str  # "ability" | "skill" | "save" | "fight" (a fight's roll from none of them, ADJ-9)
    id: str
    label: str
    ability: str | None
    training: str | None  # the training level id, or None when the sheet has no ladder
    trained: bool
    base: int
    bonus: int
    untrained: int  # the untrained `by` amount (UNTR-5)
    rule: str  # the untrained rule in force: normal, by, harder, refuse
    cap: int | None
    sheet: int | None  # the number the sheet shows: base + bonus + untrained, capped (CAP-2, UNTR-6)
    penalty: int  # the wound penalty applied (PEN-3, PEN-4, PEN-6)
    adjust: int  # what `resolution.adjust` adds (ADJ-11)
    total: int | None  # what the check rolls
    target: int | None = None  # dice-pool target per die, one step harder when the rule is "harder" (UNTR-7)
    section: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@frozen(slots=True)
class PoolView:
    """A pool as a sheet shows it: current value, maximum, the temporary part, its group."""

    id: str
    label: str
    cur: int
    max: int
    temp: int = 0
    group: str | None = None
    hidden: str | None = None  # why, when hidden

    @property
    def now(self) -> str:
        return f"{self.cur}/{self.max}" + (f" +{self.temp} temp" if self.temp else "")


@frozen(slots=True)
class TrackView:
    """A plain track (TRACK-1..6)."""

    id: str
    label: str
    value: int
    min: int
    max: int
    default: int
    always_show: bool
    hidden: str | None = None


@frozen(slots=True)
class WoundLevel:
    """One level of a wound track as a sheet shows it: its label and penalty."""

    label: str
    penalty: int
    extra: bool = False


@frozen(slots=True)
class WoundView:
    """A wound track as it stands: its marks on its (possibly extended) length (WOUND-15..60)."""

    id: str
    label: str
    boxed: bool
    length: int
    levels: tuple[WoundLevel, ...]  # empty for a boxed track
    marks: tuple[str | None, ...]  # kind id per level or box, most severe first unless indexed
    overflow: int
    penalty: int
    kinds: tuple[tuple[str, str, int], ...]  # (id, label, severity)

    @property
    def filled(self) -> int:
        return sum(1 for m in self.marks if m is not None)

    @property
    def cells(self) -> tuple[str | None, ...]:
        """One entry per level or box of the track's length: its mark, or None (the text sheet and the page)."""
        return (*self.marks, *([None] * (self.length - len(self.marks))))

    @property
    def remaining(self) -> int:
        return self.length - self.filled

    @property
    def lowest(self) -> str | None:
        """The label of the lowest marked level (DEC-11)."""
        if self.boxed or not self.filled:
            return None
        return self.levels[self.filled - 1].label

    @property
    def now(self) -> str:
        return now_text(self.boxed, self.levels, self.length, self.filled, self.overflow)


def now_text(boxed: bool, levels: tuple[WoundLevel, ...], length: int, filled: int, overflow: int) -> str:
    """DEC-11: `"<marks>/<levels> <lowest label>"`, `"<filled>/<boxes>"`, plus overflow."""
    text = f"{filled}/{length}"
    if not boxed and filled:
        text += f" {levels[filled - 1].label}"
    return text + (f" +{overflow} overflow" if overflow else "")


@frozen(slots=True)
class HealthView:
    """What `combat.health` reads for one character (WOUND-32..39; docs/decisions.md CB-4, CB-6): how much of
    its pool or wound track is left, and whether the character is down and why."""

    id: str
    label: str
    track: bool  # a wound track (WOUND-32), else a pool
    left: int  # points left, or the track's levels or boxes left (WOUND-39: read as its remaining levels)
    of: int  # the pool's maximum, or the track's length
    boxed: bool = False
    at: str | None = None  # the lowest marked level
    overflow: int = 0
    temp: int = 0
    down: str | None = None  # why the character is down (WOUND-34, WOUND-36), None while they are not

    @property
    def now(self) -> str:
        """`5 of 7 left, at Winded`; `down: 0 of 4 boxes left +1 overflow` (CB-6)."""
        text = f"{self.left} of {self.of}{' boxes' if self.boxed else ''} left"
        if self.at is not None:
            text += f", at {self.at}"
        if self.overflow:
            text += f" +{self.overflow} overflow"
        if self.temp:
            text += f" +{self.temp} temp"
        return f"down: {text}" if self.down is not None else text


@frozen(slots=True)
class StateView:
    """A live state as a sheet shows it: its value, the label of that value and the values it can take."""

    id: str
    label: str
    value: str
    value_label: str
    values: tuple[tuple[str, str], ...]
    hidden: str | None = None


@frozen
class SheetView:
    """One character's evaluated sheet (or the party's): pure data, safe to cache and share."""

    name: str
    fields: Mapping[str, Any]
    hidden: Mapping[str, str]  # "fields.x" / "derived.y" / "lists.z" / ... -> why
    derived: Mapping[str, int]
    lists: Mapping[str, Sequence[Mapping[str, Any]]]
    abilities: tuple[CheckNumber, ...] = ()
    skills: tuple[CheckNumber, ...] = ()
    saves: tuple[CheckNumber, ...] = ()
    pools: tuple[PoolView, ...] = ()
    tracks: tuple[TrackView, ...] = ()
    wounds: tuple[WoundView, ...] = ()
    states: tuple[StateView, ...] = ()
    conditions: tuple[tuple[str, str, bool], ...] = ()  # (id, label, on)
    text: tuple[tuple[str, str, str], ...] = ()  # (id, label, value)
    row_pools: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=empty_map)  # (cur, max) per row
    health: HealthView | None = None  # `combat.health`, for a character of a ruleset that declares one

    def __post_init__(self) -> None:
        """Read-only all the way down: views are cached per snapshot and shared between callers. A `lists` that
        is a read-only mapping already is taken as frozen all the way down: `view_of` passes a card part's, which
        `freeze` made and many views share."""
        for name in ("fields", "hidden", "derived", "row_pools"):  # their values are numbers, text or tuples
            value = getattr(self, name)
            if type(value) is not MappingProxyType:
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        if type(self.lists) is not MappingProxyType:  # a read-only mapping is a card part's, `freeze` made it
            object.__setattr__(self, "lists", freeze(self.lists))
