"""The top level of a ruleset file (DEC-21): manifest, sheet, resolution, gm, clocks, party, combat."""

from __future__ import annotations

from typing import Literal

from .base import Id, Label, Model
from .live import Pool
from .refs import ValueRef
from .sheet import FieldDef, ListDef, Sheet


class CapabilityApi(Model):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


class Manifest(Model):
    schemaVersion: int | None = None
    capabilityApi: CapabilityApi | None = None
    id: str | None = None
    name: str | None = None
    version: str | None = None


class Target(Model):
    """The target per die of a dice pool; it "can move" (UNTR-8) when min < max."""

    value: int
    min: int
    max: int


class DicePool(Model):
    min: int = 1
    target: Target | None = None


class Adjust(Model):
    value: ValueRef
    abilities: list[Id] | None = None


class Resolution(Model):
    type: Literal["dice-pool", "dice-sum"]
    pool: DicePool | None = None
    penaltyFrom: Id | None = None
    adjust: list[Adjust] = []


class SummaryList(Model):
    list: Id
    nameColumn: Id | None = None
    columns: list[Id] | None = None


class Summary(Model):
    fields: list[Id] = []
    derived: list[Id] = []
    lists: list[SummaryList] = []


class GM(Model):
    checkGuidance: str | None = None
    sheetGuidance: str | None = None
    worldGuidance: str | None = None
    opposition: Literal["game-master", "engine"] | None = None
    sheetSummary: Summary | None = None


class Clocks(Model):
    """CLOCK-3: strict, only `sizes`, `max` and `text`; `{}` enables the defaults (CLOCK-7)."""

    sizes: list[int] = [4, 6, 8]
    max: int = 8
    text: str | None = None


class Advancement(Model):
    fields: list[Id] = []
    text: str | None = None


class FromMember(Model):
    field: Id
    count: bool | None = None
    sum: Id | None = None


class BuilderStep(Model):
    id: Id
    label: Label
    kind: str
    list: Id | None = None


class Builder(Model):
    """PARTY-28: kept as validated data; the guided builder itself is not part of this engine (U-28)."""

    steps: list[BuilderStep] = []


class Party(Model):
    label: Label = "Party"
    fields: list[FieldDef] = []
    pools: list[Pool] = []
    advancement: Advancement | None = None
    text: str | None = None
    summary: Summary | None = None
    lists: list[ListDef] = []
    builder: Builder | None = None
    fromMembers: list[FromMember] = []


class Health(Model):
    pool: Id | None = None
    track: Id | None = None


class DamageKinds(Model):
    """WOUND-33: a landed hit marks `marks` boxes of the kind `map` gives its damage type."""

    marks: int = 1
    map: dict[str, Id] = {}


class Combat(Model):
    """Validated where the spec speaks (WOUND-2, WOUND-32); not executed (DEC-19)."""

    health: Health | None = None
    damageKinds: DamageKinds | None = None
    damageTypes: list[str] | None = None


class RulesetFile(Model):
    manifest: Manifest | None = None
    sheet: Sheet
    party: Party | None = None
    clocks: Clocks | None = None
    gmReference: str | None = None
    gm: GM | None = None
    resolution: Resolution | None = None
    combat: Combat | None = None
