"""Runtime value references (REF), derived values (SHEET-19..27, ENUM) and visibility (HIDE)."""

from __future__ import annotations

from conftest import edit, load_sample, sample_dict
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, view_card
from tagengine._internal.sheet.ops import rounded
from tagengine._internal.state import GameState, LiveValues, WoundMarks


def card(rs, **parts):
    c = GameState.new(rs, ["X"]).cards["X"]
    for k, v in parts.items():
        c = {**c, k: {**c.get(k, {}), **v} if isinstance(v, dict) else v}
    return c


EMBER = load_sample("ember-roads")
GRAVE = load_sample("gravewatch")
FIFTH = load_sample("fifth-like")


def gear(*rows):
    return card(EMBER, lists={"gear": list(rows)})


def test_ref_2_3_list_sum_counts_only_packed_rows():
    c = gear({"item": "Rope", "bulk": 2, "packed": True}, {"item": "Lute", "bulk": 5, "packed": False})
    assert Eval(EMBER, c, None).derived("burden") == 2


def test_ref_4_empty_cell_reads_column_default():
    c = gear({"item": "Lantern"}, {"item": "Tent", "bulk": 3})  # bulk default 1, packed default true
    assert Eval(EMBER, c, None).derived("burden") == 4


def test_ref_5_hidden_list_adds_nothing():
    d = edit(sample_dict("ember-roads"), lambda d: d["sheet"]["lists"][0].update(
        hideWhen={"field": "calling", "equals": "drover"}))
    rs = Ruleset.from_dict(d)
    c = card(rs, lists={"gear": [{"item": "Tent", "bulk": 3}]})
    assert Eval(rs, c, None).derived("burden") == 0
    c2 = {**c, "fields": {**c["fields"], "calling": "scout"}}
    assert Eval(rs, c2, None).derived("burden") == 3


def test_sheet_26_step_table_turns_burden_into_dice():
    # Ember Roads: every three points of Burden is one less on every Brawn roll (ADJ-3).
    for bulks, want in (((2,), 0), ((3,), -1), ((2, 3), -1), ((3, 3), -2), ((9, 9), -3)):
        c = gear(*({"item": "x", "bulk": b} for b in bulks))
        assert Eval(EMBER, c, None).derived("burdened") == want


def test_ref_7_live_pool_reads_what_remains():
    c = card(GRAVE)
    assert Eval(GRAVE, c, LiveValues(pools={"resolve": 1})).read(
        GRAVE.file.sheet.skills[0].cap) == 1


def test_ref_9_live_track_reads():
    live = LiveValues(marks={"harm": WoundMarks(("tear", "knock"))})
    ev = Eval(GRAVE, card(GRAVE), live)
    assert ev.track_read("harm", "value") == 2
    assert ev.track_read("harm", "filled") == 2
    assert ev.track_read("harm", "remaining") == 2
    assert ev.track_read("harm", "penalty") == -1
    assert ev.derived("harm_left") == 2  # Gravewatch's "Harm still to take"
    ev = Eval(EMBER, card(EMBER), LiveValues(tracks={"weariness": 2}))
    assert (ev.track_read("weariness", "value"), ev.track_read("weariness", "filled"),
            ev.track_read("weariness", "remaining")) == (2, 2, 1)  # max is max(3, brawn 2)


def test_ref_10_hidden_pool_and_track_read_zero():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["derived"].append(
        {"id": "oil_left", "label": "Oil left", "op": "sum", "of": [{"livePool": "oil"}]}))
    rs = Ruleset.from_dict(d)
    c = card(rs)  # watch dusk: oil hidden
    assert Eval(rs, c, LiveValues(pools={"oil": 5})).derived("oil_left") == 0
    night = {**c, "fields": {**c["fields"], "watch": "night"}}
    assert Eval(rs, night, LiveValues(pools={"oil": 5})).derived("oil_left") == 5


def test_ref_11_live_reads_take_the_state_as_it_stands():
    c = card(EMBER)
    assert Eval(EMBER, c, LiveValues(states={"stance": "reckless"})).derived("stance_brawn") == 2
    assert Eval(EMBER, c, LiveValues(states={"stance": "guarded"})).derived("stance_brawn") == -1


def test_ref_12_no_live_state_reads_the_start():
    ev = Eval(GRAVE, card(GRAVE), None)
    assert ev.read(GRAVE.file.sheet.skills[0].cap) == 4  # resolve starts full (2 + nerve 2)
    assert ev.derived("harm_left") == 4  # a wound track starts unmarked
    assert Eval(EMBER, card(EMBER), None).derived("stance_brawn") == 0  # stance at default "steady"
    blades = load_sample("blades-like")
    assert Eval(blades, card(blades), None).pool_cur(blades.sheet.pools.get("stress")) == 0  # start empty


