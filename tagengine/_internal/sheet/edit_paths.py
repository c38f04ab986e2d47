"""What an edit names on a sheet: a path such as `abilities.hunt`, `fields.oath`, `lists.scars.2.name` or
`marks.strain.3`, and a change to it: a value set, a list row added, moved or deleted, a cell rolled
(docs/editor.md, decisions ED-1, ED-2).

The editor's form names each input by its path, the command line takes `path=value`, and an edit receipt
carries its changes in the same words, so a path means one thing wherever it is written. Ids come from the
ruleset and may hold dots: a path names the longest id that fits. Rows count from 0, as in the state file;
wound boxes from 1, as the sheet shows them (WOUND-47) and `box=` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import Problem
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.sheet import ColumnDef, FieldDef

CARD_AREAS = ("abilities", "skills", "saves", "fields", "derived", "lists")  # what a card keeps
LIVE_AREAS = ("pools", "temp", "rows", "tracks", "marks", "states", "conditions", "text")  # what play changes
PARTY_AREAS = ("fields", "lists", "pools", "rows")  # what the party sheet has (PARTY-2, PARTY-3, PARTY-27)
OPS = ("set", "add", "move", "delete", "roll")
# Bounds of what an edit stores where the ruleset sets none (ED-3): the form shows them, the edit holds to them
TEXT_MAX = 400  # a `text` field or column without `maxLength`: one line of a few sentences
LONGTEXT_MAX = 4000  # a `longtext` field without `maxLength`
LIST_ROWS_MAX = 200  # rows a list may hold (the spec sets no bound; a sheet is read by people and by the model)
_INDEX = re.compile(r"[0-9]{1,9}")

# (area, op) -> what follows the id: "" nothing, "row" a row or box number, "cell" a row and a column
_SHAPES: dict[tuple[str, str], str] = {
    **{(area, "set"): "" for area in (*CARD_AREAS, *LIVE_AREAS)},
    ("lists", "set"): "cell", ("lists", "roll"): "cell", ("lists", "add"): "", ("lists", "move"): "row",
    ("lists", "delete"): "row", ("rows", "set"): "row", ("marks", "set"): "row",
}
_WORDS = {"abilities": "ability", "skills": "skill", "saves": "save", "fields": "field", "derived": "derived value",
          "lists": "list", "pools": "pool", "temp": "pool with temporary points", "rows": "list with row pools",
          "tracks": "track", "marks": "wound track", "states": "live state", "conditions": "condition",
          "text": "live text"}


@frozen(slots=True)
class Change:
    """One change a player asks for: `op` (set, add, move, delete, roll), the path it names and what was typed
    (set: the new value; add: where the row goes, None at the end; move: where the row goes)."""

    op: str
    path: str
    value: Any = None

    @property
    def key(self) -> str:
        """How a form or the command line names it: the path for a set, else `op:path`."""
        return self.path if self.op == "set" else f"{self.op}:{self.path}"


def change_of(key: str, value: Any = None) -> Change:
    """The change a form's key names: a path sets it; `add:lists.gear`, `move:lists.gear.2`, `delete:lists.gear.2`
    and `roll:lists.gear.2.bulk` act on list rows."""
    op, sep, path = key.partition(":")
    if sep and op in OPS and op != "set":
        return Change(op, path, value)
    return Change("set", key, value)


def parse_change(text: str) -> Change:
    """A change written `key=value` (the command line, an edit receipt); a key alone (`delete:lists.gear.2`) has
    no value."""
    key, sep, value = text.partition("=")
    return change_of(key, value if sep else None)


def value_text(value: Any) -> str | None:
    """A change's value as the command line and a receipt write it: a number in digits, a flag `true`/`false`,
    text as it is; None for no value."""
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)



@frozen(slots=True)
class EditPath:
    """A path read against the ruleset: its area, the id it names there, a row (from 0) or a wound box (from 1),
    and a list's column."""

    area: str
    id: str
    row: int | None = None
    column: str | None = None


