"""The sheet editor's page and the game sheet's edit controls: the editor's form
(`sheet/form.py`'s `FormView`) as plain values for `pages/editor.html.j2` and `pages/sheet.html.j2`, what a form
post asks for (`posted_changes`), and the values a draft re-computes for the page's script (`draft_json`).

A form posts every input under its path, with the value it was shown at as `was:<path>`: only what the player
changed from that is an edit (a value another player or the story changed meanwhile is not written back), so
the receipt names just those changes. A chip without script is a submit button `chip:<path>` (the form saved
with the word appended: `with_chip`), and a row's Add, Move, Delete and Roll buttons post `op`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..commands.sheet_edits import edit_party, edit_sheet
from ..errors import Problem
from ..records import frozen
from ..ruleset import Ruleset
from ..sheet import view_character, view_party
from ..sheet.edit_paths import Change, parse_change, value_text
from ..sheet.evaluator import Eval
from ..sheet.form import FormView, InputView, PlayView, TableView, included, with_chip
from ..state import PARTY, GameState
from .game_sheet import check_row

WIDGETS = {"number": "number", "ability": "number", "text": "text", "dice": "text", "longtext": "textarea",
           "boolean": "checkbox", "enum": "select", "training": "select", "derived": "output"}


def shown_text(value: Any) -> str:
    """An input's value as the form holds it: digits, `true`/`false`, text; nothing as empty."""
    return value_text(value) or ""


