"""The game state and its JSON file (DEC-26..28, PARTY-23/24, CLOCK-25).

A `GameState` is immutable: commands return a new one, so the snapshot a reply started from is
still there for a regenerate or a swipe (CLOCK-26, CLOCK-27). Loading never trusts the file: what the
ruleset no longer allows is read as the spec says and reported as a warning (DEC-27).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import Problem, StateError
from .ruleset import Ruleset
from .ruleset.sheet import Column, FieldDef
from .text import normalise, prompt_unsafe

FORMAT = "tagengine.state/1"
PARTY = "$party"
COUNT_MAX = 999_999_999
"""The largest count a state keeps where the ruleset sets no maximum (overflow, pools, temporary points,
plain tracks with a computed max, row pools): the largest number a tag can spell (docs/decisions.md H-1)."""


@dataclass(frozen=True, slots=True)
class Clock:
    name: str
    size: int
    filled: int = 0

    @property
    def complete(self) -> bool:
        return self.filled >= self.size


@dataclass(frozen=True, slots=True)
class Marks:
    """A wound track's marks, most severe first (WOUND-15); `None` is a free box on an indexed track."""

    marks: tuple[str | None, ...] = ()
    overflow: int = 0


@dataclass(frozen=True, slots=True)
class Live:
    """One character's (or the party's) live values; what is absent is at its start (DEC-26)."""

    pools: Mapping[str, int] = field(default_factory=dict)
    temp: Mapping[str, int] = field(default_factory=dict)
    tracks: Mapping[str, int] = field(default_factory=dict)
    marks: Mapping[str, Marks] = field(default_factory=dict)
    states: Mapping[str, str] = field(default_factory=dict)
    conditions: frozenset[str] = frozenset()
    text: Mapping[str, str] = field(default_factory=dict)
    rows: Mapping[str, tuple[int | None, ...]] = field(default_factory=dict)

    def but(self, *, pools: Any = None, temp: Any = None, tracks: Any = None, marks: Any = None, states: Any = None,
            conditions: Any = None, text: Any = None, rows: Any = None) -> Live:
        """A copy with some parts replaced (positional: cheaper than dataclasses.replace on the hot path)."""
        return Live(
            self.pools if pools is None else pools, self.temp if temp is None else temp,
            self.tracks if tracks is None else tracks, self.marks if marks is None else marks,
            self.states if states is None else states, self.conditions if conditions is None else conditions,
            self.text if text is None else text, self.rows if rows is None else rows,
        )


NO_LIVE = Live()  # one shared "at start" value, so an unplayed character's snapshot is the same object


@dataclass(frozen=True)
class GameState:
    """Cards (permanent values) by character name, the party sheet, live values and clocks."""

    cards: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    party_sheet: Mapping[str, Any] = field(default_factory=dict)
    party_revision: int = 0
    live: Mapping[str, Live] = field(default_factory=dict)
    clocks: tuple[Clock, ...] = ()
    warnings: tuple[Problem, ...] = field(default=(), compare=False)

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def new(cls, rs: Ruleset, characters: Iterable[str]) -> GameState:
        """Characters at their start: default cards, pools at `start`, tracks unmarked, no clocks.
        `characters` is a collection of names: one string would be read letter by letter (H-4)."""
        if isinstance(characters, str | bytes):
            raise StateError([Problem("characters", "wrong-type", f"a list of names, not the single name "
                                      f"{characters!r}: write [{characters!r}]", characters)], "new state")
        names = list(characters)
        problems = name_problems(names, "characters")
        if problems:
            raise StateError(problems, "new state")
        cards = {n: default_card(rs) for n in names}
        return cls(cards=cards, party_sheet=default_party(rs))

    @property
    def characters(self) -> tuple[str, ...]:
        return tuple(self.cards)

    def character(self, name: str) -> str | None:
        """The card name a `who=` names, matched case-insensitively (DEC-8)."""
        if name in self.cards:
            return name
        key = normalise(name)
        for n in self.cards:
            if normalise(n) == key:
                return n
        return None

    def live_of(self, name: str) -> Live:
        return self.live.get(normalise(name) if name != PARTY else PARTY, NO_LIVE)

    def with_live(self, name: str, live: Live) -> GameState:
        key = normalise(name) if name != PARTY else PARTY
        return GameState(self.cards, self.party_sheet, self.party_revision, {**self.live, key: live}, self.clocks,
                         self.warnings)

    def with_clocks(self, clocks: tuple[Clock, ...]) -> GameState:
        return GameState(self.cards, self.party_sheet, self.party_revision, self.live, clocks, self.warnings)

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "gameCharacterCards": {n: plain(c) for n, c in self.cards.items()},
            "gamePartySheet": plain(self.party_sheet),
            "gamePartySheetRevision": self.party_revision,
            "rulesetLive": {k: live_json(v) for k, v in self.live.items() if live_json(v)},
            "rulesetClocks": [{"name": c.name, "size": c.size, "filled": c.filled} for c in self.clocks],
        }
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps(), encoding="utf-8")

    @classmethod
    def loads(cls, rs: Ruleset, text: str | bytes, source: str = "<state>") -> GameState:
        try:
            raw = json.loads(text)
        except (json.JSONDecodeError, RecursionError, UnicodeDecodeError, ValueError) as e:
            msg = f"{e.msg} at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else type(
                e).__name__
            raise StateError([Problem("$", "not-json", msg, None)], source) from None
        from .state_load import from_json

        return from_json(rs, raw, source)

    @classmethod
    def load(cls, rs: Ruleset, path: str | Path) -> GameState:
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise StateError([Problem("$", "unreadable", f"cannot read {p}: {e.strerror}", str(p))], str(p)) from None
        return cls.loads(rs, data, str(p))


