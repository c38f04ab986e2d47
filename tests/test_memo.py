"""memo.IdentityCache: a value per tuple of owners, found by their identity (issue 30 looks one or two owners
up without iterators; the answers are the same)."""

from __future__ import annotations

import pytest

from tagengine._internal.memo import IdentityCache


class Owner:
    def __eq__(self, other: object) -> bool:  # equal to every other: only identity may tell them apart
        return isinstance(other, Owner)

    __hash__ = object.__hash__


@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_a_value_is_built_once_per_owners_and_never_shared_between_equal_ones(count):
    cache: IdentityCache[int] = IdentityCache(8)
    built: list[int] = []

    def build() -> int:
        built.append(len(built))
        return built[-1]

    owners = tuple(Owner() for _ in range(count))
    assert cache.get(owners, build) == 0 and cache.get(owners, build) == 0 and len(built) == 1
    others = tuple(Owner() for _ in range(count))
    if count:
        assert others == owners and cache.get(others, build) == 1  # equal, not the same: another entry
        mixed = (*owners[:-1], others[-1])
        assert cache.get(mixed, build) == (1 if count == 1 else 2)


def test_the_least_recently_used_entry_goes_first():
    cache: IdentityCache[str] = IdentityCache(2)
    a, b, c = Owner(), Owner(), Owner()
    cache.get((a,), lambda: "a")
    cache.get((b,), lambda: "b")
    assert cache.get((a,), lambda: "a again") == "a"  # used: b is now the oldest
    cache.get((c,), lambda: "c")
    assert cache.get((a,), lambda: "a rebuilt") == "a"
    assert cache.get((b,), lambda: "b rebuilt") == "b rebuilt"


@pytest.mark.parametrize("count", [1, 2, 3])
def test_find_gives_what_is_kept_for_the_very_owners_and_keeps_nothing(count):
    """`find` is a look that builds nothing: equal owners that are other objects find nothing, and a look that
    finds nothing leaves nothing behind (a later `get` still builds)."""
    cache: IdentityCache[str] = IdentityCache(8)
    owners = tuple(Owner() for _ in range(count))
    assert cache.find(owners) is None and len(cache) == 0
    assert cache.get(owners, lambda: "made") == "made"
    assert cache.find(owners) == "made" and len(cache) == 1
    assert cache.find(tuple(Owner() for _ in range(count))) is None and len(cache) == 1
