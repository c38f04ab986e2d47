"""Ids and labels: unique within their collection, prompt-safe and quotable (DEC-25, PARTY-5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..base import BaseDef
from .inspection import Inspection


def unique(ctx: Inspection, path: str, items: Iterable[Any], what: str, rule: str = "DEC-8") -> None:
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.id in seen:
            ctx.add(f"{path}[{i}].id", "duplicate-id",
                    f"{what} id {item.id!r} is already used at {path}[{seen[item.id]}] ({rule})", item.id)
        else:
            seen[item.id] = i


def walk_labels(ctx: Inspection, node: Any, path: str) -> None:
    """Every `id` and `label` in the file must be a prompt-safe, quotable line (DEC-25, STATE-4/5)."""
    if isinstance(node, BaseDef):
        for name in [f.name for f in dataclasses.fields(node) if f.name in node.written]:  # in the file's order
            value = getattr(node, name)
            key = node.key_of(name)
            sub = f"{path}.{key}" if path != "$" else key
            if name in ("id", "label") and isinstance(value, str):
                ctx.safe_text(sub, value, 100, "DEC-25", label=True)
            else:
                walk_labels(ctx, value, sub)
    elif isinstance(node, list | tuple):
        for i, item in enumerate(node):
            walk_labels(ctx, item, f"{path}[{i}]")


def inspect_ids(ctx: Inspection) -> None:
    sheet = ctx.rs.sheet
    for name in ("sections", "abilities", "training", "skills", "saves", "fields", "derived", "lists", "rests"):
        unique(ctx, f"sheet.{name}", getattr(sheet, name), name)
    for name in ("pools", "tracks", "text", "conditions", "states"):
        unique(ctx, f"sheet.live.{name}", getattr(sheet.live, name), name)
    for i, lst in enumerate(sheet.lists):
        unique(ctx, f"sheet.lists[{i}].columns", lst.columns, "column")
    for i, t in enumerate(sheet.live.tracks):
        unique(ctx, f"sheet.live.tracks[{i}].kinds", t.kinds or [], "kind")
    walk_labels(ctx, ctx.rs, "$")

    sections = {s.id for s in sheet.sections}
    for name in ("abilities", "skills", "saves", "fields", "derived", "lists"):
        for i, item in enumerate(getattr(sheet, name)):
            if item.section is not None and item.section not in sections:
                ctx.add(f"sheet.{name}[{i}].section", "unknown-section",
                        f"names section {item.section!r}, which sheet.sections does not declare (SHEET-2)",
                        item.section)
