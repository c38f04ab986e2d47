"""The sheet editor's form and the game sheet's edit controls as plain data (docs/editor.md): what the
pages and the JSON API render, with no markup.

Every input is named by the path an edit sets (`sheet/edit_paths.py`) and labelled by the ruleset's label. The
form groups the inputs as the ruleset's sections do (SHEET-1..4), offers suggestions as chips with "Choose N"
(SHEET-14..18), shows derived values read-only (SHEET-19), the check numbers the engine computes and none for
a refused untrained check (UNTR-13), each element's `hideWhen` read on the draft's values and the rule itself
so a page can follow the typing (HIDE-5), and live values as they stand, at their start before play (REF-12).
A problem an edit reported sits on the input it names, with what the player typed as the input's value.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import NotFoundError, Problem
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.hide import HideWhenDef
from ..ruleset.sheet import ColumnDef, FieldDef, ListDef, UntrainedByDef, UntrainedDef
from ..state import PARTY, GameState
from .edit_paths import LIST_ROWS_MAX, text_limit
from .evaluator import Eval
from .fields import rows
from .rolls import roll_text
from .sheet_views import view_character, view_party
from .views import CheckNumber, SheetView


def included(text: str, suggestions: Iterable[str]) -> list[str]:
    """The suggestions a text includes, each as a whole word or phrase, case aside (U-19, ED-11): what "Choose N"
    counts (SHEET-17), whatever separates them. Other typed words are kept and never refused (SHEET-15,
    SHEET-18); they are not counted, since only a suggestion is something to choose."""
    return [w for w in suggestions if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.IGNORECASE)]


def with_chip(text: str, word: str) -> str:
    """SHEET-14: a chip appends its word to what is written, after a comma when something is."""
    return f"{text.rstrip().rstrip(',;').rstrip()}, {word}" if text.strip() else word


@frozen(slots=True)
class ChipView:
    word: str
    chosen: bool  # the text already holds it


@frozen(slots=True)
class HideRuleView:
    """A `hideWhen` rule, for a page to follow the typing (HIDE-5): hidden when the field at `path` holds (or,
    for `notEquals`, does not hold) one of `values`."""

    path: str
    form: str  # equals, notEquals, in
    values: tuple[Any, ...]


@frozen(slots=True)
class InputView:
    """One input: the path an edit sets, the ruleset's label, its type and value, and what bounds it.

    `type`: a field's or column's (number, text, longtext, boolean, enum, dice); `ability` (a score), `training`
    (a skill's or save's level), `derived` (read-only); in play `pool`, `temp`, `uses`, `track`, `state`,
    `condition`, `note`."""

    path: str
    label: str
    type: str
    value: Any
    min: int | None = None
    max: int | None = None
    max_length: int | None = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, label): an enum's values, a ladder's levels, a state's
    chips: tuple[ChipView, ...] = ()  # SHEET-14: suggestions, each appending its word
    pick: int | None = None  # SHEET-16, SHEET-17: "Choose N"
    chosen: int | None = None  # how many items the text holds, beside `pick`
    offer_chips: bool = False  # SHEET-17: chips are offered until `pick` items are chosen
    roll: str | None = None  # SHEET-34: what its Roll button rolls (`1d8`); post `roll:<path>`
    read_only: bool = False  # SHEET-19: computed, never typed over
    check: CheckNumber | None = None  # an ability's, skill's or save's number; `total` None: refused (UNTR-13)
    hidden: str | None = None  # why `hideWhen` hides it now (HIDE-5)
    hide_when: HideRuleView | None = None
    problems: tuple[Problem, ...] = ()


@frozen(slots=True)
class ColumnView:
    id: str
    label: str
    type: str
    min: int | None = None
    max: int | None = None
    max_length: int | None = None
    choices: tuple[tuple[str, str], ...] = ()
    suggestions: tuple[str, ...] = ()
    roll: str | None = None  # SHEET-32..34: what the column's Roll button rolls, e.g. `1d8` or `1d(Die)`


@frozen(slots=True)
class RowView:
    index: int  # from 0; `delete:<path>` and `move:<path>` act on the row
    path: str
    cells: tuple[InputView, ...]
    uses: InputView | None = None  # SHEET-31: the row's uses in play, for a list with row pools


@frozen(slots=True)
class TableView:
    """A list (SHEET-28): its columns and rows; `add:<path>` adds a row, up to `max_rows`."""

    path: str
    label: str
    columns: tuple[ColumnView, ...]
    rows: tuple[RowView, ...]
    max_rows: int = LIST_ROWS_MAX
    hidden: str | None = None
    hide_when: HideRuleView | None = None
    problems: tuple[Problem, ...] = ()


@frozen(slots=True)
class SectionView:
    """One group of the form (SHEET-1..4): a section of the ruleset, or the kind of what names none."""

    id: str | None
    label: str
    untrained: str | None  # the section's untrained rule (UNTR-2): normal, harder, refuse, `by -1`
    inputs: tuple[InputView, ...]
    tables: tuple[TableView, ...] = ()


@frozen(slots=True)
class BoxView:
    """One box of a wound track (WOUND-31, WOUND-51): `action` is what a click on it does."""

    n: int  # from 1, as the sheet shows it (WOUND-47)
    path: str  # `marks.<track>.<n>`: set to a kind to mark, to nothing to clear
    label: str | None  # the level's label on a track of named levels
    penalty: int | None
    mark: str | None
    mark_label: str | None
    action: str  # "mark" (a free box) or "clear"
    problems: tuple[Problem, ...] = ()


@frozen(slots=True)
class WoundBoxesView:
    path: str
    label: str
    boxed: bool
    indexed: bool  # a mark lands on the box clicked; else where its severity puts it (WOUND-15, WOUND-48)
    kinds: tuple[tuple[str, str, int], ...]  # (id, label, severity)
    kind: str  # the kind a plain click marks: the lightest (U-22, ED-4)
    boxes: tuple[BoxView, ...]
    overflow: int
    penalty: int
    now: str


@frozen(slots=True)
class PlayView:
    """The game sheet's edit controls: live values as they stand, at their start before play (REF-12)."""

    pools: tuple[InputView, ...] = ()  # each pool, then its temporary points where the pool allows them
    tracks: tuple[InputView, ...] = ()
    wounds: tuple[WoundBoxesView, ...] = ()
    states: tuple[InputView, ...] = ()  # STATE-15: a picker for each live state
    conditions: tuple[InputView, ...] = ()
    notes: tuple[InputView, ...] = ()
    uses: tuple[InputView, ...] = ()  # SHEET-31: each row pool


