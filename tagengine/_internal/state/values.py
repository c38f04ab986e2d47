"""The state's values: clocks, wound marks and one sheet's live values, immutable all the way down.

Everything a state holds is read-only once built: mappings are `MappingProxyType` over a private copy,
sequences are tuples. A caller can keep what a public function returns, but changing it raises, so no
cache keyed by identity (`memo.py`) can be fooled and no snapshot can change after the fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any, TypeVar

from ..digests import sha256
from ..records import frozen

FORMAT = "tagengine.state/1"
PARTY = "$party"  # the party sheet's key among the live values (PARTY-24)
COUNT_MAX = 999_999_999
"""The largest count a state keeps where the ruleset sets no maximum (overflow, pools, temporary points,
plain tracks with a computed max, row pools): the largest number a tag can spell (docs/decisions.md H-1)."""

EMPTY: Mapping[str, Any] = MappingProxyType({})
V = TypeVar("V")


def empty_map() -> Mapping[str, Any]:
    return EMPTY


def freeze(value: Any) -> Any:
    """A read-only deep copy of JSON-like data: dicts become read-only mappings, lists tuples. Always a
    copy, so nothing a caller keeps can reach what a state holds."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def updated(mapping: Mapping[str, V], key: str, value: V) -> dict[str, V]:
    """A new dict: `mapping` with `key` set to `value`. A state's mappings are read-only proxies over dicts,
    and a proxy's `copy` copies its dict in one step, three times faster than `{**mapping, key: value}`,
    which reads a proxy key by key (the commands do this on every change)."""
    out = mapping.copy() if isinstance(mapping, MappingProxyType) else dict(mapping)
    out[key] = value
    return out


def thaw(value: Any) -> Any:
    """Plain dicts and lists again, ready for JSON."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


@frozen(slots=True)
class Clock:
    """A progress clock (CLOCK-1..27): `filled` of `size` segments."""

    name: str
    size: int
    filled: int = 0

    @property
    def complete(self) -> bool:
        return self.filled >= self.size


@frozen(slots=True)
class WoundMarks:
    """A wound track's marks, most severe first (WOUND-15); `None` is a free box on an indexed track."""

    marks: tuple[str | None, ...] = ()
    overflow: int = 0

    def __post_init__(self) -> None:
        if type(self.marks) is not tuple:
            object.__setattr__(self, "marks", tuple(self.marks))


@frozen(slots=True)
class LiveValues:
    """One character's (or the party's) live values; what is absent is at its start (DEC-26)."""

    pools: Mapping[str, int] = field(default_factory=empty_map)
    temp: Mapping[str, int] = field(default_factory=empty_map)
    tracks: Mapping[str, int] = field(default_factory=empty_map)
    marks: Mapping[str, WoundMarks] = field(default_factory=empty_map)
    states: Mapping[str, str] = field(default_factory=empty_map)
    conditions: frozenset[str] = frozenset()
    text: Mapping[str, str] = field(default_factory=empty_map)
    rows: Mapping[str, tuple[int | None, ...]] = field(default_factory=empty_map)

    def __post_init__(self) -> None:
        """Read-only copies of what was passed in: nothing the caller keeps can reach these values."""
        proxy, setattr_ = MappingProxyType, object.__setattr__
        for name in ("pools", "temp", "tracks", "marks", "states", "text"):
            value = getattr(self, name)
            setattr_(self, name, proxy(dict(value)) if value else EMPTY)
        setattr_(self, "rows", proxy({k: tuple(v) for k, v in self.rows.items()}) if self.rows else EMPTY)
        setattr_(self, "conditions", frozenset(self.conditions))

    def but(self, *, pools: Mapping[str, int] | None = None, temp: Mapping[str, int] | None = None,
            tracks: Mapping[str, int] | None = None, marks: Mapping[str, WoundMarks] | None = None,
            states: Mapping[str, str] | None = None, conditions: frozenset[str] | None = None,
            text: Mapping[str, str] | None = None, rows: Mapping[str, tuple[int | None, ...]] | None = None
            ) -> LiveValues:
        """A copy with some parts replaced. The commands call this for every change, with new dicts they
        built and keep no reference to, so those are wrapped read-only without a copy; the other parts are
        this value's own, already read-only (`__post_init__` copies what a caller passes to the class)."""
        new = object.__new__(LiveValues)
        proxy = MappingProxyType
        # each slot's own setter: what object.__setattr__ ends in, at half its cost
        set_pools, set_temp, set_tracks, set_marks, set_states, set_conditions, set_text, set_rows = _SLOT_SETTERS
        set_pools(new, self.pools if pools is None else proxy(pools))
        set_temp(new, self.temp if temp is None else proxy(temp))
        set_tracks(new, self.tracks if tracks is None else proxy(tracks))
        set_marks(new, self.marks if marks is None else proxy(marks))
        set_states(new, self.states if states is None else proxy(states))
        set_conditions(new, self.conditions if conditions is None else frozenset(conditions))
        set_text(new, self.text if text is None else proxy(text))
        set_rows(new, self.rows if rows is None else proxy({k: tuple(v) for k, v in rows.items()}))
        return new


_SLOT_SETTERS = tuple(getattr(LiveValues, name).__set__ for name in
                      ("pools", "temp", "tracks", "marks", "states", "conditions", "text", "rows"))


NO_LIVE = LiveValues()  # one shared "at start" value, so an unplayed character's snapshot is the same object


SEED_MAX = 200  # characters in a dice seed: one line, far more than any seed needs


def die(seed: str, n: int, sides: int) -> int:
    """Roll number `n` of the dice with `seed`: a face 1..sides, the same on every platform and version.

    SHA-256 of `f"{seed}:{n}"`, its first 8 bytes read as a big-endian number x; x is kept when it lies below
    the largest multiple of `sides` under 2**64 and the face is x % sides + 1 (rejection sampling: every
    face equally likely). A rejected x (odds below sides / 2**64) hashes `f"{seed}:{n}:{k}"` for k = 1, 2...
    """
    if sides < 1:
        raise ValueError(f"a die has at least one side, not {sides}")
    limit = (1 << 64) - (1 << 64) % sides
    k = 0
    while True:
        text = f"{seed}:{n}" if k == 0 else f"{seed}:{n}:{k}"
        x = int.from_bytes(sha256(text.encode("utf-8")).digest()[:8], "big")
        if x < limit:
            return x % sides + 1
        k += 1  # pragma: no cover - about one roll in 3e18


@frozen(slots=True)
class Dice:
    """The engine's dice: a seed and the number of dice rolled so far. Die n is `die(seed, n)`,
    so a state replays its dice exactly: the same state and reply roll the same faces (DEC-5)."""

    seed: str
    rolls: int = 0

    def roll(self, count: int, sides: int) -> tuple[tuple[int, ...], Dice]:
        """The next `count` dice and the dice after them."""
        faces = tuple(die(self.seed, self.rolls + i, sides) for i in range(count))
        return faces, Dice(self.seed, self.rolls + count)


UNSEEDED = Dice("")  # no seed given: a GameState seeds itself from its content (an empty seed is never valid)