_SURROGATE = re.compile("[\ud800-\udfff]")


def writable(text: str) -> bool:
    """True when `text` encodes to UTF-8. Text decoded with `surrogateescape` (a reply that is not clean
    UTF-8) or a JSON `\\ud800` escape can hold lone surrogates, which no state file could save (H-3)."""
    return _SURROGATE.search(text) is None


def plain(value: Any) -> Any:
    """Mappings and tuples as JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def live_json(live: Live) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if live.pools:
        out["pools"] = dict(live.pools)
    if live.temp:
        out["temp"] = {k: v for k, v in live.temp.items() if v}
    if live.tracks:
        out["tracks"] = dict(live.tracks)
    marks = {k: {"marks": list(m.marks), "overflow": m.overflow} for k, m in live.marks.items()
             if m.marks or m.overflow}
    if marks:
        out["marks"] = marks
    if live.states:
        out["states"] = dict(live.states)
    if live.conditions:
        out["conditions"] = sorted(live.conditions)
    if live.text:
        out["text"] = dict(live.text)
    if live.rows:
        out["rows"] = {k: list(v) for k, v in live.rows.items()}
    return {k: v for k, v in out.items() if v}


def name_problems(names: list[str], path: str) -> list[Problem]:
    """Character names: prompt-safe, distinct once normalised, never `$party` (PARTY-24)."""
    problems = []
    seen: dict[str, str] = {}
    for i, n in enumerate(names):
        key = normalise(n) if isinstance(n, str) else ""
        if not isinstance(n, str) or not key:
            problems.append(Problem(f"{path}[{i}]", "bad-name", "a character name is non-empty text", n))
        elif not writable(n):
            problems.append(Problem(f"{path}[{i}]", "bad-text", "a character name is valid UTF-8 text (H-3)", n))
        elif key.startswith("$"):
            problems.append(Problem(f"{path}[{i}]", "reserved-name", f"{n!r} collides with the reserved "
                                    f"{PARTY} entry (PARTY-24)", n))
        elif (why := prompt_unsafe(n, label=True)) is not None:
            problems.append(Problem(f"{path}[{i}]", "bad-name", f"a character name {why} (DEC-25)", n))
        elif key in seen:
            problems.append(Problem(f"{path}[{i}]", "duplicate-character", f"{n!r} is the same name as "
                                    f"{seen[key]!r} (DEC-8)", n))
        else:
            seen[key] = n
    return problems


# -- defaults ---------------------------------------------------------------------------------------
def default_value(f: FieldDef | Column) -> Any:
    """What a blank sheet starts with (HIDE-5)."""
    if f.default is not None:
        return f.default
    return {"number": f.min if f.min is not None and f.min > 0 else 0, "boolean": False,
            "enum": (f.values or [""])[0]}.get(f.type, "")


def default_card(rs: Ruleset) -> dict[str, Any]:
    s = rs.file.sheet
    first = s.training[0].id if s.training else None
    card: dict[str, Any] = {
        "abilities": {a.id: a.default if a.default is not None else a.min for a in s.abilities},
        "fields": {f.id: default_value(f) for f in s.fields},
        "lists": {lst.id: [] for lst in s.lists},
    }
    if first is not None:
        card["skills"] = {sk.id: first for sk in s.skills}
        card["saves"] = {sv.id: first for sv in s.saves}
    return card


def default_party(rs: Ruleset) -> dict[str, Any]:
    p = rs.file.party
    if p is None:
        return {}
    return {"fields": {f.id: default_value(f) for f in p.fields}, "lists": {lst.id: [] for lst in p.lists}}