@frozen(slots=True)
class FormView:
    """The editor's form for one character or the party."""

    who: str  # the character's card name, or the party's label
    party: bool
    revision: int | None  # the party sheet's revision this form is opened at (PARTY-36); None for a character
    sections: tuple[SectionView, ...]
    play: PlayView
    problems: tuple[Problem, ...] = ()  # problems no input of this form shows

    def to_json(self) -> dict[str, Any]:
        """Plain dicts and lists for the JSON API (problems as `{path, code, message, value}`)."""
        return dataclasses.asdict(self)


# -- building -----------------------------------------------------------------------------------------------
class _Problems:
    """The problems of an edit, by the path each names; what is left over goes to the form."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.by_path: dict[str, list[Problem]] = {}
        for p in problems:
            self.by_path.setdefault(p.path, []).append(p)
        self.used: set[str] = set()

    def on(self, path: str) -> tuple[Problem, ...]:
        found = self.by_path.get(path, ())
        if found:
            self.used.add(path)
        return tuple(found)

    def rest(self) -> tuple[Problem, ...]:
        return tuple(p for path, ps in self.by_path.items() if path not in self.used for p in ps)


def _typed(value: Any, problems: tuple[Problem, ...]) -> Any:
    """What the input shows: what the player typed when an edit refused it, else the value held."""
    return problems[0].value if problems and problems[0].value is not None else value


def _hide_rule(hw: HideWhenDef | None) -> HideRuleView | None:
    return None if hw is None else HideRuleView(f"fields.{hw.field}", hw.form, tuple(hw.values))


def _untrained(rule: UntrainedDef | None) -> str | None:
    if rule is None:
        return None
    return f"by {rule.by:+d}" if isinstance(rule, UntrainedByDef) else rule


def _value_input(ev: Eval, f: FieldDef | ColumnDef, path: str, label: str, value: Any, problems: _Problems, *,
                 hidden: str | None = None, hide_when: HideRuleView | None = None, roll: str | None = None,
                 read_only: bool = False) -> InputView:
    """A field's or cell's input; with suggestions, its chips and the count chosen against `pick`."""
    own = problems.on(path)
    shown = _typed(value, own)
    chips: tuple[ChipView, ...] = ()
    pick = chosen = None
    offer = False
    if f.suggestions and f.type == "text":
        held = included(shown if isinstance(shown, str) else "", f.suggestions)
        chips = tuple(ChipView(w, w in held) for w in f.suggestions)
        pick = ev.read(f.pick) if f.pick is not None else None
        chosen = len(held)
        offer = pick is None or chosen < pick  # SHEET-17: no more chips once N are in; typing is never refused
    return InputView(path, label, f.type, shown, f.min, f.max, text_limit(f),
                     tuple((v, (f.valueLabels or {}).get(v, v)) for v in f.values or ()), chips, pick, chosen,
                     offer, roll, read_only, None, hidden, hide_when, own)


def _table_view(ev: Eval, lst: ListDef, stored: Sequence[Any], problems: _Problems, hidden: str | None) -> TableView:
    base = f"lists.{lst.id}"
    columns = tuple(ColumnView(c.id, c.label, c.type, c.min, c.max, text_limit(c),
                               tuple((v, (c.valueLabels or {}).get(v, v)) for v in c.values or ()),
                               tuple(c.suggestions or ()), roll_text(ev, lst, c, None)) for c in lst.columns)
    uses = _uses(ev, lst, hidden, problems)
    out_rows = []
    for i, row in enumerate(rows(lst.columns, list(stored))):
        path = f"{base}.{i}"
        cells = tuple(_value_input(ev, c, f"{path}.{c.id}", c.label, row[c.id], problems,
                                   roll=roll_text(ev, lst, c, row)) for c in lst.columns)
        out_rows.append(RowView(i, path, cells, uses[i] if i < len(uses) else None))
        problems.on(path)  # a problem with the row itself (moved, deleted) shows on the table
    own = tuple(p for r in out_rows for p in problems.by_path.get(r.path, ())) + problems.on(base)
    return TableView(base, lst.label, columns, tuple(out_rows), LIST_ROWS_MAX, hidden, _hide_rule(lst.hideWhen), own)


def _check_input(rs: Ruleset, ev: Eval, kind: str, c: CheckNumber, problems: _Problems) -> InputView:
    path = f"{'abilities' if kind == 'ability' else kind + 's'}.{c.id}"
    own = problems.on(path)
    if kind == "ability":
        a = rs.sheet.abilities.by_id[c.id]
        return InputView(path, c.label, "ability", _typed(ev.ability_score(c.id), own), a.min, a.max, check=c,
                         problems=own)
    ladder = rs.file.sheet.training
    return InputView(path, c.label, "training", _typed(c.training, own),
                     choices=tuple((lv.id, lv.label) for lv in ladder), read_only=not ladder, check=c, problems=own)


def edit_form(rs: Ruleset, state: GameState, who: str | None, problems: Iterable[Problem] = ()) -> FormView:
    """The editor's form for the character `who` (matched as DEC-8), or the party sheet when `who` is None; the
    `problems` of a refused edit sit on the inputs they name. Raises NotFoundError for an unknown character,
    or for the party sheet of a ruleset without one."""
    found = _Problems(problems)
    if who is None:
        return _party_form(rs, state, found)
    name = state.character(who)
    if name is None:
        raise NotFoundError("character", who, state.characters)
    view = view_character(rs, state, name)
    card = state.cards[name]
    ev = Eval(rs, card, state.live_of(name))
    s = rs.file.sheet
    groups: dict[str | None, list[InputView]] = {}
    kinds: dict[str, list[InputView]] = {"ability": [], "skill": [], "save": [], "field": [], "derived": []}
    for kind, checks in (("ability", view.abilities), ("skill", view.skills), ("save", view.saves)):
        for c in checks:
            target = groups.setdefault(c.section, []) if c.section else kinds[kind]  # SHEET-3, SHEET-4
            target.append(_check_input(rs, ev, kind, c, found))
    for f in s.fields:
        path = f"fields.{f.id}"
        item = _value_input(ev, f, path, f.label, view.fields.get(f.id), found, hidden=view.hidden.get(path),
                            hide_when=_hide_rule(f.hideWhen))
        (groups.setdefault(f.section, []) if f.section else kinds["field"]).append(item)
    for d in s.derived:
        path = f"derived.{d.id}"
        own = found.on(path)
        item = InputView(path, d.label, "derived", view.derived.get(d.id), read_only=True,
                         hidden=view.hidden.get(path), hide_when=_hide_rule(d.hideWhen), problems=own)
        (groups.setdefault(d.section, []) if d.section else kinds["derived"]).append(item)
    tables: dict[str | None, list[TableView]] = {}
    for lst in s.lists:
        stored = (card.get("lists") or {}).get(lst.id) or ()
        table = _table_view(ev, lst, stored, found, view.hidden.get(f"lists.{lst.id}"))
        tables.setdefault(lst.section, []).append(table)
    sections: list[SectionView] = []
    for kind, title in (("ability", "Abilities"), ("skill", "Skills"), ("save", "Saves")):
        if kinds[kind]:
            sections.append(SectionView(None, title, None, tuple(kinds[kind])))
    for sec in s.sections:
        if groups.get(sec.id) or tables.get(sec.id):
            sections.append(SectionView(sec.id, sec.label, _untrained(sec.untrained), tuple(groups.get(sec.id, ())),
                                        tuple(tables.get(sec.id, ()))))
    for kind, title in (("field", "Fields"), ("derived", "Derived values")):
        if kinds[kind]:
            sections.append(SectionView(None, title, None, tuple(kinds[kind])))
    if tables.get(None):
        sections.append(SectionView(None, "Lists", None, (), tuple(tables[None])))
    play = _play(rs, view, ev, found)
    return FormView(name, False, None, tuple(sections), play, found.rest())


def _party_form(rs: Ruleset, state: GameState, found: _Problems) -> FormView:
    party = rs.file.party
    view = view_party(rs, state)
    if party is None or view is None:
        raise NotFoundError("party sheet", "party")
    ev = Eval(rs, state.party_sheet, state.live_of(PARTY), party=True, members=state.cards)
    computed = {fm.field for fm in party.fromMembers}
    inputs = tuple(_value_input(ev, f, f"fields.{f.id}", f.label, view.fields.get(f.id), found,
                                hidden=view.hidden.get(f"fields.{f.id}"), hide_when=_hide_rule(f.hideWhen),
                                read_only=f.id in computed) for f in party.fields)
    tables = tuple(_table_view(ev, lst, (state.party_sheet.get("lists") or {}).get(lst.id) or (), found,
                          view.hidden.get(f"lists.{lst.id}")) for lst in party.lists)
    sections = [SectionView(None, "Fields", None, inputs)] if inputs else []
    if tables:
        sections.append(SectionView(None, "Lists", None, (), tables))
    uses = tuple(u for lst in party.lists for u in _uses(ev, lst, view.hidden.get(f"lists.{lst.id}"), found))
    play = PlayView(pools=_pool_inputs(view, ev, found), uses=uses)
    return FormView(party.label, True, state.party_revision, tuple(sections), play, found.rest())


# -- the game sheet's controls ------------------------------------------------------------------------------
def play_controls(rs: Ruleset, state: GameState, who: str | None) -> PlayView:
    """The live values of the character `who` (None: the party) as the game sheet edits them: every pool, track,
    wound box, live state, condition, note and row pool, with the path a hand edit sets. Raises NotFoundError
    for an unknown character or a ruleset without a party sheet."""
    return edit_form(rs, state, who).play


def _pool_inputs(view: SheetView, ev: Eval, found: _Problems) -> tuple[InputView, ...]:
    out = []
    for p in view.pools:
        own = found.on(f"pools.{p.id}")
        pool = ev.idx.pools.by_id[p.id]
        out.append(InputView(f"pools.{p.id}", p.label, "pool", _typed(p.cur, own), 0, p.max, hidden=p.hidden,
                             hide_when=_hide_rule(pool.hideWhen), problems=own))
        if pool.allowTemp:
            own = found.on(f"temp.{p.id}")
            out.append(InputView(f"temp.{p.id}", f"{p.label} (temporary)", "temp", _typed(p.temp, own), 0,
                                 hidden=p.hidden, problems=own))
    return tuple(out)


def _play(rs: Ruleset, view: SheetView, ev: Eval, found: _Problems) -> PlayView:
    live = rs.file.sheet.live
    defs = {t.id: t for t in live.tracks}
    tracks = []
    for t in view.tracks:
        own = found.on(f"tracks.{t.id}")
        tracks.append(InputView(f"tracks.{t.id}", t.label, "track", _typed(t.value, own), t.min, t.max,
                                hidden=t.hidden, hide_when=_hide_rule(defs[t.id].hideWhen), problems=own))
    wounds = []
    for w in view.wounds:
        kinds = {k[0]: k[1] for k in w.kinds}
        boxes = tuple(BoxView(i + 1, f"marks.{w.id}.{i + 1}", w.levels[i].label if not w.boxed else None,
                              w.levels[i].penalty if not w.boxed else None, m, kinds.get(m) if m else None,
                              "clear" if m is not None else "mark", found.on(f"marks.{w.id}.{i + 1}"))
                      for i, m in enumerate(w.cells))
        lightest = min(w.kinds, key=lambda k: k[2])[0] if w.kinds else ""
        wounds.append(WoundBoxesView(f"marks.{w.id}", w.label, w.boxed, defs[w.id].fill == "indexed", w.kinds,
                                     lightest, boxes, w.overflow, w.penalty, w.now))
    states = []
    st_defs = {st.id: st for st in live.states}
    for st in view.states:
        own = found.on(f"states.{st.id}")
        states.append(InputView(f"states.{st.id}", st.label, "state", _typed(st.value, own), choices=st.values,
                                hidden=st.hidden, hide_when=_hide_rule(st_defs[st.id].hideWhen), problems=own))
    conditions = []
    for cid, label, on in view.conditions:
        own = found.on(f"conditions.{cid}")
        conditions.append(InputView(f"conditions.{cid}", label, "condition", _typed(on, own), problems=own))
    limits = {t.id: t.maxLength for t in live.text}
    notes = []
    for tid, label, value in view.text:
        own = found.on(f"text.{tid}")
        notes.append(InputView(f"text.{tid}", label, "note", _typed(value, own), max_length=limits[tid], problems=own))
    uses = tuple(u for lst in rs.file.sheet.lists for u in _uses(ev, lst, view.hidden.get(f"lists.{lst.id}"), found))
    return PlayView(_pool_inputs(view, ev, found), tuple(tracks), tuple(wounds), tuple(states), tuple(conditions),
                    tuple(notes), uses)


def _uses(ev: Eval, lst: ListDef, hidden: str | None, found: _Problems) -> list[InputView]:
    """SHEET-31: each row's uses of a list with row pools, named as the sheet block names the row (R-2)."""
    cells = ev.row_cells(lst.id)
    if cells is None:
        return []
    names = ev.row_names(lst.id)
    out = []
    for i, (cur, top) in enumerate(cells):
        path = f"rows.{lst.id}.{i}"
        own = found.on(path)
        name = names[i][0] if i < len(names) and names[i] else f"row {i + 1}"
        out.append(InputView(path, f"{lst.label}: {name}", "uses", _typed(cur, own), 0, top, hidden=hidden,
                             problems=own))
    return out
