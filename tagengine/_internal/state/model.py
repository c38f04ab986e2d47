"""The game state (DEC-26..28, PARTY-23/24, CLOCK-25).

A `GameState` is immutable all the way down: commands return a new one, so the snapshot a reply
started from is still there for a regenerate or a swipe (CLOCK-26, CLOCK-27), and nothing a caller is
handed can be changed into it. Loading never trusts the file (read.py, DEC-27).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import Problem, StateError
from ..files import TooLarge, json_problem, read_file, strip_bom, write_atomic
from ..ruleset import Ruleset
from ..text import normalise
from .defaults import default_card, default_party, name_problems, seed_problem
from .read import read_parts
from .values import NO_LIVE, PARTY, UNSEEDED, Clock, Dice, LiveValues, empty_map, freeze
from .write import derived_seed, state_json, state_text

MAX_STATE_BYTES = 16 * 1024 * 1024  # a state file (F-5): far above any real game's


@dataclass(frozen=True)
class GameState:
    """Cards (permanent values) by character name, the party sheet, live values and clocks."""

    cards: Mapping[str, Mapping[str, Any]] = field(default_factory=empty_map)
    party_sheet: Mapping[str, Any] = field(default_factory=empty_map)
    party_revision: int = 0
    live: Mapping[str, LiveValues] = field(default_factory=empty_map)
    clocks: tuple[Clock, ...] = ()
    warnings: tuple[Problem, ...] = field(default=(), compare=False)
    dice: Dice = UNSEEDED  # UNSEEDED: seeded from the content in __post_init__ (issue 13)

    def __post_init__(self) -> None:
        """Read-only copies of what was passed in (values.py); a state's own parts are kept as they are.
        A state given no dice gets a seed derived from its content, so the same content rolls the same."""
        if type(self.cards) is not MappingProxyType:
            object.__setattr__(self, "cards", freeze(self.cards))
        if type(self.party_sheet) is not MappingProxyType:
            object.__setattr__(self, "party_sheet", freeze(self.party_sheet))
        if type(self.live) is not MappingProxyType:
            object.__setattr__(self, "live", MappingProxyType(dict(self.live)))
        if type(self.clocks) is not tuple:
            object.__setattr__(self, "clocks", tuple(self.clocks))
        if self.dice.seed == "":
            seed = derived_seed(self.cards, self.party_sheet, self.party_revision, self.live, self.clocks)
            object.__setattr__(self, "dice", Dice(seed, 0))

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def new(cls, rs: Ruleset, characters: Iterable[str], seed: str | None = None) -> GameState:
        """Characters at their start: default cards, pools at `start`, tracks unmarked, no clocks.
        `characters` is a collection of names: one string would be read letter by letter (H-4). `seed`
        seeds the dice (a seed derived from the content when None). Raises StateError naming each bad
        character name, or a bad seed."""
        if isinstance(characters, str | bytes):
            raise StateError([Problem("characters", "wrong-type", f"a list of names, not the single name "
                                      f"{characters!r}: write [{characters!r}]", characters)], "new state")
        names = list(characters)
        problems = name_problems(names, "characters")
        if seed is not None and seed_problem(seed) is not None:
            problems.append(Problem("seed", "bad-seed", seed_problem(seed) or "", seed))
        if problems:
            raise StateError(problems, "new state")
        return cls(cards={n: default_card(rs) for n in names}, party_sheet=default_party(rs),
                   dice=UNSEEDED if seed is None else Dice(seed, 0))

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

    def live_of(self, name: str) -> LiveValues:
        return self.live.get(normalise(name) if name != PARTY else PARTY, NO_LIVE)

    def with_live(self, name: str, live: LiveValues) -> GameState:
        key = normalise(name) if name != PARTY else PARTY
        return GameState(self.cards, self.party_sheet, self.party_revision, {**self.live, key: live}, self.clocks,
                         self.warnings, self.dice)

    def with_clocks(self, clocks: tuple[Clock, ...]) -> GameState:
        return GameState(self.cards, self.party_sheet, self.party_revision, self.live, clocks, self.warnings,
                         self.dice)

    def with_party_sheet(self, sheet: Mapping[str, Any], revision: int) -> GameState:
        return GameState(self.cards, sheet, revision, self.live, self.clocks, self.warnings, self.dice)

    def with_dice(self, dice: Dice) -> GameState:
        return GameState(self.cards, self.party_sheet, self.party_revision, self.live, self.clocks, self.warnings,
                         dice)

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The state document (DEC-26) as plain dicts and lists."""
        return state_json(self.cards, self.party_sheet, self.party_revision, self.live, self.clocks, self.dice)

    def dumps(self) -> str:
        return state_text(self.to_json())

    def save(self, path: str | Path) -> None:
        """Write the state file whole or not at all (F-1); a symbolic link is refused (F-2). Raises OSError
        naming the file when it cannot be written."""
        write_atomic(path, self.dumps().encode("utf-8"))

    @classmethod
    def loads(cls, rs: Ruleset, text: str | bytes, source: str = "<state>") -> GameState:
        """A state from its JSON text (a leading BOM dropped, F-6); StateError when it is not a state,
        warnings for stale values (DEC-27)."""
        if isinstance(text, bytes):
            text = strip_bom(text)
        try:
            raw = json.loads(text.removeprefix("\ufeff") if isinstance(text, str) else text)
        except (RecursionError, ValueError) as e:  # JSONDecodeError, UnicodeDecodeError and huge integers too
            raise StateError([Problem("$", "not-json", json_problem(e), None)], source) from None
        return from_json(rs, raw, source)

    @classmethod
    def load(cls, rs: Ruleset, path: str | Path) -> GameState:
        """A state from a file of at most MAX_STATE_BYTES (F-5); StateError when it cannot be read or is
        not a state."""
        p = str(path)
        try:
            data = read_file(p, MAX_STATE_BYTES)
        except OSError as e:
            raise StateError([Problem("$", "unreadable", f"cannot read {p}: {e.strerror}", p)], p) from None
        except TooLarge as e:
            raise StateError([Problem("$", "too-large", f"a state file is at most {e.limit} bytes", None)],
                             p) from None
        return cls.loads(rs, data, p)


def from_json(rs: Ruleset, raw: Any, source: str = "<state>") -> GameState:
    """A GameState from parsed JSON; StateError when it is not a state at all (DEC-27)."""
    parts = read_parts(rs, raw, source)
    return GameState(parts.cards, parts.party_sheet, parts.party_revision, parts.live, parts.clocks, parts.warnings,
                     parts.dice)  # UNSEEDED for an older file: seeded from the content
