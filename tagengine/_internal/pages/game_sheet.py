"""The game sheet page: each character's evaluated sheet, the party sheet, the clocks and the last receipts.

Everything comes from the sheet evaluation (`sheet.character`, `sheet.party`: numbers with their
breakdown, HIDE already applied); this module only lays it out as plain values for `pages/sheet.html.j2`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..commands.reasons import REASONS
from ..errors import Problem
from ..ruleset import Ruleset
from ..sheet import CheckNumber, PoolView, SheetView, view_character, view_party
from ..sheet.show import check_parts, party_summary
from ..state import Clock, GameState
from .templates import render_page

CLOCK_RADIUS = 40  # the SVG's units: a 100 x 100 box


def shown(value: Any, labels: Mapping[str, str] | None = None) -> str:
    """A field or cell value as a person reads it: an enum by its label, nothing as an em dash."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if labels and isinstance(value, str):
        return labels.get(value, value)
    return str(value)


def pct(part: int, whole: int) -> float:
    return 0.0 if whole <= 0 else round(max(0.0, min(100.0, 100.0 * part / whole)), 2)


def check_row(c: CheckNumber, dice: bool) -> dict[str, Any]:
    """The number a check rolls and why (`check_parts`, as the text sheet says it)."""
    why: list[str] = []
    if c.total is not None:
        why = check_parts(c, dice, name_untrained=True)
        if c.target is not None:
            why.append(f"target {c.target}")
    number = "—" if c.total is None else str(c.total) if dice else f"{c.total:+d}"
    return {"label": c.label, "number": number, "unit": "dice" if dice and c.total is not None else "",
            "why": why, "refused": c.total is None,
            "level": c.training if c.training is not None and c.kind != "ability" else None}


def wound_cells(w: Any) -> list[dict[str, Any]]:
    kinds = {k[0]: k[1] for k in w.kinds}
    cells = []
    for i, m in enumerate(w.cells):
        level = w.levels[i] if not w.boxed and i < len(w.levels) else None
        cells.append({"n": i + 1, "label": level.label if level else None,
                      "penalty": level.penalty if level else None, "extra": bool(level and level.extra),
                      "mark": m, "mark_label": kinds.get(m, m) if m is not None else None,
                      "lowest": not w.boxed and i == w.filled - 1})
    return cells


