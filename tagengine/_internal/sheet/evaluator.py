"""One evaluation of one sheet: inputs, memoised derived values, and every value-reference read (REF)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..memo import IdentityCache
from ..ruleset import Ruleset
from ..ruleset.index import SheetIndex
from ..ruleset.live import PoolDef, TrackDef
from ..ruleset.refs import ValueRefDef
from ..ruleset.sheet import ColumnDef
from ..state import NO_LIVE, LiveValues, WoundMarks
from . import marking, wounds
from .check_numbers import check_number
from .compile import program
from .fields import field_values, rows
from .views import CheckNumber, WoundLevel, WoundView
from .visibility import hidden_by

_MAXIMA: IdentityCache[dict[str, int]] = IdentityCache()
NO_MARKS = WoundMarks()  # a wound track with nothing stored: one shared value


def maxima(*owners: Any) -> dict[str, int]:
    """Pool maxima shared by every evaluation of the same ruleset and permanent values. A maximum never
    reads live state (REF-13, enforced at import), so it stays right for as long as those objects live."""
    return _MAXIMA.get(owners, dict)


class Eval:
    """Lazily computes what a sheet reads. Derived values are computed once each (CAP-5), on demand, so a
    live read may reach a pool whose maximum is a derived value declared further down."""

    __slots__ = (
        "_fields",
        "_members",
        "_next",
        "_pool_max",
        "_program",
        "_rows",
        "_scores",
        "_sums",
        "_wounds",
        "card",
        "checks_done",
        "computed",
        "idx",
        "live",
        "party",
        "rs",
    )

    def __init__(self, rs: Ruleset, card: Mapping[str, Any], live: LiveValues | None, *, party: bool = False,
                 members: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.rs = rs
        self.party = party
        self.idx: SheetIndex = rs.party if party and rs.party is not None else rs.sheet
        self.card = card
        self.live = live if live is not None else NO_LIVE  # REF-12: no live state reads the start
        self._members = members
        self._fields: dict[str, Any] | None = None
        self._program: list[Any] | None = None  # compiled derived values, fetched on first use
        self.computed: dict[str, int] = {}
        self._next = 0  # derived values before this position are computed (or being computed)
        self._rows: dict[str, list[dict[str, Any]] | None] = {}
        self._wounds: dict[str, WoundView] = {}
        self._pool_max: dict[str, int] | None = None  # shared per card, fetched on first use
        self._sums: dict[tuple[str, str, str | None], int] = {}
        self._scores: dict[str, int] = {}
        self.checks_done: dict[tuple[str, str, str | None], CheckNumber] = {}

    @property
    def fields(self) -> dict[str, Any]:
        """Field values as the editor shows them, computed on first use."""
        if self._fields is None:
            rs = self.rs
            defs = rs.file.party.fields if self.party and rs.file.party else rs.file.sheet.fields
            self._fields = field_values(defs, self.card.get("fields") or {})
            if self.party and self._members is not None:
                self._from_members(self._members)
        return self._fields

    def _from_members(self, members: Mapping[str, Mapping[str, Any]]) -> None:
        """PARTY-29..31: member fields are read from the characters as they are, at each use."""
        party = self.rs.file.party
        assert party is not None and self._fields is not None
        char_fields = self.rs.file.sheet.fields
        for fm in party.fromMembers:
            if fm.count:
                self._fields[fm.field] = len(members)
            elif fm.sum is not None:
                self._fields[fm.field] = sum(field_values(char_fields, c.get("fields") or {}).get(fm.sum, 0)
                                             for c in members.values())

    # -- visibility --------------------------------------------------------------------------------
    def hidden(self, element: Any) -> str | None:
        hw = getattr(element, "hideWhen", None)
        return None if hw is None else hidden_by(hw, self.fields)

    # -- lists -------------------------------------------------------------------------------------
    def list_rows(self, list_id: str) -> list[dict[str, Any]] | None:
        """The list's rows, or None when the list is hidden (REF-5, WOUND-59)."""
        if list_id not in self._rows:
            lst = self.idx.lists.get(list_id)
            if lst is None:
                self._rows[list_id] = None
            else:
                stored = (self.card.get("lists") or {}).get(list_id) or []
                self._rows[list_id] = None if self.hidden(lst) else rows(lst.columns, stored)
        return self._rows[list_id]

    # -- derived values ----------------------------------------------------------------------------
    def derived(self, did: str) -> int:
        """A derived value. Everything declared above it is computed first, in order (CAP-5), so each
        read of a value above is a lookup and no chain, however long, recurses deeply. A value read
        while it is being computed (a loop the import checks refuse) reads 0."""
        value = self.computed.get(did)
        if value is not None:
            return value
        pos = self.idx.derived.pos.get(did)
        if pos is None:
            return 0
        if self._program is None:
            self._program = program(self.rs)
        order, fns, done = self.idx.derived.items, self._program, self.computed
        while self._next <= pos:
            i = self._next
            self._next += 1  # before computing: a re-entrant read of this value finds it in progress
            done[order[i].id] = fns[i](self)
        return done.get(did, 0)

    def known_derived(self, values: Mapping[str, int]) -> None:
        """Take `values`, every derived value of this card worked out by another evaluation without reading a live
        value (`sheet_views.kept_part`), as computed here: they are this evaluation's too, and a pool's maximum that
        reads one finds it instead of working the chain out again."""
        self.computed = dict(values)
        self._next = len(self.idx.derived.items)

    def all_derived(self) -> dict[str, int]:
        items = self.idx.derived.items
        if items:
            self.derived(items[-1].id)
        return {d.id: self.computed.get(d.id, 0) for d in items}

    def enum_table(self, d: Any) -> int:
        """ENUM-1..5: the table's number for the source's value; missing or hidden reads `default`."""
        table = d.table if isinstance(d.table, dict) else {}
        src = d.from_
        value = None
        if src is not None and src.key == "field":
            value = self.fields.get(src.target)
        elif src is not None and src.key == "liveState":
            value = self.state_value(src.target)
        return table.get(value, d.default or 0) if value is not None else (d.default or 0)

    # -- value references --------------------------------------------------------------------------
    def read(self, ref: ValueRefDef) -> int:
        key, target = ref.key, ref.target
        if key == "derived":
            value = self.computed.get(target)
            return value if value is not None else self.derived(target)
        if key == "const":
            return int(target)
        if key == "field":
            value = self.fields.get(target)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0
        if key == "abilityScore":
            return self.ability_score(target)
        if key == "abilityMod":
            return self.ability_mod(target)
        if key == "abilityModFromField":
            ability = self.fields.get(target)
            return self.ability_mod(ability) if isinstance(ability, str) else 0
        if key in ("skillMod", "saveMod"):
            return check_number(self, "skill" if key == "skillMod" else "save", target).sheet or 0
        if key == "listSum":
            return self.list_sum(target.list, target.column, target.onlyWhen)
        if key == "livePool":
            pool = self.idx.pools.get(target)
            return 0 if pool is None or self.hidden(pool) else self.pool_cur(pool)  # REF-7, REF-10
        if key == "liveTrack":
            return self.track_read(target, ref.read or "value")
        return 0  # itemStat is refused at import (docs/decisions.md T-5)

    def list_sum(self, list_id: str, column: str, only_when: str | None) -> int:
        """REF-2..5: sum a numeric column; empty cells read their default; a hidden list adds nothing."""
        key = (list_id, column, only_when)
        cached = self._sums.get(key)
        if cached is not None:
            return cached
        total = 0
        for row in self.list_rows(list_id) or ():
            if only_when is None or row.get(only_when) is True:
                value = row.get(column)
                if isinstance(value, int) and not isinstance(value, bool):
                    total += value
        self._sums[key] = total
        return total

    # -- abilities ---------------------------------------------------------------------------------
    def ability_score(self, aid: str) -> int:
        score = self._scores.get(aid)
        if score is None:
            a = self.idx.abilities.get(aid)
            raw = (self.card.get("abilities") or {}).get(aid)
            if a is None:
                score = 0
            elif not isinstance(raw, int) or isinstance(raw, bool):
                score = a.default if a.default is not None else a.min
            else:
                score = max(a.min, min(a.max, raw))
            self._scores[aid] = score
        return score

    def ability_mod(self, aid: str) -> int:
        score = self.ability_score(aid)
        return (score // 2) - 5 if self.rs.file.sheet.abilityModifier == "d20" else score

    # -- pools -------------------------------------------------------------------------------------
    def pool_max(self, pool: PoolDef) -> int:
        table = self._pool_max
        if table is None:
            owners = (self.rs, self.card, self._members) if self.party else (self.rs, self.card)
            table = self._pool_max = maxima(*owners)
        value = table.get(pool.id)
        if value is None:
            value = table[pool.id] = max(0, self.read(pool.max))
        return value

    def pool_cur(self, pool: PoolDef) -> int:
        """What remains: the stored value, or the pool's `start` (DEC-26, REF-12), within 0..max."""
        top = self.pool_max(pool)
        stored = self.live.pools.get(pool.id)
        cur = (top if pool.start == "full" else 0) if stored is None else stored
        return max(0, min(top, cur))

    # -- tracks ------------------------------------------------------------------------------------
    def plain_max(self, track: TrackDef) -> int:
        if isinstance(track.max, ValueRefDef):
            return max(track.min, self.read(track.max))
        return track.max if track.max is not None else track.min

    def plain_value(self, track: TrackDef) -> int:
        default = track.default if track.default is not None else track.min
        value = self.live.tracks.get(track.id, default)
        return max(track.min, min(self.plain_max(track), value))

    def wound_marks(self, track: TrackDef) -> tuple[marking.TrackShape, WoundMarks, tuple[WoundLevel, ...]]:
        """What a command or a rest changes: the track as it stands (length from the sheet, levels with
        their extra rows) and its marks, those past the length counted as overflow (WOUND-60)."""
        if track.boxes is not None:
            levels: tuple[WoundLevel, ...] = ()
            length = self.wound(track).length
        else:
            rows_ = self.list_rows(track.extra.list) if track.extra is not None else None
            levels = wounds.levels_with_extra(track, rows_)
            length = len(levels)
        model = wounds.shape(track, length)
        stored = self.live.marks.get(track.id)
        if stored is None:
            return model, NO_MARKS, levels
        marks, overflow = marking.fit_marks(model, stored.marks, stored.overflow)
        if marks == stored.marks and overflow == stored.overflow:
            return model, stored, levels
        return model, WoundMarks(marks, overflow), levels

    def row_cells(self, list_id: str) -> list[tuple[int, int]] | None:
        """(current, max) for each row of a list with row pools (SHEET-31), hidden or not; None when the
        list has no pools. A stored value above the row's maximum reads as the maximum."""
        lst = self.idx.lists.get(list_id)
        if lst is None or lst.pools is None:
            return None
        rows_ = rows(lst.columns, (self.card.get("lists") or {}).get(list_id) or [])
        stored = self.live.rows.get(list_id, ())
        start_full = lst.pools.start == "full"
        out = []
        for i, row in enumerate(rows_):
            top = max(0, int(row.get(lst.pools.maxColumn) or 0))
            cur = stored[i] if i < len(stored) else None
            out.append((max(0, min(top, (top if start_full else 0) if cur is None else cur)), top))
        return out

    def row_pools(self, list_id: str) -> list[tuple[int, int]] | None:
        """(current, max) for each row of a list with row pools (SHEET-31); None when hidden or not one."""
        lst = self.idx.lists.get(list_id)
        if lst is None or lst.pools is None or self.hidden(lst):
            return None
        return self.row_cells(list_id)

    def name_column(self, list_id: str) -> ColumnDef | None:
        """The column that names a list's rows: the summary's `nameColumn` for the list, else the first
        column, as the sheet block shows rows (GM-15)."""
        lst = self.idx.lists.get(list_id)
        if lst is None or not lst.columns:
            return None
        party = self.rs.file.party
        summary = party.summary if self.party and party else (self.rs.file.gm.sheetSummary if self.rs.file.gm else None)
        for sl in summary.lists if summary is not None else []:
            if sl.list == list_id and sl.nameColumn is not None:
                return next((c for c in lst.columns if c.id == sl.nameColumn), lst.columns[0])
        return lst.columns[0]

    def row_names(self, list_id: str) -> list[tuple[str, ...]]:
        """What names each row of a list: its name column as the sheet block shows it, and for an enum also
        the value id (DEC-8); () for a blank name."""
        col = self.name_column(list_id)
        lst = self.idx.lists.get(list_id)
        if col is None or lst is None:
            return []
        out: list[tuple[str, ...]] = []
        for row in rows(lst.columns, (self.card.get("lists") or {}).get(list_id) or []):
            value = row.get(col.id)
            if value is None or value == "":
                out.append(())
            elif col.type == "enum":
                out.append(((col.valueLabels or {}).get(value, value), value))
            else:
                out.append((str(value),))
        return out

    def wound(self, track: TrackDef) -> WoundView:
        if track.id not in self._wounds:
            length = 0
            if track.boxes is not None:
                length = max(1, min(64, self.read(track.max))) if isinstance(track.max, ValueRefDef) else \
                    max(1, min(64, track.max or 1))
            rows_ = self.list_rows(track.extra.list) if track.extra is not None else None
            self._wounds[track.id] = wounds.view(track, self.live.marks.get(track.id), length, rows_)
        return self._wounds[track.id]

    def track_read(self, tid: str, what: str) -> int:
        """REF-9: value, filled, remaining or penalty; a hidden track reads 0 (REF-10)."""
        t = self.idx.tracks.get(tid)
        if t is None or self.hidden(t):
            return 0
        if t.is_wound:
            w = self.wound(t)
            return {"value": w.filled, "filled": w.filled, "remaining": w.remaining, "penalty": w.penalty}[what]
        value = self.plain_value(t)
        return {"value": value, "filled": value - t.min, "remaining": self.plain_max(t) - value}.get(what, 0)

    # -- live states -------------------------------------------------------------------------------
    def state_value(self, sid: str) -> str | None:
        """The state's value; None when hidden (STATE-10: a table reads it as no value)."""
        st = self.idx.states.get(sid)
        if st is None or self.hidden(st):
            return None
        value = self.live.states.get(sid)
        return value if value in st.values else st.start  # STATE-9
