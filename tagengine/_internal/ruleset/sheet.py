"""The character sheet: sections, abilities, skills, saves, training, fields, derived values, lists, rests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .base import Id, Label, Model, Round
from .hide import HideWhen
from .live import Live
from .refs import ValueRef

FieldType = Literal["number", "text", "longtext", "boolean", "enum", "dice"]
ColumnType = Literal["number", "text", "enum", "boolean", "dice"]


class UntrainedBy(Model):
    by: int


Untrained = Literal["normal", "harder", "refuse"] | UntrainedBy


class Section(Model):
    id: Id
    label: Label
    untrained: Untrained | None = None


class Ability(Model):
    id: Id
    label: Label
    section: Id | None = None
    min: int = 0
    max: int = 30
    default: int | None = None


class Skill(Model):
    """A skill or save (SHEET-8..10)."""

    id: Id
    label: Label
    ability: Id | None = None
    section: Id | None = None
    cap: ValueRef | None = None
    untrained: Untrained | None = None


class TrainingLevel(Model):
    """Training ladder (DEC-23): the first level is untrained (UNTR-1); `bonus` rides on the check."""

    id: Id
    label: Label
    bonus: int | ValueRef = 0


class FieldDef(Model):
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
    pick: ValueRef | None = None
    hideWhen: HideWhen | None = None


class Derived(Model):
    """A derived value (SHEET-19..27). Operands: `of` (sum/min/max/multiply) or `from` (the rest)."""

    id: Id
    label: Label
    op: Literal["sum", "min", "max", "scale", "multiply", "stepTable", "enumTable"]
    section: Id | None = None
    of: list[ValueRef] | None = None
    from_: ValueRef | None = Field(default=None, alias="from")
    by: float | None = None
    round: Round | None = None
    table: list[tuple[int, int]] | dict[str, int] | None = None
    default: int | None = None
    hideWhen: HideWhen | None = None


class ColumnRef(Model):
    column: Id


class Roll(Model):
    count: Annotated[int, Field(ge=1, le=100)] = 1
    sides: int | ColumnRef | ValueRef


class Column(Model):
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
    pick: ValueRef | None = None
    roll: Roll | None = None


class RowPools(Model):
    """SHEET-31: each row becomes a resource whose maximum is the row's `maxColumn` cell."""

    maxColumn: Id
    start: Literal["full", "empty"] = "full"


class ListDef(Model):
    id: Id
    label: Label
    section: Id | None = None
    columns: list[Column]
    pools: RowPools | None = None
    hideWhen: HideWhen | None = None


class FractionOfMax(Model):
    fractionOfMax: float
    round: Round | None = None
    min: int | None = None


class RestStep(Model):
    """One restoration (REST-2, D-6): exactly one target, then `to` or `by`."""

    pool: Id | None = None
    poolGroup: Id | None = None
    listPools: Id | None = None
    track: Id | None = None
    state: Id | None = None
    to: int | str | None = None
    by: FractionOfMax | ValueRef | None = None
    shared: bool | None = None
    kind: Id | None = None

    @property
    def targets(self) -> list[tuple[str, str]]:
        return [(k, getattr(self, k)) for k in ("pool", "poolGroup", "listPools", "track", "state")
                if getattr(self, k) is not None]


class Rest(Model):
    id: Id
    label: Label
    steps: list[RestStep]


class Sheet(Model):
    sections: list[Section] = []
    abilities: list[Ability] = []
    abilityModifier: Literal["score", "d20"] = "score"
    training: list[TrainingLevel] = []
    skills: list[Skill] = []
    saves: list[Skill] = []
    fields: list[FieldDef] = []
    derived: list[Derived] = []
    lists: list[ListDef] = []
    live: Live = Live()
    rests: list[Rest] = []
