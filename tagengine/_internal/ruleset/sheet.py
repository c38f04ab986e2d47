"""The character sheet: sections, abilities, skills, saves, training, fields, derived values, lists, rests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .base import BaseDef, Id, Label, Round
from .hide import HideWhenDef
from .live import LiveDef
from .refs import ValueRefDef

FieldType = Literal["number", "text", "longtext", "boolean", "enum", "dice"]
ColumnType = Literal["number", "text", "enum", "boolean", "dice"]


class UntrainedByDef(BaseDef):
    by: int


UntrainedDef = Literal["normal", "harder", "refuse"] | UntrainedByDef


class SectionDef(BaseDef):
    id: Id
    label: Label
    untrained: UntrainedDef | None = None


class AbilityDef(BaseDef):
    id: Id
    label: Label
    section: Id | None = None
    min: int = 0
    max: int = 30
    default: int | None = None


class SkillDef(BaseDef):
    """A skill or save (SHEET-8..10)."""

    id: Id
    label: Label
    ability: Id | None = None
    section: Id | None = None
    cap: ValueRefDef | None = None
    untrained: UntrainedDef | None = None


class TrainingLevelDef(BaseDef):
    """Training ladder (DEC-23): the first level is untrained (UNTR-1); `bonus` rides on the check."""

    id: Id
    label: Label
    bonus: int | ValueRefDef = 0


class FieldDef(BaseDef):
    id: Id
    label: Label
    type: FieldType
    section: Id | None = None
    min: int | None = None
    max: int | None = None
    default: Any = None
    maxLength: int | None = None
    values: list[str] | None = None
    valueLabels: dict[str, str] | None = None
    suggestions: list[str] | None = None
    pick: ValueRefDef | None = None
    hideWhen: HideWhenDef | None = None


class DerivedDef(BaseDef):
    """A derived value (SHEET-19..27). Operands: `of` (sum/min/max/multiply) or `from` (the rest)."""

    id: Id
    label: Label
    op: Literal["sum", "min", "max", "scale", "multiply", "stepTable", "enumTable"]
    section: Id | None = None
    of: list[ValueRefDef] | None = None
    from_: ValueRefDef | None = Field(default=None, alias="from")
    by: float | None = None
    round: Round | None = None
    table: list[tuple[int, int]] | dict[str, int] | None = None
    default: int | None = None
    hideWhen: HideWhenDef | None = None


class ColumnRefDef(BaseDef):
    column: Id


class RollDef(BaseDef):
    count: Annotated[int, Field(ge=1, le=100)] = 1
    sides: int | ColumnRefDef | ValueRefDef


class ColumnDef(BaseDef):
    id: Id
    label: Label
    type: ColumnType
    default: Any = None
    min: int | None = None
    max: int | None = None
    maxLength: int | None = None
    values: list[str] | None = None
    valueLabels: dict[str, str] | None = None
    suggestions: list[str] | None = None
    pick: ValueRefDef | None = None
    roll: RollDef | None = None


class RowPoolsDef(BaseDef):
    """SHEET-31: each row becomes a resource whose maximum is the row's `maxColumn` cell."""

    maxColumn: Id
    start: Literal["full", "empty"] = "full"


class ListDef(BaseDef):
    id: Id
    label: Label
    section: Id | None = None
    columns: list[ColumnDef]
    pools: RowPoolsDef | None = None
    hideWhen: HideWhenDef | None = None


class FractionOfMaxDef(BaseDef):
    fractionOfMax: float
    round: Round | None = None
    min: int | None = None


class RestStepDef(BaseDef):
    """One restoration (REST-2, D-6): exactly one target, then `to` or `by`."""

    pool: Id | None = None
    poolGroup: Id | None = None
    listPools: Id | None = None
    track: Id | None = None
    state: Id | None = None
    to: int | str | None = None
    by: FractionOfMaxDef | ValueRefDef | None = None
    shared: bool | None = None
    kind: Id | None = None

    @property
    def targets(self) -> list[tuple[str, str]]:
        return [(k, getattr(self, k)) for k in ("pool", "poolGroup", "listPools", "track", "state")
                if getattr(self, k) is not None]


class RestDef(BaseDef):
    id: Id
    label: Label
    steps: list[RestStepDef]


class SheetDef(BaseDef):
    sections: list[SectionDef] = []
    abilities: list[AbilityDef] = []
    abilityModifier: Literal["score", "d20"] = "score"
    training: list[TrainingLevelDef] = []
    skills: list[SkillDef] = []
    saves: list[SkillDef] = []
    fields: list[FieldDef] = []
    derived: list[DerivedDef] = []
    lists: list[ListDef] = []
    live: LiveDef = LiveDef.model_construct()  # the default, without building LiveDef's validator at import (PF-1)
    rests: list[RestDef] = []
