"""The top level of a ruleset file (DEC-21): manifest, sheet, resolution, gm, clocks, party, combat."""


import builtins
from typing import Literal

from ..records import frozen
from .base import BaseDef, Id, Label, listed, mapped
from .live import PoolDef
from .refs import ValueRefDef
from .sheet import FieldDef, ListDef, SheetDef


@frozen(kw_only=True, slots=True)
class CapabilityApiDef(BaseDef):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@frozen(kw_only=True, slots=True)
class ManifestDef(BaseDef):
    schemaVersion: int | None = None
    capabilityApi: CapabilityApiDef | None = None
    id: str | None = None
    name: str | None = None
    version: str | None = None


@frozen(kw_only=True, slots=True)
class TargetDef(BaseDef):
    """The target per die of a dice pool; it "can move" (UNTR-8) when min < max."""

    value: int
    min: int
    max: int


@frozen(kw_only=True, slots=True)
class DicePoolDef(BaseDef):
    min: int = 1
    target: TargetDef | None = None


@frozen(kw_only=True, slots=True)
class AdjustDef(BaseDef):
    value: ValueRefDef
    abilities: list[Id] | None = None


@frozen(kw_only=True, slots=True)
class ResolutionDef(BaseDef):
    type: Literal["dice-pool", "dice-sum"]
    die: int | None = None  # the sides of the die a check rolls: d6 for a pool, d20 for a sum when left out (CK-14)
    pool: DicePoolDef | None = None
    penaltyFrom: Id | None = None
    adjust: list[AdjustDef] = listed()


@frozen(kw_only=True, slots=True)
class SummaryListDef(BaseDef):
    list: Id
    nameColumn: Id | None = None
    columns: builtins.list[Id] | None = None


@frozen(kw_only=True, slots=True)
class SummaryDef(BaseDef):
    fields: list[Id] = listed()
    derived: list[Id] = listed()
    lists: list[SummaryListDef] = listed()


@frozen(kw_only=True, slots=True)
class GMDef(BaseDef):
    checkGuidance: str | None = None
    sheetGuidance: str | None = None
    worldGuidance: str | None = None
    opposition: Literal["game-master", "engine"] | None = None
    sheetSummary: SummaryDef | None = None


@frozen(kw_only=True, slots=True)
class ClocksDef(BaseDef):
    """CLOCK-3: strict, only `sizes`, `max` and `text`; `{}` enables the defaults (CLOCK-7)."""

    sizes: list[int] = listed(4, 6, 8)
    max: int = 8
    text: str | None = None


@frozen(kw_only=True, slots=True)
class AdvancementDef(BaseDef):
    fields: list[Id] = listed()
    text: str | None = None


@frozen(kw_only=True, slots=True)
class FromMemberDef(BaseDef):
    field: Id
    count: bool | None = None
    sum: Id | None = None


@frozen(kw_only=True, slots=True)
class BuilderStepDef(BaseDef):
    id: Id
    label: Label
    kind: str
    list: Id | None = None


@frozen(kw_only=True, slots=True)
class BuilderDef(BaseDef):
    """PARTY-28: kept as validated data; the guided builder itself is not part of this engine (U-28)."""

    steps: list[BuilderStepDef] = listed()


@frozen(kw_only=True, slots=True)
class PartyDef(BaseDef):
    label: Label = "Party"
    fields: list[FieldDef] = listed()
    pools: list[PoolDef] = listed()
    advancement: AdvancementDef | None = None
    text: str | None = None
    summary: SummaryDef | None = None
    lists: list[ListDef] = listed()
    builder: BuilderDef | None = None
    fromMembers: list[FromMemberDef] = listed()


@frozen(kw_only=True, slots=True)
class HealthDef(BaseDef):
    pool: Id | None = None
    track: Id | None = None


@frozen(kw_only=True, slots=True)
class DamageKindsDef(BaseDef):
    """WOUND-33: a landed hit marks `marks` boxes of the kind `map` gives its damage type."""

    marks: int = 1
    map: dict[str, Id] = mapped()


@frozen(kw_only=True, slots=True)
class CombatDef(BaseDef):
    """What a fight reads (WOUND-2, WOUND-32..39): the health a hit lands on, and how (docs/decisions.md T-18,
    CB-1..CB-3). `damage`: `per-point` damage names the box it hits, `per-blow` (the default) the first
    (WOUND-35), on a health track that fills by box."""

    health: HealthDef | None = None
    damage: Literal["per-blow", "per-point"] | None = None
    damageKinds: DamageKindsDef | None = None
    damageTypes: list[str] | None = None


@frozen(kw_only=True, slots=True)
class RulesetDef(BaseDef):
    manifest: ManifestDef | None = None
    sheet: SheetDef
    party: PartyDef | None = None
    clocks: ClocksDef | None = None
    gmReference: str | None = None
    gm: GMDef | None = None
    resolution: ResolutionDef | None = None
    combat: CombatDef | None = None
