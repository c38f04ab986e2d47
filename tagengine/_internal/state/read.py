"""Reading a state file without trusting it (DEC-27): shape errors fail, stale values become warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import Problem, StateError
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.index import SheetIndex
from ..ruleset.sheet import ColumnDef, FieldDef, ListDef
from ..text import normalise, prompt_unsafe, writable
from .defaults import default_card, default_party, default_value, name_problems, seed_problem
from .format import CARD_KEYS, DICE_KEYS, LIVE_KEYS, TOP_KEYS
from .values import COUNT_MAX, FORMAT, PARTY, UNSEEDED, Clock, Dice, LiveValues, WoundMarks


@frozen(slots=True)
class StateParts:
    """What a state file holds once read: the parts a `GameState` is built from, and the warnings."""

    cards: dict[str, dict[str, Any]]
    party_sheet: dict[str, Any]
    party_revision: int
    live: dict[str, LiveValues]
    clocks: tuple[Clock, ...]
    warnings: tuple[Problem, ...]
    dice: Dice = UNSEEDED  # UNSEEDED: the file names no dice; the state seeds itself from its content


class Reader:
    """Collects warnings while it reads; python-chess style: note the problem and go on."""

    def __init__(self, rs: Ruleset) -> None:
        self.rs = rs
        self.warnings: list[Problem] = []

    def warn(self, path: str, code: str, message: str, value: Any = None) -> None:
        self.warnings.append(Problem(path, code, message, value))

    def obj(self, raw: Any, path: str) -> Mapping[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.warn(path, "wrong-type", "expected an object; read as empty", type(raw).__name__)
            return {}
        return raw

    # -- permanent values -------------------------------------------------------------------------
    def value(self, f: FieldDef | ColumnDef, raw: Any, path: str) -> Any:
        """A field or cell value, or the default when the ruleset does not allow it (HIDE-5)."""
        t = f.type
        ok = {
            "number": isinstance(raw, int) and not isinstance(raw, bool),
            "boolean": isinstance(raw, bool),
            "enum": raw in (f.values or []),
        }.get(t, isinstance(raw, str))
        if not ok:
            self.warn(path, "bad-value", f"{raw!r} is not a value this {t} allows; read as the default", raw)
            return default_value(f)
        if isinstance(raw, str) and not writable(raw):
            self.warn(path, "bad-text", f"{raw!r} is not valid UTF-8 text; read as the default (H-3)", raw)
            return default_value(f)
        if t == "number":
            lo = f.min if f.min is not None else raw
            hi = f.max if f.max is not None else raw
            if not lo <= raw <= hi:
                self.warn(path, "out-of-range", f"{raw} is outside {lo}..{hi}; clamped", raw)
                return max(lo, min(hi, raw))
        if t in ("text", "longtext") and f.maxLength is not None and len(raw) > f.maxLength:
            self.warn(path, "too-long", f"longer than maxLength {f.maxLength}; cut", len(raw))
            return raw[: f.maxLength]
        return raw

    def fields(self, defs: list[FieldDef], raw: Any, path: str) -> dict[str, Any]:
        data = self.obj(raw, path)
        known = {f.id: f for f in defs}
        for k in data:
            if k not in known:
                self.warn(f"{path}.{k}", "unknown-id", f"the ruleset has no field {k!r}; dropped", k)
        return {f.id: self.value(f, data[f.id], f"{path}.{f.id}") if f.id in data else default_value(f)
                for f in defs}

    def lists(self, defs: list[ListDef], raw: Any, path: str) -> dict[str, list[dict[str, Any]]]:
        data = self.obj(raw, path)
        out: dict[str, list[dict[str, Any]]] = {}
        for k in data:
            if k not in {lst.id for lst in defs}:
                self.warn(f"{path}.{k}", "unknown-id", f"the ruleset has no list {k!r}; dropped", k)
        for lst in defs:
            rows = data.get(lst.id, [])
            if not isinstance(rows, list | tuple):
                self.warn(f"{path}.{lst.id}", "wrong-type", "a list is an array of rows; read as empty", rows)
                rows = []
            clean = []
            for i, row in enumerate(rows):
                rp = f"{path}.{lst.id}[{i}]"
                row = self.obj(row, rp)
                cols = {c.id: c for c in lst.columns}
                for k in row:
                    if k not in cols:
                        self.warn(f"{rp}.{k}", "unknown-id", f"list {lst.id!r} has no column {k!r}; dropped", k)
                clean.append({c.id: self.value(c, row[c.id], f"{rp}.{c.id}") for c in lst.columns
                              if c.id in row and row[c.id] is not None})
            out[lst.id] = clean
        return out

    def card(self, raw: Any, path: str) -> dict[str, Any]:
        data = self.obj(raw, path)
        s = self.rs.file.sheet
        card = default_card(self.rs)
        abilities = self.obj(data.get("abilities"), f"{path}.abilities")
        for k, v in abilities.items():
            a = self.rs.sheet.abilities.get(k)
            ap = f"{path}.abilities.{k}"
            if a is None:
                self.warn(ap, "unknown-id", f"the ruleset has no ability {k!r}; dropped", k)
            elif not isinstance(v, int) or isinstance(v, bool):
                self.warn(ap, "bad-value", f"{v!r} is not a score; read as the default", v)
            else:
                if not a.min <= v <= a.max:
                    self.warn(ap, "out-of-range", f"{v} is outside {a.min}..{a.max}; clamped", v)
                card["abilities"][k] = max(a.min, min(a.max, v))
        levels = [lvl.id for lvl in s.training]
        for kind, idx in (("skills", self.rs.sheet.skills), ("saves", self.rs.sheet.saves)):
            for k, v in self.obj(data.get(kind), f"{path}.{kind}").items():
                kp = f"{path}.{kind}.{k}"
                if k not in idx:
                    self.warn(kp, "unknown-id", f"the ruleset has no {kind[:-1]} {k!r}; dropped", k)
                elif v not in levels:
                    self.warn(kp, "unknown-value", f"{v!r} is not a training level {levels}; read as untrained", v)
                else:
                    card[kind][k] = v
        card["fields"] = self.fields(s.fields, data.get("fields"), f"{path}.fields")
        card["lists"] = self.lists(s.lists, data.get("lists"), f"{path}.lists")
        for k in data:
            if k not in CARD_KEYS:
                self.warn(f"{path}.{k}", "unknown-key", f"a card has no key {k!r}; dropped", k)
        return card

    # -- live values ---------------------------------------------------------------------------------
    def ints(self, raw: Any, path: str, known: SheetIndex | None, what: str, ids: set[str]) -> dict[str, int]:
        out = {}
        for k, v in self.obj(raw, path).items():
            if k not in ids:
                self.warn(f"{path}.{k}", "unknown-id", f"the ruleset has no {what} {k!r}; dropped", k)
            elif not isinstance(v, int) or isinstance(v, bool) or v < 0:
                self.warn(f"{path}.{k}", "bad-value", f"{v!r} is not a count of 0 or more; read as the start", v)
            else:
                out[k] = self.count(v, f"{path}.{k}")
        return out

    def count(self, v: int, path: str) -> int:
        """A count of 0 or more that the ruleset gives no fixed maximum: capped at COUNT_MAX (H-1)."""
        if v > COUNT_MAX:
            self.warn(path, "out-of-range", f"{v} is above {COUNT_MAX}; clamped", v)
            return COUNT_MAX
        return v

    def live(self, raw: Any, path: str, idx: SheetIndex) -> LiveValues:
        data = self.obj(raw, path)
        pools = self.ints(data.get("pools"), f"{path}.pools", idx, "pool", set(idx.pools.by_id))
        temp = self.ints(data.get("temp"), f"{path}.temp", idx, "pool", {p.id for p in idx.pools if p.allowTemp})
        tracks: dict[str, int] = {}
        for k, v in self.obj(data.get("tracks"), f"{path}.tracks").items():
            t = idx.tracks.get(k)
            tp = f"{path}.tracks.{k}"
            if t is None or t.is_wound:
                self.warn(tp, "unknown-id", f"the ruleset has no plain track {k!r}; dropped", k)
            elif not isinstance(v, int) or isinstance(v, bool):
                self.warn(tp, "bad-value", f"{v!r} is not a number; read as the default", v)
            else:
                hi = t.max if isinstance(t.max, int) else COUNT_MAX  # a computed max is applied on reading
                if not t.min <= v <= hi:
                    self.warn(tp, "out-of-range", f"{v} is outside {t.min}..{hi}; clamped", v)
                tracks[k] = max(t.min, min(hi, v))
        marks = {}
        for k, v in self.obj(data.get("marks"), f"{path}.marks").items():
            m = self.marks(k, v, f"{path}.marks.{k}", idx)
            if m is not None:
                marks[k] = m
        states = {}
        for k, v in self.obj(data.get("states"), f"{path}.states").items():
            st = idx.states.get(k)
            sp = f"{path}.states.{k}"
            if st is None:
                self.warn(sp, "unknown-id", f"the ruleset has no live state {k!r}; dropped", k)
            elif v not in st.values:
                self.warn(sp, "unknown-value", f"{v!r} is no longer a value of {k!r}; read as the default "
                          "(STATE-9)", v)
            elif v != st.start:
                states[k] = v
        conditions = set()
        known_conditions = {c.id for c in self.rs.file.sheet.live.conditions} if not idx.party else set()
        raw_conditions = data.get("conditions") or []
        for i, c in enumerate(raw_conditions if isinstance(raw_conditions, list | tuple) else []):
            if isinstance(c, str) and c in known_conditions:
                conditions.add(c)
            else:
                self.warn(f"{path}.conditions[{i}]", "unknown-id", f"the ruleset has no condition {c!r}; dropped", c)
        text = {}
        defs = {t.id: t for t in self.rs.file.sheet.live.text} if not idx.party else {}
        for k, v in self.obj(data.get("text"), f"{path}.text").items():
            d = defs.get(k)
            if isinstance(v, str) and not writable(v):
                self.warn(f"{path}.text.{k}", "bad-text", f"{v!r} is not valid UTF-8 text; dropped (H-3)", v)
            elif d is None or not isinstance(v, str) or prompt_unsafe(v) or len(v) > d.maxLength:
                self.warn(f"{path}.text.{k}", "bad-value", "not a live text this ruleset allows; dropped", v)
            else:
                text[k] = v
        rows = {}
        for k, v in self.obj(data.get("rows"), f"{path}.rows").items():
            lst = idx.lists.get(k)
            if lst is None or lst.pools is None or not isinstance(v, list | tuple):
                self.warn(f"{path}.rows.{k}", "unknown-id", f"{k!r} is not a list with row pools; dropped", k)
                continue
            rows[k] = tuple(self.count(x, f"{path}.rows.{k}[{i}]") if isinstance(x, int) and not isinstance(x, bool)
                            and x >= 0 else None for i, x in enumerate(v))
        for k in data:
            if k not in LIVE_KEYS:
                self.warn(f"{path}.{k}", "unknown-key", f"live values have no key {k!r}; dropped", k)
        return LiveValues(pools, temp, tracks, marks, states, frozenset(conditions), text, rows)

    def marks(self, tid: str, raw: Any, path: str, idx: SheetIndex) -> WoundMarks | None:
        t = idx.tracks.get(tid)
        if t is None or not t.is_wound:
            self.warn(path, "unknown-id", f"the ruleset has no wound track {tid!r}; dropped", tid)
            return None
        data = self.obj(raw, path)
        kinds = {k.id: k.severity for k in t.kinds or []}
        indexed = t.fill == "indexed"
        out: list[str | None] = []
        overflow = data.get("overflow", 0)
        if not isinstance(overflow, int) or isinstance(overflow, bool) or overflow < 0:
            self.warn(f"{path}.overflow", "bad-value", f"{overflow!r} is not a count; read as 0", overflow)
            overflow = 0
        overflow = self.count(overflow, f"{path}.overflow")  # WOUND-22 sets no bound; H-1 does
        raw_marks = data.get("marks", [])
        for i, m in enumerate(raw_marks if isinstance(raw_marks, list | tuple) else []):
            if m is None and indexed:
                out.append(None)
            elif isinstance(m, str) and m in kinds:
                out.append(m)
            else:
                self.warn(f"{path}.marks[{i}]", "unknown-kind", f"{m!r} is not a kind of {tid!r}; dropped", m)
                if indexed:
                    out.append(None)
        if not indexed:
            out.sort(key=lambda k: -kinds.get(k or "", 0))  # WOUND-15; only kinds of the track are left here
        while out and out[-1] is None:
            out.pop()
        return WoundMarks(tuple(out), overflow)

    def dice(self, raw: Any) -> Dice:
        """`rulesetDice`; absent (a file from before the engine rolled dice) or unusable: UNSEEDED, seeded from
        the content."""
        if raw is None:
            return UNSEEDED
        data = self.obj(raw, "rulesetDice")
        seed, rolls = data.get("seed"), data.get("rolls", 0)
        problem = seed_problem(seed)
        if problem is not None:
            self.warn("rulesetDice.seed", "bad-seed", f"{problem}; seeded from the content instead", seed)
            return UNSEEDED
        if not isinstance(rolls, int) or isinstance(rolls, bool) or rolls < 0:
            self.warn("rulesetDice.rolls", "bad-value", f"{rolls!r} is not a count of 0 or more; read as 0", rolls)
            rolls = 0
        for k in data:
            if k not in DICE_KEYS:
                self.warn(f"rulesetDice.{k}", "unknown-key", f"the dice have no key {k!r}; dropped", k)
        assert isinstance(seed, str)
        return Dice(seed, self.count(rolls, "rulesetDice.rolls"))

    def clocks(self, raw: Any) -> tuple[Clock, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list | tuple):
            self.warn("rulesetClocks", "wrong-type", "expected a list of clocks; read as none (CLOCK-25)", raw)
            return ()
        out: list[Clock] = []
        for i, c in enumerate(raw):
            p = f"rulesetClocks[{i}]"
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str) or not isinstance(c.get("size"), int):
                self.warn(p, "bad-clock", "a clock is {name, size, filled}; dropped", c)
                continue
            name, size, filled = c["name"], c["size"], c.get("filled", 0)
            if not writable(name):
                self.warn(f"{p}.name", "bad-text", f"{name!r} is not valid UTF-8 text; dropped (H-3)", name)
                continue
            if not 1 <= len(name) <= 100 or prompt_unsafe(name, label=True):
                self.warn(f"{p}.name", "bad-name", "not a valid clock name (CLOCK-16); dropped", name)
                continue
            if any(normalise(x.name) == normalise(name) for x in out):
                self.warn(f"{p}.name", "clock-exists", f"a clock named {name!r} came earlier; dropped", name)
                continue
            if not 2 <= size <= 12 or isinstance(size, bool):
                self.warn(f"{p}.size", "bad-size", f"{size} is not 2..12 (CLOCK-4); dropped", size)
                continue
            if not isinstance(filled, int) or isinstance(filled, bool) or not 0 <= filled <= size:
                fixed = max(0, min(size, filled)) if isinstance(filled, int) else 0
                self.warn(f"{p}.filled", "out-of-range", f"{filled!r} is outside 0..{size}; read as {fixed}", filled)
                filled = fixed
            out.append(Clock(name, size, filled))
        return tuple(out)


def read_parts(rs: Ruleset, raw: Any, source: str = "<state>") -> StateParts:
    """The parts of a state from parsed JSON; StateError when it is not a state at all."""
    if not isinstance(raw, Mapping):
        raise StateError([Problem("$", "not-state", f"a state is a JSON object, not {type(raw).__name__}", None)],
                         source)
    if raw.get("format") != FORMAT:
        raise StateError([Problem("format", "not-state", f"expected format {FORMAT!r}", raw.get("format"))], source)
    errors = [Problem(k, "wrong-type", f"{k} must be an object", type(raw[k]).__name__)
              for k in ("gameCharacterCards", "gamePartySheet", "rulesetLive")
              if k in raw and not isinstance(raw[k], Mapping)]
    rev = raw.get("gamePartySheetRevision", 0)
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 0:
        errors.append(Problem("gamePartySheetRevision", "wrong-type", "the revision is a whole number, 0 or more", rev))
    names = list(raw.get("gameCharacterCards", {})) if isinstance(raw.get("gameCharacterCards"), Mapping) else []
    errors += name_problems(names, "gameCharacterCards")
    if errors:
        raise StateError(errors, source)
    r = Reader(rs)
    for k in raw:
        if k not in TOP_KEYS:
            r.warn(k, "unknown-key", f"a state has no key {k!r}; dropped", k)
    cards = {n: r.card(v, f"gameCharacterCards.{n}") for n, v in raw.get("gameCharacterCards", {}).items()}
    party_raw = r.obj(raw.get("gamePartySheet"), "gamePartySheet")
    party = default_party(rs)
    if rs.file.party is not None:
        party = {"fields": r.fields(rs.file.party.fields, party_raw.get("fields"), "gamePartySheet.fields"),
                 "lists": r.lists(rs.file.party.lists, party_raw.get("lists"), "gamePartySheet.lists")}
    elif party_raw:
        r.warn("gamePartySheet", "no-party", "the ruleset has no party sheet; dropped", None)
    live: dict[str, LiveValues] = {}
    keys = {normalise(n) for n in cards}
    for k, v in r.obj(raw.get("rulesetLive"), "rulesetLive").items():
        p = f"rulesetLive.{k}"
        if k == PARTY:
            if rs.party is None:
                r.warn(p, "no-party", "the ruleset has no party sheet; dropped", None)
            else:
                live[PARTY] = r.live(v, p, rs.party)
        elif normalise(k) in keys:
            live[normalise(k)] = r.live(v, p, rs.sheet)
        else:
            r.warn(p, "unknown-character", f"no character card is named {k!r}; dropped", k)
    clocks = r.clocks(raw.get("rulesetClocks"))
    dice = r.dice(raw.get("rulesetDice"))
    return StateParts(cards, party, rev, live, clocks, tuple(r.warnings), dice)
