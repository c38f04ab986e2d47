"""Lookups by id over one sheet (character or party), built once per ruleset."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import Generic, Protocol, TypeVar

from ..records import frozen
from ..text import normalise
from .live import KindDef, LiveStateDef, PoolDef, TrackDef
from .sheet import AbilityDef, DerivedDef, FieldDef, ListDef, SkillDef


class HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=HasId)
N = TypeVar("N")


def names_of(items: Iterable[N]) -> dict[str, list[N]]:
    """Items by normalised id and by normalised label (DEC-8), each name's items in order, once each."""
    table: dict[str, list[N]] = {}
    for item in items:
        for x in (getattr(item, "id", ""), getattr(item, "label", "")):
            if x:
                bucket = table.setdefault(normalise(x), [])
                if item not in bucket:
                    bucket.append(item)
    return table


@frozen
class ById(Generic[T]):
    """An ordered collection with its position and first item per id, and its items by name (DEC-8)."""

    items: tuple[T, ...]
    by_id: dict[str, T] = field(default_factory=dict)
    pos: dict[str, int] = field(default_factory=dict)
    by_name: dict[str, list[T]] = field(default_factory=dict)  # `names_of` the items: what a command's name finds

    @classmethod
    def of(cls, items: list[T] | tuple[T, ...]) -> ById[T]:
        by_id: dict[str, T] = {}
        pos: dict[str, int] = {}
        for i, item in enumerate(items):
            key = item.id
            if key not in by_id:
                by_id[key] = item
                pos[key] = i
        return cls(tuple(items), by_id, pos, names_of(items))

    def get(self, key: str) -> T | None:
        return self.by_id.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.by_id

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@frozen
class SheetIndex:
    """Everything a value reference or a command can name on one sheet."""

    fields: ById[FieldDef]
    derived: ById[DerivedDef]
    lists: ById[ListDef]
    abilities: ById[AbilityDef]
    skills: ById[SkillDef]
    saves: ById[SkillDef]
    pools: ById[PoolDef]
    tracks: ById[TrackDef]
    states: ById[LiveStateDef]
    party: bool = False
    kinds: dict[str, ById[KindDef]] = field(init=False, repr=False, compare=False)  # each wound track's, by its id

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", {t.id: ById.of(t.kinds or []) for t in self.tracks})
