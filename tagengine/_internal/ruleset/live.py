"""`sheet.live`: what changes during play (SHEET-35): pools, tracks, text, conditions, states."""

from __future__ import annotations

from typing import Literal

from .base import Id, Label, Model
from .hide import HideWhen
from .refs import ValueRef


class Pool(Model):
    id: Id
    label: Label
    max: ValueRef
    start: Literal["full", "empty"] = "full"
    group: Id | None = None
    allowTemp: bool = False
    section: Id | None = None
    hideWhen: HideWhen | None = None


class Level(Model):
    label: Label
    penalty: int


class Kind(Model):
    id: Id
    label: Label
    severity: int


class BoxPenalty(Model):
    by: Literal["filled", "remaining"]
    table: list[tuple[int, int]]


class Boxes(Model):
    penalty: BoxPenalty | None = None


class Extra(Model):
    list: Id
    countColumn: Id
    penaltyColumn: Id


class Track(Model):
    """A plain track, or a wound track when it has `kinds` and `levels` or `boxes` (WOUND-1)."""

    id: Id
    label: Label
    min: int = 0
    max: int | ValueRef | None = None
    default: int | None = None
    alwaysShow: bool = False
    section: Id | None = None
    hideWhen: HideWhen | None = None
    levels: list[Level] | None = None
    boxes: Boxes | None = None
    kinds: list[Kind] | None = None
    fill: Literal["severity", "indexed"] | None = None
    onFull: Literal["escalate", "refuse"] | None = None
    extra: Extra | None = None

    @property
    def is_wound(self) -> bool:
        return self.kinds is not None or self.levels is not None or self.boxes is not None


class LiveText(Model):
    id: Id
    label: Label
    maxLength: int = 200


class Condition(Model):
    id: Id
    label: Label


class LiveState(Model):
    id: Id
    label: Label
    values: list[str]
    valueLabels: dict[str, str] | None = None
    default: str | None = None
    hideWhen: HideWhen | None = None

    @property
    def start(self) -> str:
        """STATE-7: the default, or the first value."""
        return self.default if self.default is not None else (self.values[0] if self.values else "")

    def label_of(self, value: str) -> str:
        """STATE-3: a value shows as its label, or as itself."""
        return (self.valueLabels or {}).get(value, value)


class Live(Model):
    pools: list[Pool] = []
    tracks: list[Track] = []
    text: list[LiveText] = []
    conditions: list[Condition] = []
    states: list[LiveState] = []