def character_context(rs: Ruleset, view: SheetView, controls: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One character's sheet; with `controls` (the game sheet's hand edits by path, `sheet_editor.play_context`),
    each live value carries its control (`ctl`)."""
    s = rs.file.sheet
    ctl = controls or {}
    dice = rs.dice_pool
    hidden = view.hidden
    sections = {sec.id: sec.label for sec in s.sections}
    checks = check_groups(s.sections, view, dice)
    fields = [{"label": f.label, "value": shown(view.fields.get(f.id), f.valueLabels),
               "section": sections.get(f.section or "")}
              for f in s.fields if f"fields.{f.id}" not in hidden]
    derived = [{"label": d.label, "value": shown(view.derived.get(d.id))} for d in s.derived
               if f"derived.{d.id}" not in hidden]
    return {
        "name": view.name,
        "checks": checks,
        "fields": fields,
        "derived": derived,
        "lists": lists_context(s.lists, view),
        "pools": [{**pool_context(p), "ctl": ctl.get(f"pools.{p.id}"), "temp_ctl": ctl.get(f"temp.{p.id}")}
                  for p in view.pools if p.hidden is None],
        "tracks": [{"label": t.label, "value": t.value, "min": t.min, "max": t.max, "ctl": ctl.get(f"tracks.{t.id}"),
                    "pct": pct(t.value - t.min, t.max - t.min)} for t in view.tracks if t.hidden is None],
        "wounds": [{"label": w.label, "boxed": w.boxed, "now": w.now, "penalty": w.penalty, "overflow": w.overflow,
                    "cells": wound_cells(w), "ctl": ctl.get(f"marks.{w.id}")} for w in view.wounds],
        "states": [{"label": st.label, "value": st.value_label, "path": f"states.{st.id}",
                    "ctl": ctl.get(f"states.{st.id}"),
                    "choices": [{"label": label, "value": vid, "on": vid == st.value} for vid, label in st.values]}
                   for st in view.states if st.hidden is None],
        "conditions": [{"label": label, "on": on, "path": f"conditions.{cid}", "ctl": ctl.get(f"conditions.{cid}")}
                       for cid, label, on in view.conditions],
        "text": [{"label": label, "value": value, "ctl": ctl.get(f"text.{tid}")} for tid, label, value in view.text],
        "uses": [u for k, u in ctl.items() if k.startswith("rows.")],
        "hidden": sorted(hidden.items()),
        "health": None if view.health is None else {"label": view.health.label, "now": view.health.now,
                                                      "down": view.health.down},  # WOUND-34, WOUND-39
    }


def check_groups(sections: Sequence[Any], view: SheetView, dice: bool) -> list[dict[str, Any]]:
    """The checks under headings, as the editor and the GM block group them: those that name no section by
    kind (Abilities, Skills, Saves: a sheet without sections looks as it always did, SHEET-4), then each section
    of the ruleset, in its order, with its abilities, skills and saves (SHEET-3)."""
    by_kind: dict[str, list[CheckNumber]] = {"Abilities": [], "Skills": [], "Saves": []}
    by_section: dict[str, list[CheckNumber]] = {}
    for title, group in (("Abilities", view.abilities), ("Skills", view.skills), ("Saves", view.saves)):
        for c in group:
            (by_section.setdefault(c.section, []) if c.section else by_kind[title]).append(c)
    titled = [(title, group) for title, group in by_kind.items()]
    titled += [(sec.label, by_section.get(sec.id, [])) for sec in sections]
    return [{"title": title, "rows": [check_row(c, dice) for c in group]} for title, group in titled if group]


def pool_context(p: PoolView) -> dict[str, Any]:
    return {"label": p.label, "cur": p.cur, "max": p.max, "temp": p.temp, "pct": pct(p.cur, p.max),
            "temp_pct": pct(p.temp, p.max + p.temp) if p.temp else 0.0, "now": p.now}


def lists_context(defs: Iterable[Any], view: SheetView) -> list[dict[str, Any]]:
    out = []
    for lst in defs:
        if f"lists.{lst.id}" in view.hidden:
            continue
        rows: Sequence[Mapping[str, Any]] = view.lists.get(lst.id) or ()
        cols = list(lst.columns)
        pools = view.row_pools.get(lst.id, ())
        out.append({"label": lst.label, "columns": [c.label for c in cols] + (["Left"] if pools else []),
                    "rows": [[shown(r.get(c.id), c.valueLabels) for c in cols]
                             + ([f"{pools[i][0]}/{pools[i][1]}"] if i < len(pools) else []) for i, r in
                             enumerate(rows)]})
    return out


def party_context(rs: Ruleset, view: SheetView, revision: int,
                  controls: Mapping[str, Any] | None = None) -> dict[str, Any]:
    p = rs.file.party
    assert p is not None
    labels = {f.id: f for f in p.fields}
    fields, pools = party_summary(rs, view)
    ctl = controls or {}
    return {"label": p.label, "revision": revision,
            "fields": [{"label": labels[f].label, "value": shown(view.fields.get(f), labels[f].valueLabels)}
                       for f in fields if f in labels],
            "pools": [{**pool_context(v), "ctl": ctl.get(f"pools.{v.id}"), "temp_ctl": None} for v in view.pools
                      if v.id in pools],
            "uses": [u for k, u in ctl.items() if k.startswith("rows.")],
            "lists": lists_context(p.lists, view)}


def clock_context(c: Clock) -> dict[str, Any]:
    """One SVG wedge per segment, clockwise from the top; the first `filled` ones shaded."""
    size = max(1, c.size)
    segments = []
    for i in range(size):
        a0, a1 = (2 * math.pi * i / size - math.pi / 2, 2 * math.pi * (i + 1) / size - math.pi / 2)
        x0, y0 = 50 + CLOCK_RADIUS * math.cos(a0), 50 + CLOCK_RADIUS * math.sin(a0)
        x1, y1 = 50 + CLOCK_RADIUS * math.cos(a1), 50 + CLOCK_RADIUS * math.sin(a1)
        large = 1 if a1 - a0 > math.pi else 0
        path = (f"M50 50 L{x0:.2f} {y0:.2f} A{CLOCK_RADIUS} {CLOCK_RADIUS} 0 {large} 1 {x1:.2f} {y1:.2f} Z"
                if size > 1 else None)  # one segment: the whole circle
        segments.append({"path": path, "filled": i < c.filled})
    return {"name": c.name, "size": c.size, "filled": c.filled, "complete": c.complete, "segments": segments,
            "r": CLOCK_RADIUS}


def receipt_context(r: Mapping[str, Any]) -> dict[str, Any]:
    """A receipt as `Receipt.to_json` writes it; refused ones carry their reason and what it means."""
    attrs = r.get("attrs") or {}
    tag = f"[{r.get('tag')}: " + " ".join(k if v is None else f'{k}="{v}"' for k, v in attrs.items()) + "]"
    reason = r.get("reason")
    return {"tag": tag, "result": r.get("result"), "now": r.get("now"), "reason": reason,
            "means": REASONS[reason][1] if isinstance(reason, str) and reason in REASONS else None,
            "detail": r.get("detail"), "record": dict(r.get("record") or {})}


def sheet_context(rs: Ruleset, state: GameState, *, names: Sequence[str] | None = None,
                  receipts: Sequence[Mapping[str, Any]] | None = None,
                  controls: Mapping[str | None, Mapping[str, Any]] | None = None,
                  problems: Mapping[str | None, Sequence[Problem]] | None = None, **extra: Any) -> dict[str, Any]:
    """Plain values for `sheet.html.j2`: the characters (all, or `names`), the party, clocks, receipts. With
    `controls` (the server's game sheet: by card name, None for the party) each sheet carries its hand edits
    and the links that post them, and the `problems` of a refused one that no control shows; `tagengine sheet
    --html` has none."""
    ctl, found = controls or {}, problems or {}
    chars = [{**character_context(rs, view_character(rs, state, n), ctl.get(n)), "quoted": quote(n, safe=""),
              "problems": [{"code": p.code, "message": p.message} for p in found.get(n, ())]}
             for n in (state.characters if names is None else names)]
    pv = view_party(rs, state)
    party = party_context(rs, pv, state.party_revision, ctl.get(None)) if pv is not None else None
    if party is not None:
        party["problems"] = [{"code": p.code, "message": p.message} for p in found.get(None, ())]
    return {"ruleset": rs.name, "characters": chars, "controls": controls is not None, "party": party,
            "clocks": [clock_context(c) for c in state.clocks], "clocks_enabled": rs.file.clocks is not None,
            "receipts": None if receipts is None else [receipt_context(r) for r in receipts],
            "title": extra.pop("title", rs.name), "campaign": extra.pop("campaign", None),
            "turn": extra.pop("turn", None), "note": extra.pop("note", None), **extra}


def sheet_html(rs: Ruleset, state: GameState, names: Sequence[str] | None = None) -> str:
    """`tagengine sheet --html`: one self-contained page (stylesheet inlined, no script, no server)."""
    title = f"{', '.join(names)} — {rs.name}" if names else f"{rs.name} — party" if names is not None else rs.name
    return render_page("sheet.html.j2", sheet_context(rs, state, names=names, title=title), inline=True)
