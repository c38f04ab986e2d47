"""Row pools in play (SHEET-31): `spend` and `restore` on one row of a list with `pools`."""

from __future__ import annotations

import json

import pytest
from cmdkit import run, sample_state, with_live

from conftest import edit, load_sample, sample_dict
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_character
from tagengine._internal.state import GameState

FIFTH = load_sample("fifth-like")


def uses(rs, state, who="Vess", lst="features"):
    return view_character(rs, state, who).row_pools[lst]


def test_sheet_31_spend_and_restore_a_row_by_its_name():
    s = sample_state("fifth-like")  # Features: Arcane recovery 0/1, Second wind 1/2
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="spend" list="Features" row="Second wind" amount="1"]'
                           '[sheet: who="Vess" op="spend" list="features" row="second  WIND"]'
                           '[sheet: who="Vess" op="restore" list="Features" row="Arcane recovery" amount="5"]'
                           '[sheet: who="Vess" op="restore" row="Second wind"]')
    assert res == [("ok", "0/2"), ("refused", "insufficient"), ("ok", "1/1"), ("ok", "1/2")]
    assert uses(FIFTH, a.state) == ((1, 1), (1, 2))
    assert a.state.live_of("Vess").rows == {"features": (1, 1)}
    assert s.live_of("Vess").rows == {"features": (0, 1)}  # the given state is not changed


def test_sheet_31_a_row_at_its_start_is_stored_only_where_it_changed():
    s = with_live(FIFTH, sample_state("fifth-like"), vess={})  # every row at its start: full
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="spend" row="Second wind"]')
    assert res == [("ok", "1/2")]
    assert a.state.live_of("Vess").rows == {"features": (None, 1)}
    assert uses(FIFTH, a.state) == ((1, 1), (1, 2))
    again = GameState.loads(FIFTH, a.state.dumps())  # what is stored reads back the same
    assert uses(FIFTH, again) == ((1, 1), (1, 2))


def test_sheet_31_rests_restore_what_commands_spent():
    s = sample_state("fifth-like")
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="spend" row="Second wind"]'
                           '[sheet: who="Vess" op="rest" rest="Short rest"]')
    assert res == [("ok", "0/2"), ("ok", "Features restored")]
    assert uses(FIFTH, a.state) == ((1, 1), (2, 2))


def test_sheet_31_refusals():
    s = sample_state("fifth-like")
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="spend" list="Features" row="Rage"]'
                           '[sheet: who="Vess" op="spend" list="Spells" row="Second wind"]'
                           '[sheet: who="Vess" op="spend" list="Features" pool="hp"]'
                           '[sheet: who="Vess" op="spend" pool="hp" row="Second wind"]'
                           '[sheet: who="Vess" op="spend" list="Features"]'
                           '[sheet: who="Vess" op="spend" row="Second wind" amount="-1"]'
                           '[sheet: who="Vess" op="restore" row="Second wind" temp]'
                           '[sheet: who="Vess" op="damage" row="Second wind"]'
                           '[sheet: who="Vess" op="spend" row=""]')
    assert res == [("refused", "unknown-pool"), ("refused", "unknown-pool"), ("refused", "unknown-attribute"),
                   ("refused", "one-action"), ("refused", "missing-attribute"), ("refused", "invalid-amount"),
                   ("refused", "invalid-value"), ("refused", "unknown-attribute"), ("refused", "unknown-pool")]
    assert a.state == s


def fifth_with(fn):
    return Ruleset.from_dict(edit(sample_dict("fifth-like"), fn))


def state_for(rs, base=None, **lists):
    """`base` (the sample state if left out) with Vess's `lists` replaced, read under `rs`."""
    doc = json.loads((base or sample_state("fifth-like")).dumps())
    doc["gameCharacterCards"]["Vess"]["lists"].update(lists)
    return GameState.loads(rs, json.dumps(doc))


