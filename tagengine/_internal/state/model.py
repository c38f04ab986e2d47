"""The game state (DEC-26..28, PARTY-23/24, CLOCK-25).

A `GameState` is immutable all the way down: commands return a new one, so the snapshot a reply
started from is still there for a regenerate or a swipe (CLOCK-26, CLOCK-27), and nothing a caller is
handed can be changed into it. Loading never trusts the file (read.py, DEC-27).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import Problem, StateError
from ..files import TooLarge, json_problem, read_file, strip_bom, write_atomic
from ..memo import IdentityCache
from ..records import frozen
from ..ruleset import Ruleset
from ..text import normalise
from .defaults import default_card, default_party, name_problems, seed_problem
from .read import read_parts
from .values import EMPTY, NO_LIVE, PARTY, UNSEEDED, Clock, Dice, LiveValues, empty_map, freeze, updated
from .write import derived_seed, state_json, state_text

if TYPE_CHECKING:
    from pathlib import Path

MAX_STATE_BYTES = 16 * 1024 * 1024  # a state file (F-5): far above any real game's


@frozen
class GameState:
    """Cards (permanent values) by character name, the party sheet, live values and clocks."""

    cards: Mapping[str, Mapping[str, Any]] = field(default_factory=empty_map)
    party_sheet: Mapping[str, Any] = field(default_factory=empty_map)
    party_revision: int = 0
    live: Mapping[str, LiveValues] = field(default_factory=empty_map)
    clocks: tuple[Clock, ...] = ()
    warnings: tuple[Problem, ...] = field(default=(), compare=False)
    dice: Dice = UNSEEDED  # UNSEEDED: seeded from the content in __post_init__

    def __post_init__(self) -> None:
        """Read-only copies of what was passed in (values.py): nothing a caller keeps reaches the state.
        Raises StateError when a live value is not a LiveValues or a clock not a Clock."""
        setattr_ = object.__setattr__
        setattr_(self, "cards", freeze(self.cards))
        setattr_(self, "party_sheet", freeze(self.party_sheet))
        setattr_(self, "live", MappingProxyType(dict(self.live)))
        setattr_(self, "clocks", tuple(self.clocks))
        wrong = [Problem(f"live.{k}", "wrong-type", "live values are a LiveValues", type(v).__name__)
                 for k, v in self.live.items() if not isinstance(v, LiveValues)]
        wrong += [Problem(f"clocks[{i}]", "wrong-type", "a clock is a Clock", type(c).__name__)
                  for i, c in enumerate(self.clocks) if not isinstance(c, Clock)]
        if wrong:
            raise StateError(wrong, "state")
        if self.dice.seed == "":  # no dice given: a seed derived from the content, so it rolls the same
            setattr_(self, "dice", Dice(derived_seed(self.cards, self.party_sheet, self.party_revision, self.live,
                                                     self.clocks), 0))

    def _derived(self, party_sheet: Mapping[str, Any], party_revision: int, live: Mapping[str, LiveValues],
                 clocks: tuple[Clock, ...], dice: Dice | None = None) -> GameState:
        """A state made from this one's own read-only parts and new ones the engine built: no copy."""
        return _assembled(self.cards, party_sheet, party_revision, live, clocks, self.warnings,
                          self.dice if dice is None else dice)

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
        card, party, seeds = _blank(rs)
        cards = MappingProxyType(dict.fromkeys(names, card))  # read-only all the way down, so one card serves all
        if seed is None:  # derived from the content, as __post_init__ derives it, and the same for the same names
            key = tuple(names)
            seed = seeds.get(key)
            if seed is None:
                seed = derived_seed(cards, party, 0, EMPTY, ())
                if len(seeds) < _SEEDS_KEPT:
                    seeds[key] = seed
        return _assembled(cards, party, 0, EMPTY, (), (), Dice(seed, 0))

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
        if not isinstance(live, LiveValues):
            raise StateError([Problem(f"live.{name}", "wrong-type", "live values are a LiveValues",
                                      type(live).__name__)], "state")
        return _assembled(self.cards, self.party_sheet, self.party_revision,
                          MappingProxyType(updated(self.live, key, live)), self.clocks, self.warnings, self.dice)

    def with_clocks(self, clocks: tuple[Clock, ...]) -> GameState:
        return self._derived(self.party_sheet, self.party_revision, self.live, tuple(clocks))

    def with_card(self, name: str, card: Mapping[str, Any]) -> GameState:
        """The state with the card of the character `name` (a card name of this state) replaced by a read-only
        copy of `card`: a player's edit of a sheet (docs/editor.md)."""
        new = self._derived(self.party_sheet, self.party_revision, self.live, self.clocks)
        object.__setattr__(new, "cards", MappingProxyType({**self.cards, name: freeze(card)}))
        return new

    def with_party_sheet(self, sheet: Mapping[str, Any], revision: int) -> GameState:
        return self._derived(freeze(sheet), revision, self.live, self.clocks)

    def with_dice(self, dice: Dice) -> GameState:
        return self._derived(self.party_sheet, self.party_revision, self.live, self.clocks, dice)

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


_BLANKS: IdentityCache[tuple[Mapping[str, Any], Mapping[str, Any], dict[tuple[str, ...], str]]] = IdentityCache(64)
_SEEDS_KEPT = 1024  # derived seeds kept per ruleset, by the tuple of names


def _blank(rs: Ruleset) -> tuple[Mapping[str, Any], Mapping[str, Any], dict[tuple[str, ...], str]]:
    """A ruleset's blank card and party sheet, frozen once, and the seeds of new states by their names:
    `GameState.new` runs once per chat of a replay."""
    return _BLANKS.get((rs,), lambda: (freeze(default_card(rs)), freeze(default_party(rs)), {}))


def _assembled(cards: Mapping[str, Mapping[str, Any]], party_sheet: Mapping[str, Any], party_revision: int,
               live: Mapping[str, LiveValues], clocks: tuple[Clock, ...], warnings: tuple[Problem, ...],
               dice: Dice) -> GameState:
    """A state from parts that are read-only already (the engine's own): no copy, no check."""
    new = object.__new__(GameState)
    fields = new.__dict__  # what object.__setattr__ would write, field by field, in one go
    fields["cards"] = cards
    fields["party_sheet"] = party_sheet
    fields["party_revision"] = party_revision
    fields["live"] = live
    fields["clocks"] = clocks
    fields["warnings"] = warnings
    fields["dice"] = dice
    return new


def from_json(rs: Ruleset, raw: Any, source: str = "<state>") -> GameState:
    """A GameState from parsed JSON; StateError when it is not a state at all (DEC-27)."""
    parts = read_parts(rs, raw, source)
    return GameState(parts.cards, parts.party_sheet, parts.party_revision, parts.live, parts.clocks, parts.warnings,
                     parts.dice)  # UNSEEDED for an older file: seeded from the content
