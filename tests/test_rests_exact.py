"""Rests, exactly (REST-1..8, WOUND-40..43, STATE-16, decisions C-10, DEC-17): what each step does at its edges,
pinned where a mutation pass found it unchecked (issue 29, docs/mutation.md)."""

from __future__ import annotations

import pytest
from cmdkit import sample_state, with_live

from conftest import edit, sample_dict
from tagengine._internal.errors import NotFoundError
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_character
from tagengine._internal.sheet.rests import take_rest
from tagengine._internal.state import WoundMarks


def grave_with(*steps, fn=None):
    """Gravewatch with one more rest, `test`, of these steps (and any other change `fn` makes)."""
    def change(d):
        d["sheet"]["rests"].append({"id": "test", "label": "Test", "steps": list(steps)})
        if fn:
            fn(d)
    return Ruleset.from_dict(edit(sample_dict("gravewatch"), change))


def fifth_with(*steps, fn=None):
    def change(d):
        d["sheet"]["rests"].append({"id": "test", "label": "Test", "steps": list(steps)})
        if fn:
            fn(d)
    return Ruleset.from_dict(edit(sample_dict("fifth-like"), change))


def pools(rs, st, who):
    return {p.id: (p.cur, p.max) for p in view_character(rs, st, who).pools}


def test_rest_3_a_step_never_takes_a_pool_below_0():
    rs = grave_with({"pool": "resolve", "by": {"const": -9}})
    new, touched = take_rest(rs, sample_state("gravewatch"), "Mira", "test")  # Resolve 1/5
    assert pools(rs, new, "Mira")["resolve"] == (0, 5) and [str(t) for t in touched] == ["pool:resolve"]


def test_rest_8_without_min_a_fraction_that_rounds_to_nothing_restores_nothing():
    rs = fifth_with({"pool": "slots_1", "by": {"fractionOfMax": 0.1}})  # a tenth of 4, rounded down: 0
    st = with_live(rs, sample_state("fifth-like"), vess={"pools": {"slots_1": 1}})
    new, _ = take_rest(rs, st, "Vess", "test")
    assert pools(rs, new, "Vess")["slots_1"] == (1, 4)
    rs = fifth_with({"pool": "slots_1", "by": {"fractionOfMax": 0.1, "min": 2}})  # REST-8: at least 2
    assert pools(rs, take_rest(rs, st, "Vess", "test")[0], "Vess")["slots_1"] == (3, 4)


@pytest.mark.parametrize(("by", "cells"), [
    ({"const": -5}, ((0, 1), (0, 2))),  # never below 0
    ({"const": 1}, ((1, 1), (2, 2))),  # from what each row holds, up to its max
    ({"fractionOfMax": 0.5}, ((0, 1), (2, 2))),  # half of each row's own max, rounded down: 0 and 1
    ({"derived": "spell_dc"}, ((1, 1), (2, 2))),  # a value the sheet reads
])
def test_rest_2_a_list_pools_step_moves_each_row_by_itself(by, cells):
    rs = fifth_with({"listPools": "features", "by": by})
    st = with_live(rs, sample_state("fifth-like"), vess={"rows": {"features": [0, 1]}})  # 0/1 and 1/2
    new, _ = take_rest(rs, st, "Vess", "test")
    assert view_character(rs, new, "Vess").row_pools["features"] == cells


def test_rest_2_a_plain_track_step_by_a_fraction_of_its_max_and_never_past_it():
    rs = fifth_with({"track": "exhaustion", "by": {"const": -4}}, {"track": "death_saves", "by": {"const": 9}})
    st = with_live(rs, sample_state("fifth-like"), vess={"tracks": {"exhaustion": 3, "death_saves": 1}})
    new, touched = take_rest(rs, st, "Vess", "test")
    assert new.live_of("Vess").tracks == {"exhaustion": 0, "death_saves": 3}
    assert [str(t) for t in touched] == ["track:exhaustion", "track:death_saves"]


def test_c_10_a_rest_skips_what_the_sheet_hides():
    """Bram keeps the dawn watch: Lantern oil is hidden on his sheet (notEquals night), so the vigil leaves it."""
    rs = Ruleset.from_dict(sample_dict("gravewatch"))
    new, touched = take_rest(rs, with_live(rs, sample_state("gravewatch"), bram={"pools": {"oil": 2}}), "Bram",
                             "vigil")
    assert new.live_of("Bram").pools["oil"] == 2 and "pool:oil" not in [str(t) for t in touched]
    hidden = grave_with({"state": "lantern", "to": "out"}, {"track": "strain", "to": 0}, fn=lambda d: (
        d["sheet"]["live"]["states"][0].update(hideWhen={"field": "watch", "equals": "dawn"})))
    st = with_live(hidden, sample_state("gravewatch"), bram={"states": {"lantern": "shuttered"}})
    new, touched = take_rest(hidden, st, "Bram", "test")  # Bram's watch is dawn: his lantern is hidden
    assert new.live_of("Bram").states == {"lantern": "shuttered"} and [str(t) for t in touched] == ["wound:strain"]
    plain = fifth_with({"track": "exhaustion", "to": "max"}, fn=lambda d: d["sheet"]["live"]["tracks"][0].update(
        hideWhen={"field": "class", "equals": "wizard"}))
    new, touched = take_rest(plain, sample_state("fifth-like"), "Vess", "test")  # Vess is a wizard
    assert touched == [] and new.live_of("Vess").tracks == sample_state("fifth-like").live_of("Vess").tracks


def test_wound_43_a_step_of_by_0_touches_nothing():
    rs = grave_with({"track": "harm", "by": {"const": 0}})
    st = sample_state("gravewatch")
    new, touched = take_rest(rs, st, "Mira", "test")
    assert touched == [] and new.live_of("Mira").marks == st.live_of("Mira").marks


def test_wound_42_a_by_step_with_a_kind_heals_that_kind_and_keeps_overflow():
    rs = grave_with({"track": "harm", "kind": "tear", "by": {"const": -1}})
    st = with_live(rs, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["tear", "knock"],
                                                                            "overflow": 1}}})
    new, _ = take_rest(rs, st, "Bram", "test")
    assert new.live_of("Bram").marks["harm"] == WoundMarks(("knock",), 1)  # not the overflow, not the knock


def test_wound_41_a_rest_keeps_the_overflow_it_does_not_clear():
    rs = grave_with({"track": "harm", "by": {"const": -1}})
    st = with_live(rs, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["tear"] * 4, "overflow": 3}}})
    new, _ = take_rest(rs, st, "Bram", "test")
    assert new.live_of("Bram").marks["harm"] == WoundMarks(("tear",) * 4, 2)


def test_take_rest_names_what_it_cannot_find():
    rs = Ruleset.from_dict(sample_dict("gravewatch"))
    st = sample_state("gravewatch")
    with pytest.raises(NotFoundError) as e:
        take_rest(rs, st, "Nobody", "breath")
    assert (e.value.what, e.value.name, e.value.known) == ("character", "Nobody", ("Mira", "Bram"))
    with pytest.raises(NotFoundError) as e:
        take_rest(rs, st, "mira", "nap")
    assert (e.value.what, e.value.name, e.value.known) == ("rest", "nap", ("breath", "vigil"))
    assert str(e.value) == "unknown rest 'nap'; choose one of breath, vigil"
