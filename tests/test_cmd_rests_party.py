"""Rests (REST-1..8, WOUND-40..43, DEC-17) and the party sheet (PARTY-16..20, 36, 37, DEC-13..15, DEC-28)."""

from __future__ import annotations

import pytest
from cmdkit import run, sample_state, with_live

from conftest import edit, load_sample, sample_dict
from tagengine._internal.commands.party_save import PartyConflict, save_party
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_character
from tagengine._internal.sheet.rests import take_rest
from tagengine._internal.state import GameState, WoundMarks

GRAVE, FIFTH, BLADES = (load_sample(n) for n in ("gravewatch", "fifth-like", "blades-like"))


def pool(rs, state, who, pid):
    p = next(p for p in view_character(rs, state, who).pools if p.id == pid)
    return p.cur, p.max


def test_wound_42_catch_your_breath_heals_knocks_leaves_tears():
    s = sample_state("gravewatch")  # Mira: harm [tear, knock], resolve 1/5
    a, res = run(GRAVE, s, '[sheet: who="Mira" op="rest" rest="Catch your breath"]')
    assert res == [("ok", "Harm 1/7 Scuffed; Resolve 2/5")]
    assert a.state.live_of("Mira").marks["harm"].marks == ("tear",)


def test_rest_1_3_vigil_sets_and_clears():
    s = with_live(GRAVE, sample_state("gravewatch"), mira={"pools": {"resolve": 0, "oil": 1}, "marks": {
        "harm": {"marks": ["tear", "tear", "knock"], "overflow": 1}, "strain": {"marks": ["strain", "strain"]}},
        "states": {"lantern": "out"}})
    new, touched = take_rest(GRAVE, s, "Mira", "vigil")
    live = new.live_of("Mira")
    assert pool(GRAVE, new, "Mira", "resolve") == (5, 5) and pool(GRAVE, new, "Mira", "oil") == (6, 6)
    assert live.marks["harm"] == WoundMarks(("tear", "tear"), 0)  # WOUND-41: by -2 clears overflow first, then one
    assert live.marks["strain"].marks == () and live.states == {}  # to 0 marks; STATE-16: to default
    assert [str(t) for t in touched] == ["pool:resolve", "pool:oil", "wound:harm", "wound:strain", "state:lantern"]


def test_wound_40_to_reduces_to_that_many_marks_overflow_included():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["rests"].append(
        {"id": "mend", "label": "Mend", "steps": [{"track": "harm", "to": 2}]}))
    rs = Ruleset.from_dict(d)
    s = with_live(rs, GameState.loads(rs, sample_state("gravewatch").dumps()),
                  bram={"marks": {"harm": {"marks": ["tear", "tear", "tear", "knock"], "overflow": 2}}})
    new, _ = take_rest(rs, s, "Bram", "mend")
    assert new.live_of("Bram").marks["harm"] == WoundMarks(("tear", "tear"), 0)


def test_wound_43_rest_never_adds_marks():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["rests"].append(
        {"id": "odd", "label": "Odd", "steps": [{"track": "harm", "by": {"const": 2}},
                                                {"track": "harm", "to": "max"}]}))
    rs = Ruleset.from_dict(d)
    s = GameState.loads(rs, sample_state("gravewatch").dumps())
    new, touched = take_rest(rs, s, "Mira", "odd")
    assert new.live_of("Mira").marks == s.live_of("Mira").marks and touched == []


def test_rest_7_8_fifth_long_rest_shares_half_the_hit_dice():
    s = sample_state("fifth-like")  # hit dice: d8 1/3, d10 0/2 -> total max 5, half rounded down = 2
    a, _res = run(FIFTH, s, '[sheet: who="Vess" op="rest" rest="Long rest"]')
    assert pool(FIFTH, a.state, "Vess", "hd_d8") == (3, 3) and pool(FIFTH, a.state, "Vess", "hd_d10") == (0, 2)
    assert pool(FIFTH, a.state, "Vess", "hp") == (23, 23) and pool(FIFTH, a.state, "Vess", "slots_1") == (4, 4)
    sheet = view_character(FIFTH, a.state, "Vess")
    assert sheet.row_pools["features"] == ((1, 1), (2, 2))
    assert [t.value for t in sheet.tracks] == [0, 0]


def test_rest_8_min_is_the_least_amount():
    s = with_live(FIFTH, sample_state("fifth-like"), vess={"pools": {"hd_d8": 0, "hd_d10": 0}})
    doc = s.to_json()
    doc["gameCharacterCards"]["Vess"]["fields"].update(levels_d8=1, levels_d10=0)  # max 1: half rounds to 0
    s = GameState.loads(FIFTH, __import__("json").dumps(doc))
    new, _ = take_rest(FIFTH, s, "Vess", "long")
    assert pool(FIFTH, new, "Vess", "hd_d8") == (1, 1)


