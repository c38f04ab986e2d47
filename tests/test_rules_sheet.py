"""Sheet structure (SHEET), untrained placement (UNTR-2), track shapes (TRACK-4, WOUND-1), the `liveState` key
(ENUM-8) and `adjust` values (ADJ-2), one rule per test, on a small dice-sum ruleset written for these tests.

Numbers are worked out by hand: under dice-sum with the default `abilityModifier: "score"` (decisions T-3) a
check's number is the ability score + the training bonus + the untrained `by`, then capped (decisions E-2).
"""

from __future__ import annotations

import json

import pytest

from conftest import edit, problems
from tagengine._internal.errors import RulesetError
from tagengine._internal.prompt.template_data import character_block
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_card
from tagengine._internal.state import GameState, LiveValues

MINI = {"sheet": {
    "abilities": [{"id": "brawn", "label": "Brawn"}, {"id": "wits", "label": "Wits"}],
    "training": [{"id": "no", "label": "Untrained", "bonus": 0}, {"id": "yes", "label": "Trained", "bonus": 2}],
    "sections": [{"id": "labour", "label": "Labour", "untrained": {"by": -1}}],
    "skills": [{"id": "dig", "label": "Dig", "ability": "brawn", "section": "labour"},
               {"id": "climb", "label": "Climb", "ability": "brawn", "untrained": {"by": -2}},
               {"id": "lift", "label": "Lift", "ability": "brawn", "cap": {"const": 3}},
               {"id": "read", "label": "Read", "ability": "wits"}],
    "saves": [{"id": "nerve", "label": "Nerve", "ability": "wits", "untrained": {"by": -3}, "cap": {"field": "limit"}}],
    "fields": [{"id": "limit", "label": "Limit", "type": "number", "min": 0, "max": 20, "default": 10},
               {"id": "calling", "label": "Calling", "type": "enum", "values": ["scout", "drover"]},
               {"id": "note", "label": "Note", "type": "text", "maxLength": 40},
               {"id": "story", "label": "Story", "type": "longtext"},
               {"id": "sworn", "label": "Sworn", "type": "boolean"},
               {"id": "die", "label": "Die", "type": "dice"}],
    "lists": [{"id": "gear", "label": "Gear", "pools": {"maxColumn": "uses", "start": "full"}, "columns": [
        {"id": "name", "label": "Name", "type": "text"},
        {"id": "uses", "label": "Uses", "type": "number", "min": 0, "max": 9, "roll": {"count": 1, "sides": 4}}]}],
    "derived": [{"id": "call", "label": "Call", "op": "enumTable", "from": {"field": "calling"},
                 "table": {"scout": 2}, "default": -1},
                {"id": "poise", "label": "Poise", "op": "enumTable", "from": {"liveState": "stance"},
                 "table": {"high": 3}}],
    "live": {"pools": [{"id": "grit", "label": "Grit", "max": {"const": 3}}],
             "tracks": [{"id": "fatigue", "label": "Fatigue", "min": 0, "max": 4, "default": 0},
                        {"id": "harm", "label": "Harm", "min": 0,
                         "levels": [{"label": "Grazed", "penalty": 0}, {"label": "Hurt", "penalty": -1},
                                    {"label": "Down", "penalty": -2}],
                         "kinds": [{"id": "cut", "label": "C", "severity": 0}]}],
             "text": [{"id": "heading", "label": "Heading"}],
             "conditions": [{"id": "soaked", "label": "Soaked"}],
             "states": [{"id": "stance", "label": "Stance", "values": ["low", "high"]}]}},
    "resolution": {"type": "dice-sum"}}
RS = Ruleset.from_dict(MINI)


def boxed_harm(d, max_):
    """Turn Harm into a track of numbered boxes as long as `max_`."""
    t = d["sheet"]["live"]["tracks"][1]
    t.pop("levels")
    t.update(max=max_, boxes={"penalty": {"by": "filled", "table": [[0, 0]]}})


def card(rs=RS, **parts):
    c = GameState.new(rs, ["X"]).cards["X"]
    for k, v in parts.items():
        c = {**c, k: {**c.get(k, {}), **v}}
    return c


def checks(rs=RS, live=None, **parts):
    s = view_card(rs, card(rs, **parts), live)
    return {c.id: c for c in (*s.abilities, *s.skills, *s.saves)}


def test_mini_ruleset_imports():
    assert problems(MINI) == []


def test_sheet_7_abilities_hold_the_core_scores():
    c = checks(abilities={"brawn": 4, "wits": 1})
    assert (c["brawn"].total, c["wits"].total) == (4, 1)
    c = checks(abilities={"brawn": 2, "wits": 5})
    assert (c["brawn"].total, c["wits"].total) == (2, 5)


def test_sheet_8_a_skill_or_save_rolls_with_the_ability_it_names():
    c = checks(abilities={"brawn": 4, "wits": 1})
    assert (c["read"].ability, c["read"].total) == ("wits", 1)  # read names wits: 1, not brawn's 4
    assert (c["nerve"].ability, c["nerve"].base) == ("wits", 1)  # a save too
    assert (c["lift"].ability, c["lift"].base) == ("brawn", 4)


