"""A player's hand edits in play (docs/editor.md, decisions ED-4): a pool, temporary points, a row's uses, a
plain track, a wound box marked or cleared (WOUND-31, WOUND-51), a live state picked (STATE-15), a condition,
a live note. Each sets a value outright ("Grit is 2", "box 3 holds a tear"), where the model's ops move one
(`spend`, `damage`): the same checks and stores (`pools.set_pool`, `wounds.with_marks`), a different question.
"""

from __future__ import annotations

from ..errors import Problem
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.live import TrackDef
from ..sheet import marking
from ..sheet.edit_paths import Change, EditPath
from ..state import COUNT_MAX, GameState
from . import edit_values
from .pools import set_pool, set_rows
from .subject import Subject, subject
from .wounds import with_marks


@frozen(slots=True)
class Step:
    """What one change did: the state after it, the value it stored (as a receipt writes it), a roll's total."""

    state: GameState
    value: object = None
    rolled: int | None = None


def _hidden(change: Change, subj: Subject, element: object, what: str) -> Problem | None:
    why = subj.ev.hidden(element)
    if why is None:
        return None
    return Problem(change.path, "hidden", f"the {what} is hidden on this sheet ({why}), so it is not set",
                   change.value)  # STATE-10, DEC-14


def set_live(rs: Ruleset, state: GameState, name: str, party: bool, change: Change, where: EditPath) -> Step | Problem:
    """One live value of `name` (a card name, or `$party`) set by hand."""
    subj = subject(rs, state, name, party=party)
    ev, path, raw = subj.ev, change.path, change.value
    if where.area in ("pools", "temp"):
        pool = ev.idx.pools.by_id[where.id]
        if (problem := _hidden(change, subj, pool, "pool")) is not None:
            return problem
        if where.area == "temp":
            temp = edit_values.whole_number(raw, path, 0, COUNT_MAX)
            if isinstance(temp, Problem):
                return temp
            if temp == subj.live.temp.get(pool.id, 0):
                return Step(state, temp)  # what it reads already: nothing to keep (ED-7)
            return Step(set_pool(state, subj, pool, ev.pool_cur(pool), temp), temp)
        cur = edit_values.whole_number(raw, path, 0, ev.pool_max(pool))
        if isinstance(cur, Problem):
            return cur
        if cur == ev.pool_cur(pool):  # a start value not stored yet reads the same: no edit to keep (ED-7)
            return Step(state, cur)
        return Step(set_pool(state, subj, pool, cur), cur)
    if where.area == "rows":
        lst = ev.idx.lists.by_id[where.id]
        if (problem := _hidden(change, subj, lst, "list")) is not None:
            return problem
        cells = ev.row_cells(lst.id) or []
        if where.row is None or where.row >= len(cells):
            return Problem(path, "out-of-range", f"list {lst.id!r} has {len(cells)} rows", raw)
        uses = edit_values.whole_number(raw, path, 0, cells[where.row][1])
        if isinstance(uses, Problem):
            return uses
        if uses == cells[where.row][0]:
            return Step(state, uses)
        return Step(set_rows(state, subj, lst.id, {where.row: uses}), uses)
    if where.area == "marks":
        return _mark(state, subj, ev.idx.tracks.by_id[where.id], change, where)
    if where.area == "tracks":
        t = ev.idx.tracks.by_id[where.id]
        if t.is_wound:
            return Problem(path, "wound-track", f"a wound track is marked box by box: marks.{t.id}.<box>",
                           raw)  # WOUND-30
        if (problem := _hidden(change, subj, t, "track")) is not None:
            return problem
        level = edit_values.whole_number(raw, path, t.min, ev.plain_max(t))
        if isinstance(level, Problem):
            return level
        if level == ev.plain_value(t):
            return Step(state, level)
        return Step(subj.with_live(state, subj.live.but(tracks={**subj.live.tracks, t.id: level})), level)
    if where.area == "states":
        st = ev.idx.states.by_id[where.id]
        if (problem := _hidden(change, subj, st, "live state")) is not None:
            return problem
        picked = edit_values.choice(raw, path, st.values, st.valueLabels, "live state")
        if isinstance(picked, Problem):
            return picked
        if picked == subj.live.states.get(st.id, st.start):
            return Step(state, picked)
        states = {k: v for k, v in subj.live.states.items() if k != st.id}
        if picked != st.start:
            states[st.id] = picked  # STATE-8: saved only when off its default
        return Step(subj.with_live(state, subj.live.but(states=states)), picked)
    if where.area == "conditions":
        on = edit_values.flag(raw, path)
        if isinstance(on, Problem):
            return on
        if on == (where.id in subj.live.conditions):
            return Step(state, on)
        conditions = subj.live.conditions | {where.id} if on else subj.live.conditions - {where.id}
        return Step(subj.with_live(state, subj.live.but(conditions=frozenset(conditions))), on)
    note = next(t for t in rs.file.sheet.live.text if t.id == where.id)  # where.area == "text"
    value = edit_values.live_text(raw, path, note.maxLength)
    if isinstance(value, Problem):
        return value
    if value == subj.live.text.get(note.id, ""):
        return Step(state, value)
    text = {k: v for k, v in subj.live.text.items() if k != note.id}
    if value:
        text[note.id] = value
    return Step(subj.with_live(state, subj.live.but(text=text)), value)


def _mark(state: GameState, subj: Subject, t: TrackDef, change: Change, where: EditPath) -> Step | Problem:
    """A box of a wound track marked with a kind, or cleared with nothing (WOUND-31, WOUND-51). On a track that
    fills by box the mark lands on that box (WOUND-48); on a track that fills by severity every mark is kept in
    severity order (WOUND-15, WOUND-17), so a mark clicked onto a free box lands where its severity puts it and
    a cleared box lets the lighter marks move up. Changing a marked box's kind keeps it marked. A hand edit
    never escalates a mark (WOUND-20 is what a hit does): a full track has no free box to click."""
    shape, current, _ = subj.ev.wound_marks(t)
    raw, path, box = change.value, change.path, where.row or 0
    if not 1 <= box <= shape.length:
        return Problem(path, "out-of-range", f"track {t.id!r} has boxes 1..{shape.length}", raw)
    slots: list[str | None] = [*current.marks, *([None] * (shape.length - len(current.marks)))]
    kind: str | None = None
    if raw is not None and raw != "":
        kinds = {k.id: k.label for k in t.kinds or []}
        found = edit_values.choice(raw, path, kinds, kinds, "track's kinds")
        if isinstance(found, Problem):
            return found
        kind = found
    taken = slots[box - 1] is not None
    if kind is None:
        if not taken:
            return Step(state, "")  # already clear
        if shape.indexed:
            slots[box - 1] = None
        else:
            del slots[box - 1]
    elif taken or shape.indexed:
        slots[box - 1] = kind
    else:  # a free box of a severity track: the mark goes where the algebra puts it (WOUND-17)
        marks, overflow = marking.mark(shape, current.marks, current.overflow, kind, 1)
        return Step(with_marks(state, subj, t, marks, overflow), kind)
    marks, overflow = marking.fit_marks(shape, slots, current.overflow)
    return Step(with_marks(state, subj, t, marks, overflow), kind or "")