def test_sheet_31_two_rows_with_one_name_are_ambiguous():
    rows = [{"name": "Channel", "uses": 1}, {"name": "channel", "uses": 2}]
    s = state_for(FIFTH, features=rows)
    _, res = run(FIFTH, s, '[sheet: who="Vess" op="spend" row="Channel"]')
    assert res == [("refused", "ambiguous")]


def test_sheet_31_two_lists_with_pools_need_list():
    def add(d):
        d["sheet"]["lists"].append({"id": "spells", "label": "Spells", "columns": [
            {"id": "spell", "label": "Spell", "type": "text", "maxLength": 60},
            {"id": "casts", "label": "Casts", "type": "number", "min": 0, "max": 9}],
            "pools": {"maxColumn": "casts", "start": "empty"}})
    rs = fifth_with(add)
    s = state_for(rs, spells=[{"spell": "Second wind", "casts": 3}])
    a, res = run(rs, s, '[sheet: who="Vess" op="restore" row="Second wind"]'
                        '[sheet: who="Vess" op="restore" list="Spells" row="Second wind" amount="2"]'
                        '[sheet: who="Vess" op="spend" list="Features" row="Second wind"]')
    assert res == [("refused", "missing-attribute"), ("ok", "2/3"), ("ok", "0/2")]
    assert uses(rs, a.state, lst="spells") == ((2, 3),)


def test_sheet_31_a_list_without_pools_has_no_rows_to_spend():
    def drop(d):
        del d["sheet"]["lists"][0]["pools"]
        d["sheet"]["rests"] = [r for r in d["sheet"]["rests"] if r["id"] != "short"]
        d["sheet"]["rests"][0]["steps"] = [st for st in d["sheet"]["rests"][0]["steps"] if "listPools" not in st]
    rs = fifth_with(drop)
    s = GameState.loads(rs, json.dumps({**sample_state("fifth-like").to_json(), "rulesetLive": {}}))
    _, res = run(rs, s, '[sheet: who="Vess" op="spend" row="Second wind"]'
                        '[sheet: who="Vess" op="spend" list="Features" row="Second wind"]')
    assert res == [("refused", "unknown-pool"), ("refused", "unknown-pool")]


def test_sheet_31_a_hidden_list_is_hidden():
    rs = fifth_with(lambda d: d["sheet"]["lists"][0].update(hideWhen={"field": "casting", "equals": "full"}))
    _, res = run(rs, GameState.loads(rs, sample_state("fifth-like").dumps()),
                 '[sheet: who="Vess" op="spend" row="Second wind"]')
    assert res == [("refused", "hidden")]


def test_sheet_31_the_name_column_is_the_summary_name_column_else_the_first():
    def move(d):
        cols = d["sheet"]["lists"][0]["columns"]
        cols.insert(0, cols.pop(2))  # `die` (an enum) first; the summary still names rows by `name`
    rs = fifth_with(move)
    s = GameState.loads(rs, sample_state("fifth-like").dumps())
    _, res = run(rs, s, '[sheet: who="Vess" op="spend" row="Second wind"]')
    assert res == [("ok", "0/2")]
    rs2 = fifth_with(lambda d: (move(d), d["gm"]["sheetSummary"].update(lists=[])))
    s2 = GameState.loads(rs2, sample_state("fifth-like").dumps())
    _, res = run(rs2, s2, '[sheet: who="Vess" op="spend" row="Second wind"]'
                          '[sheet: who="Vess" op="spend" row="d10"]')  # named by the first column, an enum
    assert res == [("refused", "unknown-pool"), ("ok", "0/2")]


