"""Pools (DESIGN.md section 5), plain tracks (TRACK), states (STATE), conditions, live text, DEC-7..14."""

from __future__ import annotations

from cmdkit import run, sample_state

from conftest import load_sample

GRAVE, EMBER, FIFTH, BLADES = (load_sample(n) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like"))


def test_spend_and_insufficient():
    s = sample_state("gravewatch")  # Mira resolve 1/5
    _, res = run(GRAVE, s, '[sheet: who="Mira" op="spend" pool="resolve" amount="1"]'
                           '[sheet: who="mira" op="spend" pool="Resolve"]')
    assert res == [("ok", "0/5"), ("refused", "insufficient")]


def test_restore_up_to_max():
    _, res = run(GRAVE, sample_state("gravewatch"), '[sheet: who="Mira" op="restore" pool="resolve" amount="9"]')
    assert res == [("ok", "5/5")]


def test_damage_pool_form_takes_temporary_points_first_and_floors_at_zero():
    s = sample_state("fifth-like")  # Vess hp 21/23 +5 temp
    _a, res = run(FIFTH, s, '[sheet: who="Vess" op="damage" pool="hp" amount="7"]'
                           '[sheet: who="Vess" op="damage" pool="hp" amount="40"]')
    assert res == [("ok", "19/23"), ("ok", "0/23")]


def test_restore_temp_points_do_not_stack():
    s = sample_state("fifth-like")
    _, res = run(FIFTH, s, '[sheet: who="Vess" op="restore" pool="hp" amount="3" temp]'
                           '[sheet: who="Vess" op="restore" pool="hp" amount="8" temp]'
                           '[sheet: who="Vess" op="restore" pool="slots_1" amount="1" temp]')
    assert res == [("ok", "21/23 +5 temp"), ("ok", "21/23 +8 temp"), ("refused", "invalid-value")]


def test_dec_9_amount_default_and_invalid():
    _, res = run(GRAVE, sample_state("gravewatch"), '[sheet: who="Mira" op="restore" pool="resolve"]'
                                                     '[sheet: who="Mira" op="spend" pool="resolve" amount="x"]'
                                                     '[sheet: who="Mira" op="spend" pool="resolve" amount="-1"]')
    assert res == [("ok", "2/5"), ("refused", "invalid-amount"), ("refused", "invalid-amount")]


def test_dec_14_unknown_targets_and_hidden():
    s = sample_state("gravewatch")
    _, res = run(GRAVE, s, '[sheet: who="Nobody" op="spend" pool="resolve"][sheet: who="Mira" op="spend" pool="hope"]'
                           '[sheet: who="Bram" op="spend" pool="Lantern oil"][sheet: who="Mira" op="fly"]')
    assert res == [("refused", "unknown-character"), ("refused", "unknown-pool"), ("refused", "hidden"),
                   ("refused", "unknown-op")]


def test_dec_7_attribute_refusals():
    s = sample_state("gravewatch")
    _, res = run(GRAVE, s, '[sheet: who="Mira" op="spend" pool="resolve" colour="red"][sheet: who="Mira" op="spend"]'
                           '[sheet: who="Mira" who="Bram" op="spend" pool="resolve"][sheet: op="spend" pool="x"]')
    assert res == [("refused", "unknown-attribute"), ("refused", "missing-attribute"),
                   ("refused", "duplicate-attribute"), ("refused", "missing-attribute")]


def test_who_may_be_left_out_with_one_character():
    s = sample_state("fifth-like")
    _, res = run(FIFTH, s, '[sheet: op="spend" pool="slots_1"]')
    assert res == [("ok", "0/4")]


def test_dec_8_names_by_id_or_label_and_ambiguous():
    from conftest import edit, sample_dict
    from tagengine._internal.ruleset import Ruleset
    from tagengine._internal.state import GameState

    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), lambda d: d["sheet"]["live"]["pools"].append(
        {"id": "Stress", "label": "Strain", "max": {"const": 3}})))
    s = GameState.new(rs, ["Cutter"])
    _, res = run(rs, s, '[sheet: who=" cutter " op="restore" pool="STRESS"][sheet: op="restore" pool="strain"]')
    assert res == [("refused", "ambiguous"), ("ok", "3/3")]