class Ids:
    """HTML ids for a page's inputs (`for=` needs one per input; a path may hold any id the ruleset gives)."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0

    def __call__(self) -> str:
        self.n += 1
        return f"{self.prefix}{self.n}"


def _problems(ps: Iterable[Problem]) -> tuple[dict[str, Any], ...]:
    return tuple({"code": p.code, "message": p.message} for p in ps)


def input_context(i: InputView, ids: Ids, dice: bool, was: Mapping[str, str] | None = None,
                  label: str | None = None) -> dict[str, Any]:
    """One input: its widget, the label the ruleset gives (`label` for a table's cell), its value and the value
    it was shown at, its bounds, choices, chips, Roll button, check number, hiding rule and problems."""
    value = shown_text(i.value)
    widget = "output" if i.read_only else WIDGETS.get(i.type, "text")
    hw = i.hide_when
    return {
        "id": ids(), "path": i.path, "label": label or i.label, "type": i.type, "widget": widget, "value": value,
        "was": value if was is None else was.get(i.path, value), "checked": value == "true", "min": i.min,
        "max": i.max, "max_length": i.max_length,
        # tuples, empty for most inputs: a dict of plain values and empty tuples is not tracked by the garbage
        # collector, and a sheet of 800 derived values makes 800 of them per page (benchmarks/editor.py)
        "choices": tuple({"value": v, "label": lb, "selected": v == value} for v, lb in i.choices),
        "chips": tuple({"word": c.word, "chosen": c.chosen} for c in i.chips), "pick": i.pick, "chosen": i.chosen,
        "offer_chips": i.offer_chips, "roll": i.roll,
        "check": None if i.check is None else check_row(i.check, dice),
        "hidden": i.hidden,
        "hide_when": None if hw is None else {"path": hw.path, "form": hw.form,
                                              "values": json.dumps(list(hw.values), ensure_ascii=False)},
        "problems": _problems(i.problems),
    }


def table_context(t: TableView, ids: Ids, dice: bool, was: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A list: its columns, each row's cells (labelled `List row N: Column`) with Move, Delete and Roll."""
    rows = []
    n = len(t.rows)
    for r in t.rows:
        name = f"{t.label} row {r.index + 1}"
        cells = [input_context(cell, ids, dice, was, f"{name}: {col.label}")
                 for cell, col in zip(r.cells, t.columns, strict=True)]
        rows.append({"index": r.index, "path": r.path, "name": name, "cells": cells,
                     "up": f"move:{r.path}={r.index - 1}" if r.index > 0 else None,
                     "down": f"move:{r.path}={r.index + 1}" if r.index < n - 1 else None,
                     "delete": f"delete:{r.path}"})
    return {"path": t.path, "label": t.label, "columns": [{"id": c.id, "label": c.label, "roll": c.roll}
                                                          for c in t.columns],
            "rows": rows, "add": f"add:{t.path}" if n < t.max_rows else None, "hidden": t.hidden,
            "hide_when": None if t.hide_when is None else {
                "path": t.hide_when.path, "form": t.hide_when.form,
                "values": json.dumps(list(t.hide_when.values), ensure_ascii=False)},
            "problems": _problems(t.problems)}


def start_values(play: PlayView) -> list[dict[str, Any]]:
    """The live values at the start of play, as the editor shows them (REF-12): read, not typed; each with its
    `hideWhen`, which follows the form as it is typed (HIDE-5)."""
    def item(i: InputView, now: str) -> dict[str, Any]:
        hw = i.hide_when
        return {"path": i.path, "label": i.label, "now": now, "hidden": i.hidden,
                "hide_when": None if hw is None else {"path": hw.path, "form": hw.form,
                                                      "values": json.dumps(list(hw.values), ensure_ascii=False)}}

    out = [item(p, f"{p.value}/{p.max}" if p.type == "pool" else str(p.value)) for p in play.pools]
    out += [item(t, str(t.value)) for t in play.tracks]
    out += [{"path": w.path, "label": w.label, "now": w.now, "hidden": None, "hide_when": None} for w in play.wounds]
    out += [item(s, dict(s.choices).get(str(s.value), str(s.value))) for s in play.states]
    out += [item(c, "on" if c.value else "off") for c in play.conditions]
    out += [item(n, str(n.value or "—")) for n in play.notes]
    return out


def editor_context(rs: Ruleset, form: FormView, *, was: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Plain values for `editor.html.j2`: the form's sections, each with its inputs and lists; the problems no
    input shows; the party's revision; the live values at their start."""
    ids, dice = Ids("in-"), rs.dice_pool
    sections = [{"label": s.label, "untrained": s.untrained,
                 "inputs": [input_context(i, ids, dice, was) for i in s.inputs],
                 "tables": [table_context(t, ids, dice, was) for t in s.tables]} for s in form.sections]
    return {"who": form.who, "party": form.party, "revision": form.revision, "sections": sections,
            "problems": [{"path": p.path, **_problems([p])[0]} for p in form.problems],
            "start_values": start_values(form.play)}


# -- the game sheet's controls ------------------------------------------------------------
def play_context(play: PlayView, ids: Ids) -> dict[str, dict[str, Any]]:
    """The hand edits of one sheet on the game sheet, by path, each its own small form: pools, temporary points,
    tracks, every wound box (WOUND-31, WOUND-51), a picker per live state (STATE-15), conditions, notes and row
    uses. Hidden live values are left out: an edit of one is refused (ED-3)."""
    def number(i: InputView) -> dict[str, Any]:
        return {"id": ids(), "path": i.path, "label": i.label, "value": shown_text(i.value), "min": i.min,
                "max": i.max, "max_length": i.max_length, "problems": _problems(i.problems)}

    out: dict[str, dict[str, Any]] = {}
    for i in (*play.pools, *play.tracks, *play.notes, *play.uses):
        if i.hidden is None:
            out[i.path] = number(i)
    for w in play.wounds:
        boxes = [{"n": b.n, "path": b.path, "action": b.action, "mark": b.mark, "mark_label": b.mark_label,
                  "aria": f"{w.label} box {b.n}" + (f" ({b.label})" if b.label else "")
                          + (f": {b.mark_label}, clear it" if b.mark else ": mark it")} for b in w.boxes]
        out[w.path] = {"id": ids(), "path": w.path, "label": w.label, "kind": w.kind, "boxes": boxes,
                       "kinds": [{"id": k, "label": lb, "chosen": k == w.kind} for k, lb, _ in w.kinds],
                       "problems": _problems(p for b in w.boxes for p in b.problems)}
    for st in play.states:
        if st.hidden is None:
            out[st.path] = {"path": st.path, "label": st.label, "problems": _problems(st.problems)}
    for c in play.conditions:
        out[c.path] = {"path": c.path, "label": c.label, "problems": _problems(c.problems)}
    return out


# -- what a form post asks for ------------------------------------------------------------------------------
@frozen
class Posted:
    """A form post read: the changes (what differs from the value each input was shown at, then the button's
    own change), the values shown (`was`), and the revision a party form was opened at."""

    changes: tuple[Change, ...]
    was: dict[str, str]
    revision: str | None


def _same(a: str, b: str | None) -> bool:
    return b is not None and a.replace("\r\n", "\n") == b.replace("\r\n", "\n")


def posted_changes(items: Sequence[tuple[str, str]]) -> Posted:
    """The changes a form post asks for. Keys: a path (its last value counts: a checkbox posts `false` from a
    hidden input, then `true` when ticked), `was:<path>`, `chip:<path>` (a chip's word), `op` (`add:`, `move:`,
    `delete:` or `roll:` a path), `revision`; a key starting `_` is the page's own. An input without its `was`
    is a change: a path the sheet does not have is then refused by the edit, by name."""
    typed: dict[str, str] = {}
    was: dict[str, str] = {}
    op: Change | None = None
    chip: tuple[str, str] | None = None
    revision = None
    for key, value in items:
        if key.startswith("was:"):
            was[key[4:]] = value
        elif key.startswith("chip:"):
            chip = (key[5:], value)
        elif key == "op":
            op = parse_change(value)
        elif key == "revision":
            revision = value
        elif not key.startswith("_"):
            typed[key] = value
    if chip is not None:
        typed[chip[0]] = with_chip(typed.get(chip[0], was.get(chip[0], "")), chip[1])
    changes = [Change("set", k, v) for k, v in typed.items() if not _same(v, was.get(k))]
    if op is not None:
        changes.append(op)
    return Posted(tuple(changes), was, revision)


# -- a draft's values, for the page's script (and the API) --------------------------------------------------
def drafted(rs: Ruleset, state: GameState, who: str | None, changes: Sequence[Change]) -> tuple[GameState,
                                                                                            tuple[Problem, ...]]:
    """The state with the changes that can be made (the rest refused, with their problems): what the form
    shows as it is typed, at the revision it was opened at. Rolls are left out: a roll is saved, never drafted."""
    listed = [c for c in changes if c.op != "roll"]

    def edit(cs: Sequence[Change]) -> Any:
        return edit_party(rs, state, cs) if who is None else edit_sheet(rs, state, who, cs)

    edited = edit(listed)
    problems: tuple[Problem, ...] = ()
    if not edited.ok:
        problems = edited.problems
        refused = {p.path for p in problems}
        edited = edit([c for c in listed if c.path not in refused])
    draft = edited.state if edited.ok else state
    if who is None:  # a draft is not a save: the party sheet's revision stays the one the form was opened at
        draft = draft.with_party_sheet(draft.party_sheet, state.party_revision)
    return draft, problems


def draft_json(rs: Ruleset, state: GameState, who: str | None, changes: Sequence[Change]) -> dict[str, Any]:
    """What a draft re-computes, for the editor's script to show as the player types (nothing is kept): each
    derived value, each check number (none for a refused untrained check, UNTR-13), what `hideWhen` hides now
    (HIDE-5), each chip's "Choose N" count (SHEET-17), and the problems of what was typed."""
    draft, problems = drafted(rs, state, who, changes)
    name = None if who is None else draft.character(who)
    view = view_party(rs, draft) if who is None or name is None else view_character(rs, draft, name)
    out: dict[str, Any] = {"derived": {}, "checks": {}, "hidden": {}, "chips": {},
                           "problems": [{"path": p.path, "code": p.code, "message": p.message} for p in problems]}
    if view is None:
        return out
    out["derived"] = {f"derived.{k}": shown_text(v) for k, v in view.derived.items()}
    for kind, checks in (("abilities", view.abilities), ("skills", view.skills), ("saves", view.saves)):
        for c in checks:
            row = check_row(c, rs.dice_pool)
            out["checks"][f"{kind}.{c.id}"] = {"number": row["number"], "unit": row["unit"], "why": row["why"],
                                               "refused": row["refused"]}
    out["hidden"] = dict(view.hidden)
    out["chips"] = _chips(rs, draft, who if name is None else name)
    return out


def _chips(rs: Ruleset, state: GameState, name: str | None) -> dict[str, Any]:
    """Each text field with suggestions: the words its draft includes, against `pick` (SHEET-16, SHEET-17)."""
    party = name is None
    fields = (rs.file.party.fields if party and rs.file.party else () if party else rs.file.sheet.fields)
    wanted = [f for f in fields if f.suggestions and f.type == "text"]
    if not wanted:
        return {}
    card = state.party_sheet if party else state.cards[name or ""]
    ev = Eval(rs, card, state.live_of(PARTY if party else name or ""), party=party,
              members=state.cards if party else None)
    out = {}
    for f in wanted:
        text = (card.get("fields") or {}).get(f.id)
        held = included(text if isinstance(text, str) else "", f.suggestions or ())
        pick = ev.read(f.pick) if f.pick is not None else None
        out[f"fields.{f.id}"] = {"chosen": held, "pick": pick, "offer": pick is None or len(held) < pick}
    return out
