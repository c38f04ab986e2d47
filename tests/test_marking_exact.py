"""The mark algebra (sheet/marking.py), exactly: the cases where a mutation pass found the order of kinds, the
reading of stored marks or a rest's reduction unchecked (issue 29, docs/mutation.md). WOUND-15..26, 40..53."""

from __future__ import annotations

from tagengine._internal.sheet import marking
from tagengine._internal.sheet.marking import TrackShape

# Severities that do not follow the ids' alphabetical order: a scale sorted by name would be wrong.
KINDS = {"lethal": 1, "bashing": 0, "aggravated": 2}


def shape(length=4, indexed=False, refuse=False):
    return TrackShape(length, KINDS, indexed, refuse)


def test_wound_20_the_scale_of_kinds_is_by_severity_not_by_name():
    assert shape().scale == ("bashing", "lethal", "aggravated")
    full = ("aggravated", "lethal", "bashing", "bashing")
    assert marking.mark(shape(), full, 0, "bashing", 1) == (("aggravated", "lethal", "lethal", "bashing"), 0)
    assert marking.mark(shape(), ("aggravated", "lethal", "lethal", "lethal"), 0, "bashing", 1) == (
        ("aggravated", "aggravated", "lethal", "lethal"), 0)


def test_wound_15_marks_read_from_a_state_are_kept_most_severe_first():
    assert marking.fit_marks(shape(), ["bashing", "aggravated", "lethal"], 0) == (
        ("aggravated", "lethal", "bashing"), 0)
    assert marking.fit_marks(shape(indexed=True), ["bashing", None, "aggravated"], 0) == (
        ("bashing", None, "aggravated"), 0)  # WOUND-49: an indexed track's marks stay where they are


def test_wound_50_an_indexed_heal_clears_the_lightest_mark_wherever_it_is():
    t = shape(indexed=True, refuse=True)
    assert marking.heal(t, ("bashing", "lethal"), 0, 1) == ((None, "lethal"), 0)  # box 1, not the last box
    assert marking.heal(t, ("bashing", "lethal", "bashing"), 0, 1) == (("bashing", "lethal"), 0)  # the highest


def test_wound_26_a_heal_clears_the_lightest_first_whatever_the_names():
    assert marking.heal(shape(), ("aggravated", "lethal", "bashing"), 0, 2) == (("aggravated",), 0)


def test_wound_40_42_a_rest_reduces_to_a_count_of_marks_of_its_kind():
    t = shape()
    assert marking.reduce_to(t, ("aggravated", "bashing", "bashing"), 0, 1, "bashing") == (
        ("aggravated", "bashing"), 0)  # two bashing down to one; the aggravated is not counted
    assert marking.reduce_to(t, ("aggravated", "bashing", "bashing"), 1, 1, "bashing") == (
        ("aggravated", "bashing"), 1)  # with a kind, overflow is neither counted nor cleared
    assert marking.reduce_to(t, ("aggravated", "bashing"), 0, 0, "aggravated") == (("bashing",), 0)
    assert marking.reduce_to(t, ("aggravated",), 0, 1) == (("aggravated",), 0)  # at the count already: nothing
    assert marking.reduce_to(t, ("aggravated", "lethal"), 2, 1) == (("aggravated",), 0)  # overflow included
    indexed = shape(indexed=True, refuse=True)
    assert marking.reduce_to(indexed, (None, "bashing", None, "lethal"), 0, 1) == ((None, None, None, "lethal"), 0)


def test_wound_36_a_hit_on_a_refusing_track_places_what_fits_and_overflows_the_rest():
    t = shape(indexed=True, refuse=True)
    assert marking.mark_hit(t, ("bashing", None, "lethal"), 0, "lethal", 2, box=2) == (
        ("bashing", "lethal", "lethal", "lethal"), 0)
    assert marking.mark_hit(t, ("bashing", None, "lethal"), 0, "lethal", 3, box=2) == (
        ("bashing", "lethal", "lethal", "lethal"), 1)
    assert marking.mark_hit(t, (), 0, "lethal", 1, box=5) == ((), 1)  # a box past the end takes nothing
    levels = shape(refuse=True)
    assert marking.mark_hit(levels, ("lethal",), 0, "aggravated", 5) == (("aggravated",) * 3 + ("lethal",), 2)
    assert marking.mark_hit(shape(), ("aggravated",) * 4, 0, "bashing", 2) == (("aggravated",) * 4, 2)  # escalate