def test_track_1_7_plain_track_by_to_clamped():
    s = sample_state("ember-roads")  # weariness 1 of 0..3 (max from a value reference)
    _, res = run(EMBER, s, '[sheet: who="Mira" op="track" track="weariness" by="1"]'
                           '[sheet: who="Mira" op="track" track="Weariness" by="+5"]'
                           '[sheet: who="Mira" op="track" track="weariness" to="-2"]'
                           '[sheet: who="Mira" op="track" track="weariness" to="x"]'
                           '[sheet: who="Mira" op="track" track="weariness" by="1" to="2"]'
                           '[sheet: who="Mira" op="track" track="weariness"]')
    assert res == [("ok", "2"), ("ok", "3"), ("ok", "0"), ("refused", "invalid-value"), ("refused", "one-action"),
                   ("refused", "missing-attribute")]


def test_wound_30_plain_track_command_refused_on_wound_track():
    _, res = run(GRAVE, sample_state("gravewatch"), '[sheet: who="Mira" op="track" track="harm" by="1"]')
    assert res == [("refused", "wound-track")]


def test_state_11_12_by_id_or_label():
    s = sample_state("ember-roads")
    a, res = run(EMBER, s, '[sheet: who="Mira" op="state" state="Stance" value="Guarded"]'
                           '[sheet: who="Mira" op="state" state="stance" value="steady"]'
                           '[sheet: who="Mira" op="state" state="Mood" value="calm"]'
                           '[sheet: who="Mira" op="state" state="stance" value="calm"]')
    assert res == [("ok", "Guarded"), ("ok", "Steady"), ("refused", "unknown-state"), ("refused", "unknown-value")]
    assert a.state.live_of("Mira").states == {}  # STATE-8: at its default, not stored


def test_state_10_hidden_state_is_not_set():
    from conftest import edit, sample_dict
    from tagengine._internal.ruleset import Ruleset
    from tagengine._internal.state import GameState

    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["states"][0].update(
        hideWhen={"field": "watch", "equals": "dawn"})))
    s = GameState.loads(rs, sample_state("gravewatch").dumps())
    _, res = run(rs, s, '[sheet: who="Bram" op="state" state="lantern" value="out"]')
    assert res == [("refused", "hidden")]


def test_conditions_on_off():
    s = sample_state("fifth-like")
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="condition" condition="Prone" to="on"]'
                           '[sheet: who="Vess" op="condition" condition="poisoned" to="off"]'
                           '[sheet: who="Vess" op="condition" condition="Dazed" to="on"]'
                           '[sheet: who="Vess" op="condition" condition="prone" to="maybe"]')
    assert res == [("ok", "on"), ("ok", "off"), ("refused", "unknown-condition"), ("refused", "invalid-value")]
    assert a.state.live_of("Vess").conditions == {"prone"}


def test_live_text_is_prompt_safe_and_limited():
    s = sample_state("fifth-like")
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="text" text="Concentration" to="Bless"]'
                           '[sheet: who="Vess" op="text" text="concentration" to="{{char}}"]'
                           f'[sheet: who="Vess" op="text" text="concentration" to="{"x" * 81}"]'
                           '[sheet: who="Vess" op="text" text="Mood" to="calm"]'
                           '[sheet: who="Vess" op="text" text="concentration" to=""]')
    assert res == [("ok", "Bless"), ("refused", "invalid-value"), ("refused", "invalid-value"),
                   ("refused", "unknown-field"), ("ok", "")]
    assert a.state.live_of("Vess").text == {}


def test_dec_10_who_party_each_character():
    s = sample_state("gravewatch")  # Mira resolve 1/5, Bram full 5/5 (dawn watch)
    _, res = run(GRAVE, s, '[sheet: who="party" op="restore" pool="resolve" amount="1"]'
                           '[sheet: who="party" op="spend" pool="resolve" amount="3"]'
                           '[sheet: who="party" op="spend" pool="resolve" amount="9"]')
    assert res == [("ok", "Mira 2/5; Bram 5/5"), ("partial", "Bram 2/5 | Mira: insufficient"),
                   ("refused", "Mira: insufficient; Bram: insufficient")]


def test_party_17_who_party_never_changes_the_shared_sheet():
    s = sample_state("blades-like")
    a, res = run(BLADES, s, '[sheet: who="party" op="restore" pool="stress" amount="1"]'
                            '[sheet: who="party" op="spend" pool="coin" amount="1"]')
    assert res[0] == ("ok", "Cutter 4/9; Lurk 1/9") and res[1][1] == "Cutter: unknown-pool; Lurk: unknown-pool"
    assert a.state.live_of("$party") == s.live_of("$party")


def test_dec_11_pool_now_and_state_label():
    s = sample_state("blades-like")
    _, res = run(BLADES, s, '[sheet: sheet="party" op="spend" pool="coin" amount="2"]')
    assert res == [("ok", "1/8")]
