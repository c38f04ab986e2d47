"""A player's edit of a sheet: the sheet editor's form, the command line's `character set`, an edit receipt
(docs/editor.md, decisions ED-1..ED-5). Pure: the state given is never changed.

An edit is a list of changes, each named by its path (`sheet/edit_paths.py`) and checked as the form checks it
(`edit_values.py`): all of them are checked, every problem is reported with what was typed, and nothing is
applied when any change is refused. Changes apply in order, each to the state the ones before it left, so a
row added can be filled in the same edit. After them the sheet is settled (`_settled`, ED-5): a stored pool
above its lowered maximum is written down to it (R-5), and wound marks that no longer fit a track that got
shorter are kept as overflow (WOUND-60: editing the sheet does not undo damage).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import Problem
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.sheet import ColumnDef, ListDef
from ..sheet.edit_paths import LIST_ROWS_MAX, Change, EditPath, area_ids, change_of, read_path, text_limit
from ..sheet.fields import rows
from ..sheet.rolls import roll_sides
from ..state import PARTY, GameState, thaw
from . import edit_values
from .live_edits import Step, set_live
from .subject import subject

MAX_CHANGES = 1000  # changes in one edit: a whole sheet's form is far fewer
SIDES_MAX = 1000  # the most sides a rolled die has
# What a refused edit echoes of what was typed, in its problems and in the form shown again (SEC-14: a
# 15 MiB value was answered three times over): a value within its input's own text bound whole, else (and a
# value of an input that holds no text) its first ECHO_CHARS characters, or the bound's if more, then "…"; a
# path past ECHO_PATH characters (a key the sheet does not have) likewise.
ECHO_CHARS = 300
ECHO_PATH = 1000
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = ECHO_CHARS
_REPR.maxlevel = 3


@frozen
class Edited:
    """What an edit came to: the new state (the state given, when any change was refused), the changes as
    applied (each value in its type, what an edit receipt writes), every problem, and each roll's total."""

    state: GameState
    changes: tuple[Change, ...] = ()
    problems: tuple[Problem, ...] = ()
    rolled: tuple[tuple[str, int], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


Changes = Mapping[str, Any] | Iterable[Change]


def edit_sheet(rs: Ruleset, state: GameState, who: str, changes: Changes) -> Edited:
    """The character `who` (matched as DEC-8) with `changes` made: a mapping of form keys to what was typed
    (`{"fields.oath": "Never again", "add:lists.scars": None}`) or a sequence of `Change`s."""
    name = state.character(who) if isinstance(who, str) else None
    if name is None:
        return Edited(state, problems=(Problem("who", "unknown-character", f"no character is named {who!r}; the "
                                               f"characters are {', '.join(state.characters) or 'none'}", who),))
    return _changed(rs, state, name, changes, party=False)


def edit_party(rs: Ruleset, state: GameState, changes: Changes, *, opened_at: int | None = None) -> Edited:
    """The party sheet with `changes` made. `opened_at`: the revision the player's form was opened at; a
    save opened before a newer save or story change landed is refused `stale-revision`, and the newer sheet is
    the state's (PARTY-36, PARTY-37). A saved change to the party's fields or lists moves the revision on."""
    if rs.party is None:
        return Edited(state, problems=(Problem("sheet", "no-party", "the ruleset has no party sheet", "party"),))
    if opened_at is not None and opened_at != state.party_revision:
        return Edited(state, problems=(Problem("revision", "stale-revision", f"the party sheet was saved at revision "
                                               f"{state.party_revision} after this edit was opened at revision "
                                               f"{opened_at}", opened_at),))  # PARTY-37
    edited = _changed(rs, state, PARTY, changes, party=True)
    if edited.ok and edited.state.party_sheet != state.party_sheet:
        saved = edited.state.with_party_sheet(edited.state.party_sheet, state.party_revision + 1)  # PARTY-36
        return Edited(saved, edited.changes, (), edited.rolled)
    return edited


def _listed(changes: Changes) -> list[Any]:
    if isinstance(changes, Mapping):
        return [change_of(k, v) if isinstance(k, str) else k for k, v in changes.items()]
    return list(changes)


def _changed(rs: Ruleset, state: GameState, name: str, changes: Changes, *, party: bool) -> Edited:
    listed = _listed(changes)
    if len(listed) > MAX_CHANGES:
        return Edited(state, problems=(Problem("changes", "too-many-changes", f"{len(listed)} changes in one edit; "
                                               f"at most {MAX_CHANGES}", len(listed)),))
    problems: list[Problem] = []
    applied: list[Change] = []
    rolled: list[tuple[str, int]] = []
    current = state
    for c in listed:
        if not isinstance(c, Change) or not isinstance(c.path, str):
            problems.append(Problem("changes", "wrong-type", "a change is a Change or a form key and its value",
                                    echoed(c, 80)))
            continue
        where = read_path(rs, c, party=party)
        if isinstance(where, Problem):
            problems.append(where)
            continue
        if where.area == "derived" or (party and where.area == "fields" and where.id in _from_members(rs)):
            problems.append(Problem(c.path, "read-only", "is computed from other values and cannot be typed over",
                                    c.value))  # SHEET-19, PARTY-31
            continue
        step = (_card_step(rs, current, name, party, c, where) if where.area in ("abilities", "skills", "saves",
                "fields", "lists") else set_live(rs, current, name, party, c, where))
        if isinstance(step, Problem):
            problems.append(step)
            continue
        current = step.state
        applied.append(Change(c.op, c.path, step.value))
        if step.rolled is not None:
            rolled.append((c.path, step.rolled))
    if problems:
        return Edited(state, problems=tuple(_echo(rs, p, party) for p in problems))
    if current is state:  # every change set a value to what it reads already: the very state, nothing to keep
        return Edited(state, tuple(applied), (), tuple(rolled))
    return Edited(_settled(rs, current, name, party), tuple(applied), (), tuple(rolled))


def echoed(value: Any, most: int) -> Any:
    """What a refused edit echoes of a typed value: text of at most `most` characters whole, longer text cut
    there with "…"; a number, a flag or None as it is; anything else (a JSON list or object) as a short repr,
    made without reading it all."""
    if isinstance(value, str):
        return value if len(value) <= most else value[:most] + "…"
    if value is None or isinstance(value, bool | int | float):
        return value
    text = _REPR.repr(value)
    return text if len(text) <= most else text[:most] + "…"


def echo_bound(rs: Ruleset, path: str, party: bool) -> int:
    """The most characters of a value typed at `path` a refused edit echoes whole: the input's own text bound
    (a field's or column's `maxLength`, a live note's), at least ECHO_CHARS."""
    where = read_path(rs, Change("set", path), party=party) if len(path) <= ECHO_PATH else None
    bound = None
    if isinstance(where, EditPath):
        found = area_ids(rs, where.area, party).get(where.id)
        if where.area == "lists" and where.column is not None and found is not None:
            found = next((c for c in found.columns if c.id == where.column), None)
        if where.area in ("fields", "lists") and found is not None and not isinstance(found, ListDef):
            bound = text_limit(found)
        elif where.area == "text" and found is not None:
            bound = found.maxLength
    return max(ECHO_CHARS, bound or 0)


def _echo(rs: Ruleset, p: Problem, party: bool) -> Problem:
    """A refused change's problem with what it echoes bounded (`echoed`): its value, its path."""
    path = echoed(p.path, ECHO_PATH)
    value = echoed(p.value, echo_bound(rs, p.path, party))
    return p if path is p.path and value is p.value else replace(p, path=path, value=value)


def _from_members(rs: Ruleset) -> set[str]:
    return {fm.field for fm in rs.file.party.fromMembers} if rs.file.party else set()


def _settled(rs: Ruleset, state: GameState, name: str, party: bool) -> GameState:
    """The sheet after an edit, settled as the engine keeps a sheet (ED-5). A stored pool or row's uses above its
    maximum is written down to it (R-5: a lowered maximum never gives points back when it rises again); a pool
    or row at its start stays at its start and follows its maximum (REF-12: before play, the editor has no live
    state). Marks past a shortened wound track are kept as overflow in the state, as the sheet already reads
    them (WOUND-60, E-6). Nothing is evaluated for a sheet with nothing stored."""
    live = state.live_of(name)
    if not (live.pools or live.rows or live.marks):
        return state
    subj = subject(rs, state, name, party=party)
    ev = subj.ev
    pools = {k: min(v, ev.pool_max(ev.idx.pools.by_id[k])) if k in ev.idx.pools.by_id else v
             for k, v in live.pools.items()}
    uses = {}
    for list_id, stored in live.rows.items():
        tops = [top for _, top in ev.row_cells(list_id) or []]
        uses[list_id] = tuple(None if v is None else min(v, tops[i]) if i < len(tops) else v
                              for i, v in enumerate(stored))
    marks = dict(live.marks)
    for t in (() if party else rs.file.sheet.live.tracks):
        if t.id in marks and t.is_wound:
            marks[t.id] = ev.wound_marks(t)[1]
    if (pools, uses, marks) == (dict(live.pools), dict(live.rows), dict(live.marks)):
        return state
    return subj.with_live(state, live.but(pools=pools, rows=uses, marks=marks))


# -- permanent values: abilities, training, fields, list rows --------------------------------------------------
def _card_step(rs: Ruleset, state: GameState, name: str, party: bool, c: Change, where: EditPath) -> Step | Problem:
    card = thaw(state.party_sheet if party else state.cards[name])
    path, raw = c.path, c.value
    value: Any
    if where.area == "abilities":
        a = rs.sheet.abilities.by_id[where.id]
        value = edit_values.whole_number(raw, path, a.min, a.max)
        if isinstance(value, Problem):
            return value
        card.setdefault("abilities", {})[a.id] = value
    elif where.area in ("skills", "saves"):
        ladder = rs.file.sheet.training
        if not ladder:
            return Problem(path, "unknown-value", "the sheet has no training levels (sheet.training), so every "
                           "character is untrained", raw)  # E-3
        value = edit_values.choice(raw, path, [lv.id for lv in ladder], {lv.id: lv.label for lv in ladder},
                                   "training ladder")
        if isinstance(value, Problem):
            return value
        card.setdefault(where.area, {})[where.id] = value
    elif where.area == "fields":
        f = (rs.party.fields if party and rs.party else rs.sheet.fields).by_id[where.id]
        value = edit_values.field_value(f, raw, path)
        if isinstance(value, Problem):
            return value
        card.setdefault("fields", {})[f.id] = value
    else:
        return _row_step(rs, state, name, party, card, c, where)
    return Step(_with_card(state, name, party, card), value)


def _with_card(state: GameState, name: str, party: bool, card: dict[str, Any]) -> GameState:
    return state.with_party_sheet(card, state.party_revision) if party else state.with_card(name, card)


def _row_step(rs: Ruleset, state: GameState, name: str, party: bool, card: dict[str, Any], c: Change,
              where: EditPath) -> Step | Problem:
    """SHEET-28..34: a cell set or rolled, a row added, moved or deleted. A list with row pools keeps each row's
    uses with its row (they are stored by position, R-4)."""
    lst: ListDef = (rs.party.lists if party and rs.party else rs.sheet.lists).by_id[where.id]
    stored: list[dict[str, Any]] = card.setdefault("lists", {}).setdefault(lst.id, [])
    path, raw, n = c.path, c.value, len(stored)
    if c.op == "add":
        at = n if raw is None or raw == "" else edit_values.whole_number(raw, path, 0, n)
        if isinstance(at, Problem):
            return at
        if n >= LIST_ROWS_MAX:
            return Problem(path, "too-many-rows", f"list {lst.id!r} holds at most {LIST_ROWS_MAX} rows", raw)
        stored.insert(at, {})
        return Step(_with_uses(_with_card(state, name, party, card), name, party, lst, n, "add", at), at)
    if where.row is None or where.row >= n:
        return Problem(path, "out-of-range", f"list {lst.id!r} has {n} row{'s' if n != 1 else ''} "
                       f"(counted from 0)", raw)
    row = where.row
    if c.op == "delete":
        del stored[row]
        return Step(_with_uses(_with_card(state, name, party, card), name, party, lst, n, "delete", row))
    if c.op == "move":
        to = edit_values.whole_number(raw, path, 0, n - 1)
        if isinstance(to, Problem):
            return to
        stored.insert(to, stored.pop(row))
        return Step(_with_uses(_with_card(state, name, party, card), name, party, lst, n, "move", row, to), to)
    col = next(col for col in lst.columns if col.id == where.column)
    if c.op == "roll":
        return _roll(rs, state, name, party, card, lst, row, col, c)
    value = edit_values.field_value(col, raw, path)
    if isinstance(value, Problem):
        return value
    stored[row] = {**stored[row], col.id: value}
    return Step(_with_card(state, name, party, card), value)


def _with_uses(state: GameState, name: str, party: bool, lst: ListDef, n: int, op: str, row: int,
               to: int = 0) -> GameState:
    """The stored uses of a list's row pools, moved with their rows (stored by position: R-4)."""
    live = state.live_of(name)
    stored = live.rows.get(lst.id)
    if lst.pools is None or not stored:
        return state
    uses: list[int | None] = [*stored, *([None] * (n - len(stored)))]
    if op == "add":
        uses.insert(row, None)
    elif op == "delete":
        del uses[row]
    else:
        uses.insert(to, uses.pop(row))
    return state.with_live(name, live.but(rows={**live.rows, lst.id: tuple(uses)}))


def _roll(rs: Ruleset, state: GameState, name: str, party: bool, card: dict[str, Any], lst: ListDef, row: int,
          col: ColumnDef, c: Change) -> Step | Problem:
    """SHEET-32..34: the column's dice rolled with the state's own dice (they replay: DEC-5), the total written
    clamped between the column's `min` and `max`."""
    if col.roll is None:
        return Problem(c.path, "no-roll", f"column {col.id!r} is not filled by a roll", c.value)  # SHEET-32
    ev = subject(rs, state, name, party=party).ev
    sides = roll_sides(ev, lst, col, rows(lst.columns, [card["lists"][lst.id][row]])[0])
    if sides is None or not 1 <= sides <= SIDES_MAX:
        return Problem(c.path, "cannot-roll", f"the die has {sides} sides; a roll needs 1 to {SIDES_MAX}",
                       c.value)  # SHEET-33
    faces, dice = state.dice.roll(col.roll.count, sides)
    total = sum(faces)
    if col.min is not None:
        total = max(col.min, total)
    if col.max is not None:
        total = min(col.max, total)
    stored = card["lists"][lst.id]
    stored[row] = {**stored[row], col.id: total}
    return Step(_with_card(state, name, party, card).with_dice(dice), None, total)
