"""Capability API versions (spec 18.1, DEC-22): what each feature needs, and the lowest version a file needs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..records import frozen
from .hide import HideWhenDef
from .inspect.inspection import Inspection
from .inspect.refs import sheet_refs
from .refs import ValueRefDef
from .sheet import ColumnDef, FieldDef, FractionOfMaxDef

Version = tuple[int, int]

# SHEET-20: the derived-value ladder, as (more than N values, needs version).
DERIVED_LADDER: tuple[tuple[int, Version], ...] = ((400, (1, 729)), (240, (1, 111)), (120, (1, 88)), (60, (1, 84)))


@frozen(slots=True)
class Use:
    """A feature used at `path` that needs Capability API `version` (by `rule`)."""

    version: Version
    feature: str
    path: str
    rule: str


def fmt(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def uses(ctx: Inspection) -> Iterator[Use]:
    rs, s = ctx.rs, ctx.rs.sheet
    for ref, path, _ in sheet_refs(ctx):
        if ref.key in ("listSum", "livePool", "liveTrack"):
            yield Use((1, 39), ref.key, path, "REF-16")
        elif ref.key == "itemStat":
            yield Use((1, 52), "itemStat", path, "REF-19")
    for i, t in enumerate(s.live.tracks):
        p = f"sheet.live.tracks[{i}]"
        if not t.is_wound and isinstance(t.max, ValueRefDef):
            yield Use((1, 37), "a value-reference max on a plain track", f"{p}.max", "TRACK-7")
        if t.alwaysShow:
            yield Use((1, 37), "alwaysShow", f"{p}.alwaysShow", "TRACK-7")
        for key in ("boxes", "fill", "onFull", "extra"):
            if getattr(t, key) is not None:
                yield Use((1, 40), key, f"{p}.{key}", "WOUND-61")
    summaries = [("gm.sheetSummary", rs.gm.sheetSummary if rs.gm else None),
                 ("party.summary", rs.party.summary if rs.party else None)]
    for base, sm in summaries:
        for i, sl in enumerate(sm.lists if sm else []):
            if sl.nameColumn is not None or sl.columns is not None:
                yield Use((1, 37), "sheetSummary nameColumn/columns", f"{base}.lists[{i}]", "GM-18")
    if rs.resolution is not None and rs.resolution.adjust:
        yield Use((1, 38), "resolution.adjust", "resolution.adjust", "ADJ-12")
    for name in ("skills", "saves"):
        for i, sk in enumerate(getattr(s, name)):
            if sk.cap is not None:
                yield Use((1, 39), "cap", f"sheet.{name}[{i}].cap", "CAP-7")
    for base, hw in hide_rules(ctx):
        if hw.form in ("notEquals", "in"):
            yield Use((1, 39), f"hideWhen {hw.form}", base, "HIDE-8")
    for name in ("abilities", "skills", "saves"):
        for i, item in enumerate(getattr(s, name)):
            if item.section is not None:
                yield Use((1, 41), f"section on {name}", f"sheet.{name}[{i}].section", "SHEET-6")
    for name in ("sections", "skills", "saves"):
        for i, item in enumerate(getattr(s, name)):
            if item.untrained is not None:
                yield Use((1, 41), "untrained", f"sheet.{name}[{i}].untrained", "UNTR-17")
    if s.live.states:
        yield Use((1, 42), "live states", "sheet.live.states", "STATE-17")
    for i, d in enumerate(s.derived):
        if d.op == "enumTable":
            yield Use((1, 42), "enumTable", f"sheet.derived[{i}]", "STATE-17")
        elif d.op == "multiply":
            yield Use((1, 82), "multiply", f"sheet.derived[{i}]", "SHEET-25")
    for i, rest in enumerate(s.rests):
        for j, st in enumerate(rest.steps):
            p = f"sheet.rests[{i}].steps[{j}]"
            if st.kind is not None:
                yield Use((1, 40), "rest step kind", f"{p}.kind", "WOUND-61")
            if st.state is not None:
                yield Use((1, 42), "rest step naming a state", f"{p}.state", "STATE-17")
            if st.shared and isinstance(st.by, FractionOfMaxDef):
                yield Use((1, 77), "shared poolGroup step", f"{p}.shared", "REST-7")
    for more_than, version in DERIVED_LADDER:
        if len(s.derived) > more_than:
            yield Use(version, f"more than {more_than} derived values ({len(s.derived)})", "sheet.derived",
                      "SHEET-20..22")
            break
    all_lists = [(f"sheet.lists[{i}]", x) for i, x in enumerate(s.lists)]
    all_lists += [(f"party.lists[{i}]", x) for i, x in enumerate(rs.party.lists if rs.party else [])]
    all_fields: list[tuple[str, FieldDef | ColumnDef]] = [(f"sheet.fields[{i}]", x) for i, x in enumerate(s.fields)]
    all_fields += [(f"party.fields[{i}]", x) for i, x in enumerate(rs.party.fields if rs.party else [])]
    for base, lst in all_lists:
        if len(lst.columns) > 12:
            yield Use((1, 165), "a list with more than 12 columns", f"{base}.columns", "SHEET-30")
        for j, c in enumerate(lst.columns):
            all_fields.append((f"{base}.columns[{j}]", c))
            if c.roll is not None:
                yield Use((1, 85), "column roll", f"{base}.columns[{j}].roll", "SHEET-34")
    for base, f in all_fields:
        if f.suggestions is not None:
            yield Use((1, 796), "suggestions", f"{base}.suggestions", "SHEET-13")
        if f.pick is not None:
            yield Use((1, 797), "pick", f"{base}.pick", "SHEET-16")
    if rs.clocks is not None:
        yield Use((1, 143), "clocks", "clocks", "CLOCK-1")
    if rs.party is not None:
        yield Use((1, 144), "party", "party", "PARTY-1")
        for key in ("lists", "builder", "fromMembers"):
            if key in rs.party.written:
                yield Use((1, 163), f"party {key}", f"party.{key}", "PARTY-27..29")
    if rs.gmReference is not None:
        yield Use((1, 145), "gmReference", "gmReference", "GMREF-10")
    if rs.gm is not None and rs.gm.opposition is not None:
        yield Use((1, 774), "opposition", "gm.opposition", "GM-12")


def hide_rules(ctx: Inspection) -> Iterator[tuple[str, HideWhenDef]]:
    rs, s = ctx.rs, ctx.rs.sheet
    groups: list[tuple[str, Sequence[Any]]] = [
        ("sheet.fields", s.fields), ("sheet.derived", s.derived), ("sheet.lists", s.lists),
        ("sheet.live.pools", s.live.pools), ("sheet.live.tracks", s.live.tracks), ("sheet.live.states", s.live.states)]
    if rs.party is not None:
        groups += [("party.fields", rs.party.fields), ("party.pools", rs.party.pools), ("party.lists", rs.party.lists)]
    for base, items in groups:
        for i, item in enumerate(items):
            if item.hideWhen is not None:
                yield f"{base}[{i}].hideWhen", item.hideWhen


def required(ctx: Inspection) -> Version | None:
    """The lowest Capability API the file needs, or None when it needs none."""
    return max((u.version for u in uses(ctx)), default=None)


def inspect_capability(ctx: Inspection) -> None:
    """DEC-22: a package's declaration must cover every feature it uses."""
    m = ctx.rs.manifest
    if m is None:
        return
    if ctx.rs.gmReference is not None and (m.schemaVersion or 0) < 2:
        ctx.add("manifest.schemaVersion", "schema-too-low", "a package that uses gmReference declares "
                "schemaVersion 2 (GMREF-10)", m.schemaVersion)
    if m.capabilityApi is None:
        first = max(uses(ctx), key=lambda u: u.version, default=None)
        if first is not None:
            ctx.add("manifest.capabilityApi", "missing-capability", f"this package uses {first.feature} at "
                    f"{first.path}, which needs Capability API {fmt(first.version)} ({first.rule}); declare "
                    "capabilityApi (DEC-22)", None)
        return
    declared = (m.capabilityApi.major, m.capabilityApi.minor)
    for use in uses(ctx):
        if use.version > declared:
            ctx.add(use.path, "capability-too-low", f"{use.feature} needs Capability API {fmt(use.version)} "
                    f"({use.rule}); the manifest declares {fmt(declared)}", fmt(declared))
