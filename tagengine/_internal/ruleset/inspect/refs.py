"""Value references: targets exist and fit (REF-1..19), live reads only where live state exists
(REF-13..15, ENUM-7, WOUND-44), derived values top-down (CAP-5, CAP-6)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..index import SheetIndex
from ..refs import ValueRefDef
from ..sheet import DerivedDef
from .inspection import Inspection

NUMERIC_COLUMNS = ("number",)


def resolve(ctx: Inspection, ref: ValueRefDef, path: str, idx: SheetIndex, *, enum_source: bool = False) -> None:
    """Report a reference whose target does not exist or cannot give a number.

    An enumTable's `from` is inspected with the derived values (ENUM-2), not here.
    """
    key, target = ref.key, ref.target
    if enum_source and key in ("field", "liveState"):
        return
    where = f"{path}.{key}"
    if idx.party and key not in ("const", "field"):
        ctx.add(where, "party-ref", "a party value reads only a constant or a party number field "
                "(PARTY-8, PARTY-9)", target)
        return

    def missing(what: str, rule: str) -> None:
        ctx.add(where, "unknown-ref", f"names {what} {target!r}, which the sheet does not declare ({rule})", target)

    if key == "field":
        f = idx.fields.get(target)
        if f is None:
            missing("field", "REF-1")
        elif f.type != "number":
            ctx.add(where, "not-numeric", f"field {target!r} is a {f.type} field; a value reference reads "
                    "a number field (REF-1)", target)
    elif key == "derived":
        if target not in idx.derived:
            missing("derived value", "REF-1")
    elif key in ("abilityScore", "abilityMod"):
        if target not in idx.abilities:
            missing("ability", "REF-1")
    elif key == "abilityModFromField":
        f = idx.fields.get(target)
        if f is None:
            missing("field", "REF-1")
        elif f.type != "enum" or not f.values or any(v not in idx.abilities for v in f.values):
            ctx.add(where, "not-ability-field", f"field {target!r} must be an enum field whose values are "
                    "ability ids (REF-1)", target)
    elif key == "skillMod":
        if target not in idx.skills:
            missing("skill", "REF-1")
    elif key == "saveMod":
        if target not in idx.saves:
            missing("save", "REF-1")
    elif key == "listSum":
        ls = target
        lst = idx.lists.get(ls.list)
        if lst is None:
            ctx.add(f"{where}.list", "unknown-ref", f"names list {ls.list!r}, which the sheet does not "
                    "declare (REF-2)", ls.list)
            return
        cols = {c.id: c for c in lst.columns}
        col = cols.get(ls.column)
        if col is None:
            ctx.add(f"{where}.column", "unknown-ref", f"list {ls.list!r} has no column {ls.column!r} (REF-2)",
                    ls.column)
        elif col.type not in NUMERIC_COLUMNS:
            ctx.add(f"{where}.column", "not-numeric", f"column {ls.column!r} is {col.type}; listSum sums a "
                    "numeric column (REF-2)", ls.column)
        if ls.onlyWhen is not None:
            ow = cols.get(ls.onlyWhen)
            if ow is None or ow.type != "boolean":
                ctx.add(f"{where}.onlyWhen", "not-boolean", f"onlyWhen must name a boolean column of list "
                        f"{ls.list!r} (REF-3)", ls.onlyWhen)
    elif key == "livePool":
        if target not in idx.pools:
            missing("live pool", "REF-7, REF-8")
    elif key == "liveTrack":
        t = idx.tracks.get(target)
        if t is None:
            missing("live track", "REF-9")
        elif ref.read == "penalty" and not t.is_wound:
            ctx.add(f"{path}.read", "penalty-needs-wound-track", f"track {target!r} is a plain track; "
                    "read \"penalty\" is allowed only on a wound track (REF-9)", "penalty")
    elif key == "liveState":
        ctx.add(where, "bad-ref-key", "liveState is read only by an enumTable's `from` (REF-1, ENUM-2)", target)
    elif key == "itemStat":
        ctx.add(where, "unsupported-feature", "itemStat reads items, which this engine does not model; "
                "use a field or a listSum instead (REF-17..19, docs/decisions.md)", target)


def sheet_refs(ctx: Inspection) -> Iterator[tuple[ValueRefDef, str, bool]]:
    """Every value reference on the character sheet, with its path and whether it is an enumTable source."""
    s = ctx.rs.sheet
    for i, lvl in enumerate(s.training):
        if isinstance(lvl.bonus, ValueRefDef):
            yield lvl.bonus, f"sheet.training[{i}].bonus", False
    for name in ("skills", "saves"):
        for i, sk in enumerate(getattr(s, name)):
            if sk.cap is not None:
                yield sk.cap, f"sheet.{name}[{i}].cap", False
    for i, f in enumerate(s.fields):
        if f.pick is not None:
            yield f.pick, f"sheet.fields[{i}].pick", False
    for i, d in enumerate(s.derived):
        for j, r in enumerate(d.of or []):
            yield r, f"sheet.derived[{i}].of[{j}]", False
        if d.from_ is not None:
            yield d.from_, f"sheet.derived[{i}].from", d.op == "enumTable"
    for i, lst in enumerate(s.lists):
        for j, c in enumerate(lst.columns):
            if c.pick is not None:
                yield c.pick, f"sheet.lists[{i}].columns[{j}].pick", False
            if c.roll is not None and isinstance(c.roll.sides, ValueRefDef):
                yield c.roll.sides, f"sheet.lists[{i}].columns[{j}].roll.sides", False
    for i, p in enumerate(s.live.pools):
        yield p.max, f"sheet.live.pools[{i}].max", False
    for i, t in enumerate(s.live.tracks):
        if isinstance(t.max, ValueRefDef):
            yield t.max, f"sheet.live.tracks[{i}].max", False
    for i, rest in enumerate(s.rests):
        for j, step in enumerate(rest.steps):
            if isinstance(step.by, ValueRefDef):
                yield step.by, f"sheet.rests[{i}].steps[{j}].by", False
    if ctx.rs.resolution is not None:
        for i, adj in enumerate(ctx.rs.resolution.adjust):
            yield adj.value, f"resolution.adjust[{i}].value", False


def derived_refs(d: DerivedDef) -> list[ValueRefDef]:
    return [*(d.of or []), *([d.from_] if d.from_ else [])]


class LiveReads:
    """Which values reach live state, and through what (REF-14).

    Derived values read only values declared above them (the order inspection reports the rest), so one
    pass in declaration order settles every derived value without deep recursion, however long the
    chain (SHEET-20 allows 800); a forward read, refused by the order inspection, still names its live read.
    """

    def __init__(self, ctx: Inspection) -> None:
        self.ctx = ctx
        self.idx = ctx.sheet
        self._derived: dict[str, list[str] | None] = {}
        self._skill: dict[tuple[str, str], list[str] | None] = {}
        for _ in range(4):  # a second pass resolves a forward read (refused by the order inspection anyway)
            before = dict(self._derived)
            for d in ctx.rs.sheet.derived:
                self._skill.clear()
                self._derived[d.id] = next((c for r in derived_refs(d) if (c := self.of(r))), None)
            if self._derived == before:
                break
        self._skill.clear()

    def of(self, ref: ValueRefDef) -> list[str] | None:
        """The chain from `ref` to a live read, or None when it reads none."""
        key, target = ref.key, ref.target
        if key in ("livePool", "liveTrack", "liveState", "itemStat"):
            return [ref.describe()]
        if key == "derived":
            chain = self._derived.get(target)
            return None if chain is None else [f"derived {target!r}", *chain]
        if key in ("skillMod", "saveMod"):
            chain = self.skill("skills" if key == "skillMod" else "saves", target)
            return None if chain is None else [f"{key} {target!r}", *chain]
        return None

    def skill(self, kind: str, sid: str) -> list[str] | None:
        key = (kind, sid)
        if key in self._skill:
            return self._skill[key]
        self._skill[key] = None
        sk = getattr(self.idx, kind).get(sid)
        chain = None
        if sk is not None and sk.cap is not None:
            inner = self.of(sk.cap)
            chain = None if inner is None else ["its cap", *inner]
        if chain is None:
            for lvl in self.ctx.rs.sheet.training:
                if isinstance(lvl.bonus, ValueRefDef):
                    inner = self.of(lvl.bonus)
                    if inner:
                        chain = [f"training {lvl.id!r}", *inner]
                        break
        self._skill[key] = chain
        return chain


def derived_deps(ctx: Inspection, ref: ValueRefDef) -> set[str]:
    """Derived ids that must be computed before `ref` can be read."""
    key, target = ref.key, ref.target
    if key == "derived":
        return {target}
    if key not in ("skillMod", "saveMod"):
        return set()
    sk = (ctx.sheet.skills if key == "skillMod" else ctx.sheet.saves).get(target)
    refs = [lvl.bonus for lvl in ctx.rs.sheet.training if isinstance(lvl.bonus, ValueRefDef)]
    if sk is not None and sk.cap is not None:
        refs.append(sk.cap)
    return {r.target for r in refs if r.key == "derived"}


def modifier_reads(ctx: Inspection) -> dict[str, str]:
    """For each derived value, the skill or save modifier it reads, directly or through values above it
    (CAP-4, CAP-5); one pass in declaration order."""
    out: dict[str, str] = {}
    for d in ctx.rs.sheet.derived:
        for r in derived_refs(d):
            if r.key in ("skillMod", "saveMod"):
                out.setdefault(d.id, r.describe())
            elif r.key == "derived" and r.target in out:
                out.setdefault(d.id, f"derived {r.target!r} -> {out[r.target]}")
    return out


BEFORE_LIVE = (
    ("sheet.live.pools", "max", "a pool's max"),
    ("sheet.live.tracks", "max", "a track's max"),
    ("sheet.training", "bonus", "a training bonus (the proficiency bonus)"),
)


def inspect_refs(ctx: Inspection) -> None:
    idx = ctx.sheet
    for ref, path, enum_source in sheet_refs(ctx):
        resolve(ctx, ref, path, idx, enum_source=enum_source)

    # REF-13..15: nothing computed before live state exists may read it, directly or indirectly.
    live = LiveReads(ctx)
    s = ctx.rs.sheet
    for base, attr, what in BEFORE_LIVE:
        by_base: dict[str, Sequence[Any]] = {"sheet.live.pools": s.live.pools, "sheet.live.tracks": s.live.tracks,
                                             "sheet.training": s.training}
        items = by_base[base]
        for i, item in enumerate(items):
            ref = getattr(item, attr)
            if not isinstance(ref, ValueRefDef):
                continue
            chain = live.of(ref)
            if chain:
                ctx.add(f"{base}[{i}].{attr}", "live-read", f"{what} is computed before live state exists but "
                        f"reads it: {' -> '.join(chain)} (REF-13, REF-14, REF-15)", chain[-1])

    # CAP-5, CAP-6 and declaration order: the sheet is computed once, top to bottom.
    for i, d in enumerate(s.derived):
        for r in derived_refs(d):
            for dep in sorted(derived_deps(ctx, r)):
                j = idx.derived.pos.get(dep)
                if j is not None and j >= i:
                    via = "" if r.key == "derived" else f" (through {r.describe()})"
                    ctx.add(f"sheet.derived[{i}]", "derived-order", f"derived {d.id!r} reads derived {dep!r}"
                            f"{via}, which is declared at or below it; values are computed once, top to "
                            "bottom (CAP-5, CAP-6)", dep)
    modifiers = modifier_reads(ctx)
    for name in ("skills", "saves"):
        for i, sk in enumerate(getattr(s, name)):
            if sk.cap is None:
                continue
            path = f"sheet.{name}[{i}].cap"
            if sk.cap.key in ("skillMod", "saveMod"):
                ctx.add(path, "cap-reads-modifier", "a cap cannot read a skill or save modifier (CAP-4)",
                        sk.cap.target)
                continue
            if sk.cap.key != "derived":
                continue
            hit = modifiers.get(sk.cap.target)
            if hit:
                ctx.add(path, "cap-reads-modifier", f"the derived value this cap reads reads a modifier: "
                        f"derived {sk.cap.target!r} -> {hit} "
                        "(CAP-5)", sk.cap.target)
            k = idx.derived.pos.get(sk.cap.target)
            if k is None:
                continue
            for j, above in enumerate(s.derived[:k]):
                for r in derived_refs(above):
                    if r.key in ("skillMod", "saveMod"):
                        ctx.add(f"sheet.derived[{j}]", "cap-order", f"derived {above.id!r} reads {r.describe()} "
                                f"but is declared above {sk.cap.target!r}, which caps {name[:-1]} {sk.id!r} (CAP-6)",
                                above.id)
