"""`sheet.live`: what changes during play (SHEET-35): pools, tracks, text, conditions, states."""


from typing import Literal

from ..records import frozen
from .base import BaseDef, Id, Label, Pair, listed
from .hide import HideWhenDef
from .refs import ValueRefDef


@frozen(kw_only=True, slots=True)
class PoolDef(BaseDef):
    id: Id
    label: Label
    max: ValueRefDef
    start: Literal["full", "empty"] = "full"
    group: Id | None = None
    allowTemp: bool = False
    section: Id | None = None
    hideWhen: HideWhenDef | None = None


@frozen(kw_only=True, slots=True)
class LevelDef(BaseDef):
    label: Label
    penalty: int


@frozen(kw_only=True, slots=True)
class KindDef(BaseDef):
    id: Id
    label: Label
    severity: int


@frozen(kw_only=True, slots=True)
class BoxPenaltyDef(BaseDef):
    by: Literal["filled", "remaining"]
    table: list[Pair]


@frozen(kw_only=True, slots=True)
class BoxesDef(BaseDef):
    penalty: BoxPenaltyDef | None = None


@frozen(kw_only=True, slots=True)
class ExtraDef(BaseDef):
    list: Id
    countColumn: Id
    penaltyColumn: Id


@frozen(kw_only=True, slots=True)
class TrackDef(BaseDef):
    """A plain track, or a wound track when it has `kinds` and `levels` or `boxes` (WOUND-1)."""

    id: Id
    label: Label
    min: int = 0
    max: int | ValueRefDef | None = None
    default: int | None = None
    alwaysShow: bool = False
    section: Id | None = None
    hideWhen: HideWhenDef | None = None
    levels: list[LevelDef] | None = None
    boxes: BoxesDef | None = None
    kinds: list[KindDef] | None = None
    fill: Literal["severity", "indexed"] | None = None
    onFull: Literal["escalate", "refuse"] | None = None
    extra: ExtraDef | None = None

    @property
    def is_wound(self) -> bool:
        return self.kinds is not None or self.levels is not None or self.boxes is not None


@frozen(kw_only=True, slots=True)
class LiveTextDef(BaseDef):
    id: Id
    label: Label
    maxLength: int = 200


@frozen(kw_only=True, slots=True)
class ConditionDef(BaseDef):
    id: Id
    label: Label


@frozen(kw_only=True, slots=True)
class LiveStateDef(BaseDef):
    id: Id
    label: Label
    values: list[str]
    valueLabels: dict[str, str] | None = None
    default: str | None = None
    hideWhen: HideWhenDef | None = None

    @property
    def start(self) -> str:
        """STATE-7: the default, or the first value."""
        return self.default if self.default is not None else (self.values[0] if self.values else "")

    def label_of(self, value: str) -> str:
        """STATE-3: a value shows as its label, or as itself."""
        return (self.valueLabels or {}).get(value, value)


@frozen(kw_only=True, slots=True)
class LiveDef(BaseDef):
    pools: list[PoolDef] = listed()
    tracks: list[TrackDef] = listed()
    text: list[LiveTextDef] = listed()
    conditions: list[ConditionDef] = listed()
    states: list[LiveStateDef] = listed()