def test_sheet_9_a_skill_and_a_save_may_have_a_cap():
    trained = {"lift": "yes"}
    c = checks(abilities={"brawn": 5, "wits": 6}, skills=trained, saves={"nerve": "yes"}, fields={"limit": 4})
    assert c["lift"].total == 3  # 5 + 2 = 7, capped at the constant 3
    assert c["nerve"].total == 4  # 6 + 2 = 8, capped at the field limit 4


def test_sheet_10_untr_2_untrained_on_the_skill_the_save_or_the_section():
    c = checks(abilities={"brawn": 4, "wits": 5})
    assert c["climb"].total == 2  # skill's own rule: 4 - 2 (UNTR-5: under dice-sum, a fixed amount)
    assert c["nerve"].total == 2  # save's own rule: 5 - 3 (limit 10 does not bite)
    assert c["dig"].total == 3  # the section's rule: 4 - 1
    assert (c["read"].rule, c["read"].total) == ("normal", 5)  # no rule anywhere: rolls normally (UNTR-1)
    t = checks(abilities={"brawn": 4, "wits": 5}, skills={"climb": "yes", "dig": "yes"}, saves={"nerve": "yes"})
    assert (t["climb"].total, t["dig"].total, t["nerve"].total) == (6, 6, 7)  # trained: score + 2, no rule


def test_sheet_11_12_fields_hold_single_values_of_six_types():
    values = {"limit": 7, "calling": "drover", "note": "owes Bram", "story": "Born on the road.", "sworn": True,
              "die": "1d8"}
    assert view_card(RS, card(fields=values), None).fields == values
    bad = edit(MINI, lambda d: d["sheet"]["fields"].append({"id": "when", "label": "When", "type": "date"}))
    assert ("sheet.fields[6].type", "not-allowed") in problems(bad)


def test_sheet_27_enum_table_from_an_enum_field_or_a_live_state():
    assert view_card(RS, card(fields={"calling": "scout"}), None).derived["call"] == 2
    assert view_card(RS, card(fields={"calling": "drover"}), None).derived["call"] == -1  # not in the table
    assert view_card(RS, card(), LiveValues(states={"stance": "high"})).derived["poise"] == 3
    assert view_card(RS, card(), LiveValues(states={"stance": "low"})).derived["poise"] == 0


def test_sheet_28_lists_hold_rows_with_their_own_columns():
    rows = [{"name": "Rope", "uses": 2}, {"name": "Lamp", "uses": 1}]
    assert [dict(r) for r in view_card(RS, card(lists={"gear": rows}), None).lists["gear"]] == rows
    bad = edit(MINI, lambda d: d["sheet"]["lists"][0]["columns"].append(
        {"id": "name", "label": "Again", "type": "text"}))
    assert problems(bad) != []  # a list's columns are its own: each id once


def test_sheet_31_list_pools_make_each_row_a_resource_with_its_own_maximum():
    c = card(lists={"gear": [{"name": "Rope", "uses": 2}, {"name": "Flask", "uses": 5}]})
    assert view_card(RS, c, None).row_pools["gear"] == ((2, 2), (5, 5))  # start full, each at its own max
    assert view_card(RS, c, LiveValues(rows={"gear": (0, 3)})).row_pools["gear"] == ((0, 2), (3, 5))


def test_sheet_32_a_numeric_column_may_be_filled_by_a_roll():
    assert problems(MINI) == []  # `uses` is a number column with a roll
    bad = edit(MINI, lambda d: d["sheet"]["lists"][0]["columns"][0].update(roll={"count": 1, "sides": 4}))
    assert ("sheet.lists[0].columns[0].roll", "key-not-allowed") in problems(bad)  # `name` is a text column


def test_sheet_35_live_holds_pools_tracks_text_conditions_and_states():
    s = view_card(RS, card(), LiveValues(pools={"grit": 1}, tracks={"fatigue": 2}, text={"heading": "north"},
                                  conditions=frozenset({"soaked"}), states={"stance": "high"}))
    assert [(p.id, p.cur, p.max) for p in s.pools] == [("grit", 1, 3)]
    assert [(t.id, t.value) for t in s.tracks] == [("fatigue", 2)]
    assert [w.id for w in s.wounds] == ["harm"]
    assert s.text == (("heading", "Heading", "north"),)
    assert s.conditions == (("soaked", "Soaked", True),)
    assert [(st.id, st.value) for st in s.states] == [("stance", "high")]