def test_rest_6_pool_group_without_shared_uses_each_pools_own_fraction():
    d = edit(sample_dict("fifth-like"), lambda d: d["sheet"]["rests"][1]["steps"][1].pop("shared"))
    rs = Ruleset.from_dict(d)
    s = GameState.loads(rs, sample_state("fifth-like").dumps())
    s = with_live(rs, s, vess={"pools": {"hd_d8": 0, "hd_d10": 0}})
    new, _ = take_rest(rs, s, "Vess", "long")
    assert pool(rs, new, "Vess", "hd_d8") == (1, 3) and pool(rs, new, "Vess", "hd_d10") == (1, 2)


def test_dec_17_rounding_up_and_nearest():
    from tagengine._internal.ruleset.sheet import FractionOfMaxDef
    from tagengine._internal.sheet.rests import fraction

    assert fraction(FractionOfMaxDef(fractionOfMax=0.5), 5) == 2
    assert fraction(FractionOfMaxDef(fractionOfMax=0.5, round="up"), 5) == 3
    assert fraction(FractionOfMaxDef(fractionOfMax=0.5, round="nearest"), 5) == 3
    assert fraction(FractionOfMaxDef(fractionOfMax=0.1, min=1), 5) == 1


def test_unknown_rest():
    _, res = run(GRAVE, sample_state("gravewatch"), '[sheet: who="Mira" op="rest" rest="Nap"]')
    assert res == [("refused", "unknown-rest")]


def test_party_16_18_20_spend_restore_advance():
    s = sample_state("blades-like")  # coin 3/8, heat 2, revision 3
    a, res = run(BLADES, s, '[sheet: sheet="party" op="restore" pool="coin" amount="3"]'
                            '[sheet: sheet="party" op="spend" pool="coin" amount="2"]'
                            '[sheet: sheet="party" op="advance" field="heat" by="2"]'
                            '[sheet: sheet="party" op="advance" field="upgrades" to="Hidden vault, Lookouts"]')
    assert res == [("ok", "6/8"), ("ok", "4/8"), ("ok", "4"), ("ok", "Hidden vault, Lookouts")]
    assert a.state.party_revision == 5  # DEC-15: every applied advance
    assert a.state.live_of("$party").pools == {"coin": 4}


def test_party_19_refusals():
    s = sample_state("blades-like")
    a, res = run(BLADES, s, '[sheet: sheet="crew" op="spend" pool="coin"]'
                            '[sheet: sheet="party" op="damage" pool="coin"]'
                            '[sheet: sheet="party" op="spend" pool="coin" amount="9"]'
                            '[sheet: sheet="party" op="advance" field="lair" to="tower"]'
                            '[sheet: sheet="party" op="advance" field="heat" by="20"]'
                            '[sheet: sheet="party" op="advance" field="Crew size" by="1"]'
                            '[sheet: sheet="party" op="advance" field="tier" to="x"]'
                            '[sheet: sheet="party" who="Cutter" op="spend" pool="coin"]'
                            '[sheet: who="Cutter" op="advance" field="heat" by="1"]'
                            '[sheet: sheet="party" op="advance" field="rep" by="1"]')
    assert res == [("refused", "unknown-sheet"), ("refused", "unsupported-op"), ("refused", "insufficient"),
                   ("refused", "not-advanceable"), ("refused", "invalid-value"), ("refused", "not-advanceable"),
                   ("refused", "invalid-value"), ("refused", "unknown-attribute"), ("refused", "unsupported-op"),
                   ("refused", "unknown-field")]
    assert a.state.party_revision == 3


def test_party_26_no_party_sheet():
    _, res = run(GRAVE, sample_state("gravewatch"), '[sheet: sheet="party" op="spend" pool="coin"]')
    assert res == [("refused", "unknown-sheet")]


def test_party_36_37_save_with_revisions():
    s = sample_state("blades-like")
    opened = s.party_revision
    draft = {"fields": {**s.party_sheet["fields"], "tier": 2}, "lists": s.party_sheet["lists"]}
    s2 = save_party(BLADES, s, draft, opened)
    assert s2.party_revision == opened + 1 and s2.party_sheet["fields"]["tier"] == 2
    with pytest.raises(PartyConflict) as e:  # a second draft opened at the old revision
        save_party(BLADES, s2, {"fields": {"heat": 0}}, opened)
    assert e.value.revision == opened + 1 and e.value.sheet["fields"]["tier"] == 2
    s3 = save_party(BLADES, s2, {"fields": {"heat": 0}}, e.value.revision)  # the deliberate second save
    assert s3.party_revision == opened + 2 and s3.party_sheet["fields"]["heat"] == 0
    a, _ = run(BLADES, s, '[sheet: sheet="party" op="advance" field="heat" by="1"]')  # story changes count too
    with pytest.raises(PartyConflict):
        save_party(BLADES, a.state, draft, opened)
