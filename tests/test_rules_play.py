"""Rules checked one at a time on the sample rulesets: the pool form of `damage` next to wound tracks (WOUND-29),
`sheetGuidance` in the prompt (GM-3), who clocks belong to (CLOCK-8) and the party sheet's schema and storage
(PARTY-2, PARTY-3, PARTY-23)."""

from __future__ import annotations

import json

from cmdkit import run, sample_state

from conftest import edit, load_sample, problems, sample_dict
from tagengine._internal.prompt import reminder, system_prompt
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_party
from tagengine._internal.state import GameState

GRAVE, BLADES = load_sample("gravewatch"), load_sample("blades-like")


def test_wound_29_pool_form_of_damage_is_unchanged_beside_wound_tracks():
    s = sample_state("gravewatch")  # Mira: Resolve 1/5 (max 4 + 1 for the dawn watch), Harm tear + knock
    before = s.to_json()["rulesetLive"]["mira"]["marks"]
    a, res = run(GRAVE, s, '[sheet: who="Mira" op="restore" pool="Resolve" amount="3"]'
                           '[sheet: who="Mira" op="damage" pool="Resolve" amount="2"]'
                           '[sheet: who="Mira" op="damage" pool="Resolve" amount="9"]')
    assert res == [("ok", "4/5"), ("ok", "2/5"), ("ok", "0/5")]  # subtracts, floors at 0
    assert a.state.to_json()["rulesetLive"]["mira"]["marks"] == before  # no track was marked


def test_gm_3_sheet_guidance_introduces_the_sheets_in_the_system_prompt():
    for name in ("gravewatch", "ember-roads", "fifth-like", "blades-like"):
        rs = load_sample(name)
        text = system_prompt(rs).text
        assert rs.file.gm.sheetGuidance in text
    s = sample_state("gravewatch")
    assert GRAVE.file.gm.sheetGuidance not in reminder(GRAVE, s)  # the stable prompt, not every turn's reminder


def test_clock_8_clocks_belong_to_the_game_not_to_a_character():
    s = sample_state("blades-like")
    a, res = run(BLADES, s, '[clock: name="Rats in the walls" size="4"]'
                            '[clock: who="Nox" name="Mice" size="4"]')
    assert res == [("ok", "0/4"), ("refused", "unknown-attribute")]  # a clock names no character
    doc = a.state.to_json()
    assert {"name": "Rats in the walls", "size": 4, "filled": 0} in doc["rulesetClocks"]  # one list per game
    assert "Rats in the walls" not in json.dumps(doc["rulesetLive"]) + json.dumps(doc["gameCharacterCards"])


def test_party_2_party_fields_use_the_sheet_field_schema():
    fields = [{"id": "n", "label": "N", "type": "number", "min": 0, "max": 3},
              {"id": "t", "label": "T", "type": "text", "maxLength": 20},
              {"id": "lt", "label": "LT", "type": "longtext"},
              {"id": "b", "label": "B", "type": "boolean"},
              {"id": "e", "label": "E", "type": "enum", "values": ["x", "y"]},
              {"id": "d", "label": "D", "type": "dice"}]
    base = {"sheet": {}, "party": {"label": "Crew", "fields": fields}}
    assert problems(base) == []
    for where in ("sheet", "party"):  # the same refusal on both sheets
        bad = edit(base, lambda d, w=where: d[w].setdefault("fields", []).append(
            {"id": "z", "label": "Z", "type": "date"}))
        index = 0 if where == "sheet" else len(fields)
        assert (f"{where}.fields[{index}].type", "not-allowed") in problems(bad)


def test_party_3_party_pools_use_the_live_pool_schema():
    d = sample_dict("blades-like")
    d["party"]["pools"].append({"id": "favors", "label": "Favors", "max": {"const": 4}, "start": "full",
                                "group": "debts", "allowTemp": True})
    rs = Ruleset.from_dict(d)  # start, group, hideWhen (moorings) and allowTemp are all accepted
    doc = sample_state("blades-like").to_json()
    p = {pl.id: pl for pl in view_party(rs, GameState.loads(rs, json.dumps(doc))).pools}
    assert (p["favors"].cur, p["favors"].max, p["favors"].group) == (4, 4, "debts")  # start full
    assert p["moorings"].hidden is None  # lair is the barge
    doc["gamePartySheet"]["fields"]["lair"] = "tower"
    p = {pl.id: pl for pl in view_party(rs, GameState.loads(rs, json.dumps(doc))).pools}
    assert p["moorings"].hidden  # hideWhen: lair notEquals barge
    bad = edit(d, lambda d: d["party"]["pools"][0].update(start="half"))
    assert ("party.pools[0].start", "not-allowed") in problems(bad)


def test_party_23_permanent_values_stored_once_in_game_party_sheet():
    s = sample_state("blades-like")
    a, res = run(BLADES, s, '[sheet: sheet="party" op="advance" field="heat" by="1"]')
    assert res == [("ok", "3")]
    doc = a.state.to_json()
    assert doc["gamePartySheet"]["fields"]["heat"] == 3  # beside gameCharacterCards, once per game
    assert doc["gameCharacterCards"] == s.to_json()["gameCharacterCards"]
    assert "heat" not in json.dumps(doc["rulesetLive"])


def test_gmref_3_each_guidance_text_keeps_its_1500_character_limit():
    for key in ("checkGuidance", "sheetGuidance", "worldGuidance"):
        at_limit = edit(sample_dict("ember-roads"), lambda d, k=key: d["gm"].update({k: "w" * 1500}))
        assert problems(at_limit) == [], key
        over = edit(sample_dict("ember-roads"), lambda d, k=key: d["gm"].update({k: "w" * 1501}))
        assert (f"gm.{key}", "too-long") in problems(over), key


def test_clock_5_default_max_is_eight_clocks_at_once():
    ember = load_sample("ember-roads")  # "clocks": {}
    s = GameState.new(ember, ["Mira"])
    assert s.clocks == ()
    tags = "".join(f'[clock: name="C{i}" size="4"]' for i in range(1, 10))
    a, res = run(ember, s, tags)
    assert res == [("ok", "0/4")] * 8 + [("refused", "clock-limit")]
    _, res = run(ember, a.state, '[clock: name="C1" clear][clock: name="C9" size="4"]')
    assert res == [("ok", "cleared"), ("ok", "0/4")]  # clearing one makes room