def test_sheet_3_4_checks_grouped_under_their_section_in_the_gm_block():
    state = GameState.new(RS, ["Ada"])
    doc = state.to_json()
    doc["gameCharacterCards"]["Ada"]["skills"].update(dig="yes", climb="yes")
    state = GameState.loads(RS, json.dumps(doc))
    heads = [head for head, _ in character_block(RS, state, "Ada")["lines"]]
    assert heads[:2] == ["Checks", "Labour"]  # SHEET-3: Dig names labour, so it sits under that heading
    labour = dict(character_block(RS, state, "Ada")["lines"])["Labour"]
    assert "Dig" in labour and "Climb" not in labour
    # SHEET-4: a sheet that names no section on its checks shows them all together, as before sections existed
    plain = Ruleset.from_dict(edit(MINI, lambda d: d["sheet"]["skills"][0].pop("section")))
    lines = character_block(plain, GameState.loads(plain, json.dumps(doc)), "Ada")["lines"]
    assert [head for head, _ in lines].count("Checks") == 1 and "Labour" not in dict(lines)
    assert "Dig" in dict(lines)["Checks"] and "Climb" in dict(lines)["Checks"]


def test_track_4_wound_track_length_is_its_levels_or_its_own_max():
    s = view_card(RS, card(), None)
    assert s.wounds[0].length == 3  # three named levels, `max` left out (decisions T-13)
    rs = Ruleset.from_dict(edit(MINI, lambda d: boxed_harm(d, {"field": "limit"})))
    assert view_card(rs, card(rs, fields={"limit": 6}), None).wounds[0].length == 6  # as long as its own max
    bad = edit(MINI, lambda d: d["sheet"]["live"]["tracks"][1].update(max=4))
    assert ("sheet.live.tracks[1].max", "wound-max-mismatch") in problems(bad)


def test_wound_1_kinds_with_levels_or_boxes_make_a_wound_track():
    s = view_card(RS, card(), None)
    assert [t.id for t in s.tracks] == ["fatigue"] and [w.id for w in s.wounds] == ["harm"]
    s = view_card(Ruleset.from_dict(edit(MINI, lambda d: boxed_harm(d, 3))), card(), None)
    assert [w.id for w in s.wounds] == ["harm"] and s.wounds[0].boxed


def test_enum_8_the_key_is_live_state_not_state():
    bad = edit(MINI, lambda d: d["sheet"]["derived"][1].update({"from": {"state": "stance"}}))
    assert ("sheet.derived[1].from.state", "unknown-key") in problems(bad)


def test_wound_3_a_pool_health_may_still_have_damage_types():
    ok = edit(MINI, lambda d: d.update(combat={"health": {"pool": "grit"}, "damageTypes": ["fire", "cold"]}))
    assert problems(ok) == []


def test_adj_2_adjust_value_is_a_value_reference_including_live_state():
    rs = Ruleset.from_dict(edit(MINI, lambda d: d["resolution"].update(adjust=[{"value": {"livePool": "grit"}}])))
    for grit, want in ((3, 7), (1, 5), (0, 4)):  # brawn 4 + what remains of Grit, read at check time
        c = checks(rs, LiveValues(pools={"grit": grit}), abilities={"brawn": 4, "wits": 1})
        assert (c["brawn"].adjust, c["brawn"].total) == (grit, want)
        # ADJ-5: the entry names no abilities, so every check gets it: a wits ability, skill and save too
        assert (c["wits"].total, c["read"].total, c["nerve"].total) == (1 + grit, 1 + grit, 1 - 3 + grit)
    with pytest.raises(RulesetError):
        Ruleset.from_dict(edit(MINI, lambda d: d["resolution"].update(adjust=[{"value": 2}])))  # not a reference


def test_hide_1_hides_a_field_a_derived_value_a_list_a_pool_and_a_plain_track():
    rule = {"field": "calling", "equals": "drover"}

    def hide_all(d):
        s = d["sheet"]
        for element in (s["fields"][2], s["derived"][0], s["lists"][0], s["live"]["pools"][0],
                        s["live"]["tracks"][0]):
            element["hideWhen"] = dict(rule)

    rs = Ruleset.from_dict(edit(MINI, hide_all))
    want = {"fields.note", "derived.call", "lists.gear", "pools.grit", "tracks.fatigue"}
    assert set(view_card(rs, card(rs, fields={"calling": "drover"}), None).hidden) == want
    assert set(view_card(rs, card(rs, fields={"calling": "scout"}), None).hidden) == set()


def test_state_7_default_omitted_is_the_first_value():
    assert [st.value for st in view_card(RS, card(), None).states] == ["low"]  # no `default`: the first value
    rs = Ruleset.from_dict(edit(MINI, lambda d: d["sheet"]["live"]["states"][0].update(default="high")))
    assert [st.value for st in view_card(rs, card(rs), None).states] == ["high"]


def test_state_3_value_shown_by_its_label_or_as_itself():
    rs = Ruleset.from_dict(edit(MINI, lambda d: d["sheet"]["live"]["states"][0].update(
        valueLabels={"high": "High guard"})))
    s = view_card(rs, card(rs), LiveValues(states={"stance": "high"})).states[0]
    assert s.values == (("low", "low"), ("high", "High guard")) and s.value_label == "High guard"