def area_ids(rs: Ruleset, area: str, party: bool) -> Mapping[str, Any]:
    """The definitions an area's paths name, by id (empty for an area the sheet does not have)."""
    if party:
        p = rs.party
        if p is None or area not in PARTY_AREAS:
            return {}
        if area == "rows":
            return {k: v for k, v in p.lists.by_id.items() if v.pools is not None}
        if area == "fields":
            return p.fields.by_id
        return p.lists.by_id if area == "lists" else p.pools.by_id
    idx, live = rs.sheet, rs.file.sheet.live
    table: dict[str, Mapping[str, Any]] = {
        "abilities": idx.abilities.by_id, "skills": idx.skills.by_id, "saves": idx.saves.by_id,
        "fields": idx.fields.by_id, "derived": idx.derived.by_id, "lists": idx.lists.by_id,
        "pools": idx.pools.by_id, "tracks": idx.tracks.by_id, "states": idx.states.by_id,
    }
    if area in table:
        return table[area]
    if area == "temp":
        return {k: v for k, v in idx.pools.by_id.items() if v.allowTemp}
    if area == "rows":
        return {k: v for k, v in idx.lists.by_id.items() if v.pools is not None}
    if area == "marks":
        return {k: v for k, v in idx.tracks.by_id.items() if v.is_wound}
    if area == "conditions":
        return {c.id: c for c in live.conditions}
    if area == "text":
        return {t.id: t for t in live.text}
    return {}


def _longest_id(rest: str, ids: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The id `rest` names and what follows it after a dot: ids may hold dots, so the longest that fits."""
    if rest in ids:
        return rest, None
    best = max((i for i in ids if rest.startswith(i + ".")), key=len, default=None)
    return None if best is None else (best, rest[len(best) + 1:])


def read_path(rs: Ruleset, change: Change, *, party: bool = False) -> EditPath | Problem:
    """The path of `change` read against the ruleset, or the problem naming what it does not have."""
    def problem(message: str) -> Problem:
        return Problem(change.path, "unknown-path", message, change.value)

    if change.op not in OPS:
        return Problem(change.path, "unknown-op", f"an edit sets, adds, moves, deletes or rolls, not {change.op!r}",
                       change.value)
    area, _, rest = change.path.partition(".")
    areas = PARTY_AREAS if party else (*CARD_AREAS, *LIVE_AREAS)
    if area not in areas:
        return problem(f"a path starts with one of {', '.join(areas)}")
    shape = _SHAPES.get((area, change.op))
    if shape is None:
        return problem(f"{change.op} does not apply to {area}: only list rows are added, moved, deleted or rolled")
    found = _longest_id(rest, area_ids(rs, area, party))
    if found is None:
        named = repr(rest) if len(rest) <= 60 else repr(rest[:60]) + "…"
        return problem(f"the {'party ' if party else ''}sheet has no {_WORDS[area]} {named}")
    id_, tail = found
    if shape == "":
        return EditPath(area, id_) if tail is None else problem(f"{area}.{id_} has nothing below it")
    number, _, column = (tail or "").partition(".")
    form = {"row": f"{area}.{id_}.<{'box' if area == 'marks' else 'row'}>",
            "cell": f"{area}.{id_}.<row>.<column>"}[shape]
    if not _INDEX.fullmatch(number) or (shape == "row") != (column == ""):
        return problem(f"the path is {form}, with the {'box' if area == 'marks' else 'row'} as a number")
    if shape == "cell":
        columns = {c.id for c in area_ids(rs, area, party)[id_].columns}
        if column not in columns:
            return problem(f"list {id_!r} has no column {column[:60]!r}")
        return EditPath(area, id_, int(number), column)
    return EditPath(area, id_, int(number))


def text_limit(f: FieldDef | ColumnDef) -> int | None:
    """The most characters a text field or column holds: its `maxLength`, else the edit's bound; None for a
    field that holds no text."""
    if f.type not in ("text", "longtext"):
        return None
    return f.maxLength if f.maxLength is not None else LONGTEXT_MAX if f.type == "longtext" else TEXT_MAX
