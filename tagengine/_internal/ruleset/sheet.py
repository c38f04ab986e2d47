"""The character sheet: sections, abilities, skills, saves, training, fields, derived values, lists, rests."""


from dataclasses import field
from typing import Annotated, Any, Literal

from ..records import frozen
from .base import BaseDef, Bounds, Id, Label, Pair, Round, aliased, listed
from .hide import HideWhenDef
from .live import LiveDef
from .refs import ValueRefDef

FieldType = Literal["number", "text", "longtext", "boolean", "enum", "dice"]
ColumnType = Literal["number", "text", "enum", "boolean", "dice"]


@frozen(kw_only=True, slots=True)
class UntrainedByDef(BaseDef):
    by: int


UntrainedDef = Literal["normal", "harder", "refuse"] | UntrainedByDef


@frozen(kw_only=True, slots=True)
class SectionDef(BaseDef):
    id: Id
    label: Label
    untrained: UntrainedDef | None = None


@frozen(kw_only=True, slots=True)
class AbilityDef(BaseDef):
    id: Id
    label: Label
    section: Id | None = None
    min: int = 0
    max: int = 30
    default: int | None = None


@frozen(kw_only=True, slots=True)
class SkillDef(BaseDef):
    """A skill or save (SHEET-8..10)."""

    id: Id
    label: Label
    ability: Id | None = None
    section: Id | None = None
    cap: ValueRefDef | None = None
    untrained: UntrainedDef | None = None


@frozen(kw_only=True, slots=True)
class TrainingLevelDef(BaseDef):
    """Training ladder (DEC-23): the first level is untrained (UNTR-1); `bonus` rides on the check."""

    id: Id
    label: Label
    bonus: int | ValueRefDef = 0


@frozen(kw_only=True, slots=True)
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


@frozen(kw_only=True, slots=True)
class DerivedDef(BaseDef):
    """A derived value (SHEET-19..27). Operands: `of` (sum/min/max/multiply) or `from` (the rest)."""

    id: Id
    label: Label
    op: Literal["sum", "min", "max", "scale", "multiply", "stepTable", "enumTable"]
    section: Id | None = None
    of: list[ValueRefDef] | None = None
    from_: ValueRefDef | None = aliased("from")
    by: float | None = None
    round: Round | None = None
    table: list[Pair] | dict[str, int] | None = None
    default: int | None = None
    hideWhen: HideWhenDef | None = None


@frozen(kw_only=True, slots=True)
class ColumnRefDef(BaseDef):
    column: Id


@frozen(kw_only=True, slots=True)
class RollDef(BaseDef):
    count: Annotated[int, Bounds(ge=1, le=100)] = 1
    sides: int | ColumnRefDef | ValueRefDef


@frozen(kw_only=True, slots=True)
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


@frozen(kw_only=True, slots=True)
class RowPoolsDef(BaseDef):
    """SHEET-31: each row becomes a resource whose maximum is the row's `maxColumn` cell."""

    maxColumn: Id
    start: Literal["full", "empty"] = "full"


@frozen(kw_only=True, slots=True)
class ListDef(BaseDef):
    id: Id
    label: Label
    section: Id | None = None
    columns: list[ColumnDef]
    pools: RowPoolsDef | None = None
    hideWhen: HideWhenDef | None = None


@frozen(kw_only=True, slots=True)
class FractionOfMaxDef(BaseDef):
    fractionOfMax: float
    round: Round | None = None
    min: int | None = None


@frozen(kw_only=True, slots=True)
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


@frozen(kw_only=True, slots=True)
class RestDef(BaseDef):
    id: Id
    label: Label
    steps: list[RestStepDef]


@frozen(kw_only=True, slots=True)
class SheetDef(BaseDef):
    sections: list[SectionDef] = listed()
    abilities: list[AbilityDef] = listed()
    abilityModifier: Literal["score", "d20"] = "score"
    training: list[TrainingLevelDef] = listed()
    skills: list[SkillDef] = listed()
    saves: list[SkillDef] = listed()
    fields: list[FieldDef] = listed()
    derived: list[DerivedDef] = listed()
    lists: list[ListDef] = listed()
    live: LiveDef = field(default_factory=LiveDef, metadata={"json_schema_extra": {"default": {
        "pools": [], "tracks": [], "text": [], "conditions": [], "states": []}}})  # shown as a model's default was
    rests: list[RestDef] = listed()
