"""The party sheet (PARTY-1..15, 27..32)."""

from __future__ import annotations

from collections.abc import Sequence

from ..index import SheetIndex
from ..live import PoolDef
from ..sheet import FieldDef
from . import fields, gm, ids, refs
from .inspection import Inspection, count_problem


def inspect_party(ctx: Inspection) -> None:
    party, idx = ctx.rs.party, ctx.party
    if party is None or idx is None:
        return
    if not party.fields and not party.pools:
        ctx.add("party", "empty-party", "a party sheet needs at least one field or one pool (PARTY-4)", None)
    seen: dict[str, str] = {}
    groups: tuple[tuple[str, Sequence[FieldDef | PoolDef]], ...] = (("fields", party.fields), ("pools", party.pools))
    for kind, items in groups:
        for i, item in enumerate(items):
            if item.id in seen:
                ctx.add(f"party.{kind}[{i}].id", "duplicate-id", f"id {item.id!r} is already used at {seen[item.id]} "
                        "(PARTY-5)", item.id)
            else:
                seen[item.id] = f"party.{kind}[{i}]"
    ids.unique(ctx, "party.lists", party.lists, "list", "PARTY-27")
    count_problem(ctx, "party.lists", party.lists, 0, 12, "lists", "PARTY-27")
    fields.inspect_sheet_fields(ctx, idx, party.fields, party.lists, "party")
    for i, p in enumerate(party.pools):
        refs.resolve(ctx, p.max, f"party.pools[{i}].max", idx)
        fields.hide_when(ctx, p.hideWhen, f"party.pools[{i}].hideWhen", idx)
    if party.advancement is not None:
        for i, fid in enumerate(party.advancement.fields):
            f = idx.fields.get(fid)
            if f is None:
                ctx.add(f"party.advancement.fields[{i}]", "unknown-ref",
                        f"names party field {fid!r}, which party.fields does not declare (PARTY-11)", fid)
            elif f.type not in ("number", "text", "longtext"):
                ctx.add(f"party.advancement.fields[{i}]", "not-advanceable", f"{fid!r} is a {f.type} field; only "
                        "number, text and longtext fields advance (PARTY-11)", fid)
        ctx.safe_text("party.advancement.text", party.advancement.text, 400, "PARTY-12")
    ctx.safe_text("party.text", party.text, 400, "PARTY-12")
    gm.summary_def(ctx, party.summary, "party.summary", idx)
    from_members(ctx, idx)
    if party.builder is not None:
        for i, step in enumerate(party.builder.steps):
            if step.list is not None and step.list not in idx.lists:
                ctx.add(f"party.builder.steps[{i}].list", "unknown-ref", f"names party list {step.list!r}, which "
                        "party.lists does not declare (PARTY-33)", step.list)


def from_members(ctx: Inspection, idx: SheetIndex) -> None:
    party = ctx.rs.party
    assert party is not None
    count_problem(ctx, "party.fromMembers", party.fromMembers, 0, 8, "entries", "PARTY-29")
    for i, fm in enumerate(party.fromMembers):
        path = f"party.fromMembers[{i}]"
        f = idx.fields.get(fm.field)
        if f is None or f.type != "number":
            ctx.add(f"{path}.field", "not-numeric", f"{fm.field!r} must be a party number field (PARTY-29)", fm.field)
        if (fm.count is True) == (fm.sum is not None) or fm.count is False:
            ctx.add(path, "one-source", 'a member field is either {"field", "count": true} or {"field", "sum"} '
                    "(PARTY-30)", None)
        if fm.sum is not None:
            cf = ctx.sheet.fields.get(fm.sum)
            if cf is None or cf.type != "number":
                ctx.add(f"{path}.sum", "not-numeric", f"{fm.sum!r} must be a character number field (PARTY-30)",
                        fm.sum)
