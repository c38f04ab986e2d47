"""The state file (DEC-26..28): new, save/load round trip, warnings for what the ruleset no longer allows."""

from __future__ import annotations

import json

import pytest

from conftest import load_sample
from tagengine._internal.errors import StateError
from tagengine._internal.state import FORMAT, PARTY, Clock, GameState, LiveValues, WoundMarks


@pytest.fixture
def grave():
    return load_sample("gravewatch")


def test_dec_26_new_state_is_at_start(grave):
    s = GameState.new(grave, ["Mira", "Bram"])
    doc = s.to_json()
    assert doc["format"] == FORMAT
    assert list(doc["gameCharacterCards"]) == ["Mira", "Bram"]
    assert doc["rulesetLive"] == {} and doc["rulesetClocks"] == []  # pools at start, no clocks
    card = doc["gameCharacterCards"]["Mira"]
    assert card["abilities"] == {"sinew": 2, "nerve": 2, "lore": 2}
    assert card["fields"]["watch"] == "dusk" and card["skills"]["soothe"] == "none"


def test_round_trip(grave):
    s = GameState.new(grave, ["Mira"])
    s = s.with_live("Mira", LiveValues(pools={"resolve": 2}, marks={"harm": WoundMarks(("tear", "knock"), 1)},
                                 states={"lantern": "out"}))
    s = s.with_clocks((Clock("Alarm raised", 6, 2),))
    again = GameState.loads(grave, s.dumps())
    assert again == s and again.warnings == ()


def test_party_24_party_name_is_reserved(grave):
    with pytest.raises(StateError) as e:
        GameState.new(grave, ["$Party"])
    assert e.value.problems[0].code == "reserved-name"


def test_dec_8_names_distinct_after_normalising(grave):
    with pytest.raises(StateError) as e:
        GameState.new(grave, ["Old  Harrow", "old harrow"])
    assert e.value.problems[0].code == "duplicate-character"


def doc_with(grave, **live):
    doc = GameState.new(grave, ["Mira"]).to_json()
    doc["rulesetLive"] = live
    return doc


def test_state_9_stored_value_no_longer_offered_reads_default(grave):
    doc = doc_with(grave, mira={"states": {"lantern": "dim"}})
    s = GameState.loads(grave, json.dumps(doc))
    assert s.live_of("Mira").states == {}
    assert [(w.path, w.code) for w in s.warnings] == [("rulesetLive.mira.states.lantern", "unknown-value")]


def test_dec_27_loading_never_trusts_the_file(grave):
    doc = doc_with(grave, mira={"pools": {"resolve": -3, "hope": 1}, "marks": {"harm": {"marks": ["burn", "knock"],
                                                                                        "overflow": -1}}},
                   zed={"pools": {}})
    doc["gameCharacterCards"]["Mira"]["abilities"]["nerve"] = 9
    doc["gameCharacterCards"]["Mira"]["fields"]["watch"] = "noon"
    doc["rulesetClocks"] = [{"name": "A", "size": 6, "filled": 9}, {"name": "a", "size": 4}, {"name": "B", "size": 1}]
    s = GameState.loads(grave, json.dumps(doc))
    codes = {(w.path, w.code) for w in s.warnings}
    assert ("rulesetLive.mira.pools.resolve", "bad-value") in codes
    assert ("rulesetLive.mira.pools.hope", "unknown-id") in codes
    assert ("rulesetLive.mira.marks.harm.marks[0]", "unknown-kind") in codes
    assert ("rulesetLive.zed", "unknown-character") in codes
    assert ("gameCharacterCards.Mira.abilities.nerve", "out-of-range") in codes
    assert ("gameCharacterCards.Mira.fields.watch", "bad-value") in codes
    assert ("rulesetClocks[0].filled", "out-of-range") in codes
    assert ("rulesetClocks[1].name", "clock-exists") in codes
    assert ("rulesetClocks[2].size", "bad-size") in codes
    assert s.cards["Mira"]["abilities"]["nerve"] == 5
    assert s.cards["Mira"]["fields"]["watch"] == "dusk"
    assert s.live_of("Mira").marks["harm"] == WoundMarks(("knock",), 0)
    assert s.clocks == (Clock("A", 6, 6),)


def test_marks_are_sorted_most_severe_first_on_load(grave):
    doc = doc_with(grave, mira={"marks": {"harm": {"marks": ["knock", "tear", "knock"]}}})
    assert GameState.loads(grave, json.dumps(doc)).live_of("mira").marks["harm"].marks == ("tear", "knock", "knock")


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"format": "other"}', "{", '{"format": "tagengine.state/1", '
                                  '"gameCharacterCards": []}'])
def test_not_a_state_is_an_error_naming_the_path(grave, text):
    with pytest.raises(StateError) as e:
        GameState.loads(grave, text)
    assert e.value.problems and all(p.path for p in e.value.problems)


def test_party_live_uses_reserved_entry():
    rs = load_sample("blades-like")
    s = GameState.new(rs, ["Cutter"]).with_live(PARTY, LiveValues(pools={"coin": 3}))
    doc = s.to_json()
    assert doc["rulesetLive"] == {"$party": {"pools": {"coin": 3}}}
    assert GameState.loads(rs, json.dumps(doc)).live_of(PARTY).pools == {"coin": 3}
    assert doc["gamePartySheet"]["fields"]["vault"] == 8 and doc["gamePartySheetRevision"] == 0