@pytest.mark.parametrize("op", ["spend", "restore"])
def test_sheet_31_who_party_applies_to_each_character(op):
    doc = json.loads(sample_state("fifth-like").dumps())
    doc["gameCharacterCards"]["Ada"] = {"lists": {"features": [{"name": "Second wind", "uses": 3}]}}
    s = GameState.loads(FIFTH, json.dumps(doc))
    _, res = run(FIFTH, s, f'[sheet: who="party" op="{op}" row="Second wind"]')
    assert res == [("ok", "Vess 0/2; Ada 2/3")] if op == "spend" else [("ok", "Vess 2/2; Ada 3/3")]


def test_sheet_31_lowered_uses_cell_clamps_through_clamp_maxima():
    from tagengine._internal.commands.pools import clamp_maxima

    s = with_live(FIFTH, sample_state("fifth-like"), vess={})  # Second wind 2/2 at its start
    rows = [{"name": "Arcane recovery", "uses": 1}, {"name": "Second wind", "uses": 1}]
    low = clamp_maxima(FIFTH, s, state_for(FIFTH, s, features=rows))
    assert uses(FIFTH, low) == ((1, 1), (1, 1)) and low.live_of("Vess").rows == {"features": (None, 1)}
    rows[1]["uses"] = 2
    assert uses(FIFTH, clamp_maxima(FIFTH, low, state_for(FIFTH, low, features=rows))) == ((1, 1), (1, 2))


# -- the reminder (DEC-18) -------------------------------------------------------------------------
def test_sheet_31_reminder_shows_each_rows_uses_and_teaches_the_command():
    from tagengine._internal.prompt import reminder

    text = reminder(FIFTH, sample_state("fifth-like"))
    assert "- Features (Uses): Arcane recovery 0/1; Second wind 1/2\n" in text
    taught = ('[sheet: who="Vess" op="spend" list="Features" row="Arcane recovery" amount="1"] or op="restore"')
    assert "- Features (Uses per row; a row is named by its Feature): " + taught in text
    _, res = run(FIFTH, with_live(FIFTH, sample_state("fifth-like"), vess={}), taught.split(" or ")[0])
    assert res == [("ok", "0/1")]  # the taught tag is one the engine accepts


def test_sheet_31_dec_18_no_row_teaching_without_row_pools():
    from tagengine._internal.prompt import reminder

    for name in ("blades-like", "ember-roads", "gravewatch"):
        assert 'row="' not in reminder(load_sample(name), sample_state(name))


def test_sheet_31_reminder_skips_a_hidden_list_and_falls_back_to_dots():
    from tagengine._internal.prompt import reminder

    rs = fifth_with(lambda d: d["sheet"]["lists"][0].update(hideWhen={"field": "casting", "equals": "full"}))
    text = reminder(rs, GameState.loads(rs, sample_state("fifth-like").dumps()))
    assert "Features (Uses):" not in text
    assert 'list="Features" row="..."' in text  # hidden rows are not offered as the example


def test_sheet_31_party_list_with_row_pools():
    from tagengine._internal.prompt import reminder

    def pools(d):
        d["party"]["lists"][0]["columns"].append({"id": "favours", "label": "Favours", "type": "number",
                                                  "min": 0, "max": 5, "default": 1})
        d["party"]["lists"][0]["pools"] = {"maxColumn": "favours", "start": "full"}
    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), pools))
    s = GameState.loads(rs, sample_state("blades-like").dumps())
    a, res = run(rs, s, '[sheet: sheet="party" op="spend" row="Old Marta"]'
                        '[sheet: sheet="party" op="spend" list="Cohorts" row="Old Marta"]'
                        '[sheet: sheet="party" op="restore" row="The Grinders"]')
    assert res == [("ok", "0/1"), ("refused", "insufficient"), ("ok", "1/1")]
    text = reminder(rs, a.state)
    assert "- Cohorts (Favours): The Grinders 1/1; Old Marta 0/1\n" in text
    assert ('- Cohorts on the party sheet (Favours per row; a row is named by its Name): '
            '[sheet: sheet="party" op="spend" list="Cohorts" row="The Grinders" amount="1"] or op="restore".') in text
