"""`tagengine sheet`: an evaluated sheet for people (by section, numbers with breakdown, what is hidden)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..ruleset import Ruleset
from ..state import thaw
from .views import CheckNumber, SheetView


def to_json(sheet: SheetView) -> dict[str, Any]:
    out: dict[str, Any] = thaw({f.name: getattr(sheet, f.name) for f in dataclasses.fields(sheet)})
    out["abilities"], out["skills"], out["saves"] = ([dataclasses.asdict(c) for c in group]
                                                     for group in (sheet.abilities, sheet.skills, sheet.saves))
    for key in ("pools", "tracks", "wounds", "states"):
        out[key] = [dataclasses.asdict(v) for v in getattr(sheet, key)]
    if sheet.health is None:
        del out["health"]  # only a character of a ruleset with `combat.health` has one
    else:
        out["health"] = {**dataclasses.asdict(sheet.health), "now": sheet.health.now}
    for w, view in zip(out["wounds"], sheet.wounds, strict=True):
        w.update(filled=view.filled, remaining=view.remaining, now=view.now)
    return out


def check_parts(c: CheckNumber, dice: bool, *, name_untrained: bool = False) -> list[str]:
    """What made a check's number, in order (UNTR, CAP, PEN, ADJ): one list for the text sheet and the sheet
    page, so the two never explain a number differently. `name_untrained`: say "untrained" under every rule,
    not only the `by` rule that changes the number."""
    parts = [f"base {c.base:+d}" if not dice else f"base {c.base}"]
    if c.bonus:
        parts.append(f"training {c.bonus:+d}")
    if c.rule == "by":
        parts.append(f"untrained {c.untrained:+d}")
    elif name_untrained and not c.trained and c.kind != "ability":
        parts.append("untrained, harder" if c.rule == "harder" else "untrained")
    if c.cap is not None:
        parts.append(f"cap {c.cap}")
    if c.penalty:
        parts.append(f"penalty {c.penalty:+d}")
    if c.adjust:
        parts.append(f"adjust {c.adjust:+d}")
    return parts


def check_line(c: CheckNumber, dice: bool) -> str:
    unit = " dice" if dice else ""
    if c.total is None:
        return f"{c.label}: no number — untrained, refused"  # UNTR-9, UNTR-13
    parts = check_parts(c, dice)
    level = f" [{c.training}]" if c.training is not None and c.kind != "ability" else ""
    harder = f", target {c.target}" if c.target is not None else ""
    if c.rule == "harder":
        harder += " (harder, untrained)"
    shown = f"{c.total:+d}" if not dice else str(c.total)
    return f"{c.label}{level}: {shown}{unit} ({', '.join(parts)}{harder})"


def render_sheet(rs: Ruleset, sheet: SheetView) -> str:
    s = rs.file.sheet
    dice = rs.dice_pool
    sections = {sec.id: sec.label for sec in s.sections}
    lines = [f"{sheet.name} — {rs.name}"]

    def block(title: str, items: list[str]) -> None:
        if items:
            lines.append(title)
            lines.extend(f"  {i}" for i in items)

    by_section: dict[str | None, list[str]] = {}
    for group in (sheet.abilities, sheet.skills, sheet.saves):
        for c in group:
            by_section.setdefault(c.section, []).append(f"{c.kind}: {check_line(c, dice)}")
    for f in s.fields:
        by_section.setdefault(f.section, []).append(f"field: {f.label}: {sheet.fields.get(f.id)!r}")
    for d in s.derived:
        by_section.setdefault(d.section, []).append(f"derived: {d.label}: {sheet.derived.get(d.id)}")
    for lst in s.lists:
        rows: Sequence[Mapping[str, Any]] = sheet.lists.get(lst.id) or ()
        cells = "; ".join(", ".join(f"{k}={v!r}" for k, v in r.items()) for r in rows) or "no rows"
        by_section.setdefault(lst.section, []).append(f"list: {lst.label}: {cells}")
    block("Sheet", by_section.pop(None, []))
    for sid, items in by_section.items():
        block(sections.get(sid or "", sid or ""), items)
    block("Pools", [f"{p.label}: {p.now}" + (f" (group {p.group})" if p.group else "") for p in sheet.pools])
    block("Row pools", [f"{lid}: " + ", ".join(f"{c}/{m}" for c, m in cells) for lid, cells in sheet.row_pools.items()])
    block("Tracks", [f"{t.label}: {t.value} of {t.min}..{t.max}" for t in sheet.tracks])
    block("Wound tracks", [
        f"{w.label}: {w.now}, penalty {w.penalty} [" + " ".join(
            (next((k[1] for k in w.kinds if k[0] == m), "?") if m else ".") for m in w.cells) + "]"
        for w in sheet.wounds])
    h = sheet.health
    block("Health", [] if h is None else [f"{h.label}: {h.now}" + (f" ({h.down})" if h.down else "")])
    block("States", [f"{st.label}: {st.value_label}" for st in sheet.states])
    block("Conditions", [f"{label}: {'on' if on else 'off'}" for _, label, on in sheet.conditions])
    block("Live text", [f"{label}: {value!r}" for _, label, value in sheet.text])
    block("Hidden", [f"{k}: {why}" for k, why in sheet.hidden.items()])
    return "\n".join(lines) + "\n"


def party_summary(rs: Ruleset, sheet: SheetView) -> tuple[list[str], list[str]]:
    """PARTY-13..15: the summary's fields, else every visible field; pools always."""
    party = rs.file.party
    assert party is not None
    chosen = party.summary.fields if party.summary is not None and party.summary.fields else [
        f.id for f in party.fields if f"fields.{f.id}" not in sheet.hidden]
    pools = [p.id for p in party.pools if f"pools.{p.id}" not in sheet.hidden]
    return chosen, pools


def render_party(rs: Ruleset, sheet: SheetView) -> str:
    party = rs.file.party
    assert party is not None
    labels = {f.id: f.label for f in party.fields}
    fields, pools = party_summary(rs, sheet)
    lines = [f"{sheet.name} — {rs.name}", "Fields"]
    lines += [f"  {labels[f]}: {sheet.fields.get(f)!r}" for f in fields]
    lines.append("Pools")
    lines += [f"  {p.label}: {p.now}" for p in sheet.pools if p.id in pools]
    for lst in party.lists:
        rows: Sequence[Mapping[str, Any]] = sheet.lists.get(lst.id) or ()
        lines.append(f"{lst.label}: " + ("; ".join(", ".join(f"{k}={v!r}" for k, v in r.items()) for r in rows)
                                         or "no rows"))
    lines += [f"Hidden {k}: {why}" for k, why in sheet.hidden.items()]
    return "\n".join(lines) + "\n"