def test_ref_1_every_key_reads():
    ev = Eval(FIFTH, card(FIFTH, abilities={"con": 14, "int": 17}, fields={"level": 5, "spell_ability": "int"},
                          skills={"perception": "proficient"}), None)
    assert ev.ability_score("con") == 14 and ev.ability_mod("con") == 2 and ev.ability_mod("int") == 3
    assert ev.derived("con_hp") == 10  # multiply: abilityMod con x field level (SHEET-25)
    assert ev.derived("spell_dc") == 8 + 3 + 3  # abilityModFromField
    assert ev.derived("passive_perception") == 10 + 0 + 3  # skillMod (wis 10 -> +0, proficient +3)
    assert ev.derived("best_save") == 0  # saveMod through max
    assert ev.derived("slowest") == 10  # min


def test_sheet_24_scale_rounds():
    ev = Eval(FIFTH, card(FIFTH, fields={"level": 5}), None)
    assert ev.derived("half_level") == 2  # 5 x 0.5 rounded down
    assert (rounded(2.5, None), rounded(-2.5, None), rounded(2.4, "up"), rounded(2.6, "down")) == (3, -3, 3, 2)


def test_sheet_26_proficiency_by_step_table():
    for level, prof in ((1, 2), (4, 2), (5, 3), (9, 4), (17, 6), (20, 6)):
        assert Eval(FIFTH, card(FIFTH, fields={"level": level}), None).derived("proficiency") == prof


def test_enum_1_4_5_table_and_default():
    ev = Eval(GRAVE, card(GRAVE, fields={"watch": "dawn"}), LiveValues(states={"lantern": "out"}))
    assert ev.derived("dawn_resolve") == 1 and ev.derived("lantern_nerve") == -2
    ev = Eval(GRAVE, card(GRAVE, fields={"watch": "night"}), None)
    assert ev.derived("dawn_resolve") == 0 and ev.derived("lantern_nerve") == 0  # ENUM-5: default omitted -> 0


def test_enum_6_dawn_watch_gives_one_more_resolve():
    dawn = GameState(cards={"A": card(GRAVE, fields={"watch": "dawn"})})
    from tagengine._internal.sheet import view_character

    assert next(p for p in view_character(GRAVE, dawn, "A").pools if p.id == "resolve").max == 5


def test_enum_4_hidden_live_state_reads_default():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["states"][0].update(
        hideWhen={"field": "watch", "equals": "dawn"}))
    rs = Ruleset.from_dict(d)
    ev = Eval(rs, card(rs, fields={"watch": "dawn"}), LiveValues(states={"lantern": "out"}))
    assert ev.state_value("lantern") is None and ev.derived("lantern_nerve") == 0


def test_hide_2_forms():
    fifth = view_card(FIFTH, card(FIFTH, fields={"casting": "none"}), None)
    assert "pools.slots_1" in fifth.hidden and "derived.spell_dc" in fifth.hidden  # equals (5e spell slots)
    grave = view_card(GRAVE, card(GRAVE, fields={"watch": "dusk"}), None)
    assert grave.hidden == {"pools.oil": "watch is 'dusk', not 'night'"}  # notEquals (lantern oil)
    grave = view_card(GRAVE, card(GRAVE, fields={"watch": "night"}), None)
    assert grave.hidden == {}


def test_hide_5_unset_or_stale_enum_reads_default():
    c = card(GRAVE)
    c = {**c, "fields": {"watch": "noon"}}  # a value the ruleset no longer offers: the default, dusk
    assert "pools.oil" in view_card(GRAVE, c, None).hidden
    c = {**c, "fields": {}}
    assert "pools.oil" in view_card(GRAVE, c, None).hidden


def test_state_9_stale_value_reads_default():
    assert Eval(GRAVE, card(GRAVE), LiveValues(states={"lantern": "dim"})).state_value("lantern") == "lit"


def test_sheet_19_derived_cannot_be_typed_over():
    c = card(FIFTH, fields={"level": 5})
    c = {**c, "derived": {"proficiency": 99}}  # not part of a card; ignored
    assert Eval(FIFTH, c, None).derived("proficiency") == 3


def test_two_characters_on_the_same_blank_card_keep_their_own_names():
    """A start without cards gives each character the very same card and live values: the memo of evaluated
    sheets must not give the second the first's view (found by issue 28's panel, which lists every sheet)."""
    from tagengine._internal.sheet.sheet_views import view_character

    rs = load_sample("blades-like")
    state = GameState.new(rs, ["Cutter", "Lurk"])
    assert [view_character(rs, state, n).name for n in state.characters] == ["Cutter", "Lurk"]
