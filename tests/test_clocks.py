"""Progress clocks, spec section 16: CLOCK-1..CLOCK-27 with the reason codes of DEC-20."""

from __future__ import annotations

import copy

import pytest

from conftest import edit, load_sample, sample_dict
from tagengine._internal.commands import apply_reply
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.state import Clock, GameState


@pytest.fixture
def rs():
    return load_sample("blades-like")


@pytest.fixture
def state(rs):
    return GameState.new(rs, ["Cutter", "Lurk"])


def run(rs, state, text):
    a = apply_reply(rs, state, text)
    return a, [(r.result, r.now or r.reason) for r in a.receipts]


def test_clock_1_2_no_clocks_key_disables_commands(state):
    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), lambda d: d.pop("clocks")))
    a, res = run(rs, state, '[clock: name="Alarm raised" size="6"]')
    assert res == [("refused", "clocks-disabled")] and a.state.clocks == ()


def test_clock_7_empty_object_enables_defaults(state):
    rs = load_sample("ember-roads")  # "clocks": {}
    _, res = run(rs, state, '[clock: name="A" size="8"][clock: name="B" size="10"]')
    assert res == [("ok", "0/8"), ("refused", "bad-size")]


def test_clock_10_create_empty(rs, state):
    a, res = run(rs, state, '[clock: name="Alarm raised" size="6"]')
    assert res == [("ok", "0/6")] and a.state.clocks == (Clock("Alarm raised", 6, 0),)


def test_clock_11_refusals(rs, state):
    s = state.with_clocks((Clock("Alarm raised", 6, 0),))
    _, res = run(rs, s, '[clock: name="X" size="5"][clock: name="ALARM RAISED" size="4"]')
    assert res == [("refused", "bad-size"), ("refused", "clock-exists")]
    full = state.with_clocks(tuple(Clock(f"C{i}", 4, 0) for i in range(8)))
    _, res = run(rs, full, '[clock: name="Ninth" size="4"]')
    assert res == [("refused", "clock-limit")]


def test_clock_12_tick_negative_and_clamped(rs, state):
    s = state.with_clocks((Clock("Alarm raised", 6, 3),))
    _a, res = run(rs, s, '[clock: name="Alarm raised" tick="2"][clock: name="alarm raised" tick="5"]'
                        '[clock: name="Alarm raised" tick="-9"]')
    assert res == [("ok", "5/6"), ("ok", "6/6"), ("ok", "0/6")]


def test_clock_13_complete_clock_counts_until_cleared(rs, state):
    s = state.with_clocks(tuple(Clock(f"C{i}", 4, 4) for i in range(8)))
    _a, res = run(rs, s, '[clock: name="New" size="4"][clock: name="C0" clear][clock: name="New" size="4"]')
    assert res == [("refused", "clock-limit"), ("ok", "cleared"), ("ok", "0/4")]


def test_clock_14_negative_tick_reopens(rs, state):
    s = state.with_clocks((Clock("A", 4, 4),))
    a, res = run(rs, s, '[clock: name="A" tick="-1"]')
    assert res == [("ok", "3/4")] and not a.state.clocks[0].complete


def test_clock_15_clear(rs, state):
    s = state.with_clocks((Clock("A", 4, 1), Clock("B", 6, 2)))
    a, res = run(rs, s, '[clock: name="a" clear]')
    assert res == [("ok", "cleared")] and a.state.clocks == (Clock("B", 6, 2),)


@pytest.mark.parametrize("name", ["", " ", "x" * 101, "say {{char}}", "a\x07b", "it\u2028s"])
def test_clock_16_name_rules(rs, state, name):
    a, res = run(rs, state, f'[clock: name="{name}" size="4"]')
    assert res == [("refused", "bad-name")] and a.state.clocks == ()


def test_clock_16_brackets_never_reach_a_name(rs, state):
    _, res = run(rs, state, '[clock: name="Name [x]" size="4"]')
    assert res[0] == ("refused", "malformed")


def test_clock_16_hundred_characters_is_fine(rs, state):
    _, res = run(rs, state, f'[clock: name="{"x" * 100}" size="4"]')
    assert res == [("ok", "0/4")]


def test_clock_17_one_action(rs, state):
    _, res = run(rs, state, '[clock: name="A" tick="2" size="6"][clock: name="A"][clock: name="A" tick="1" clear]')
    assert res == [("refused", "one-action")] * 3


def test_clock_18_reply_order_create_then_tick(rs, state):
    _a, res = run(rs, state, 'The bells. [clock: name="Alarm raised" size="6"] Later [clock: name="Alarm raised" '
                            'tick="2"]')
    assert res == [("ok", "0/6"), ("ok", "2/6")]
    _, res = run(rs, state, '[clock: name="Alarm raised" tick="2"][clock: name="Alarm raised" size="6"]')
    assert res == [("refused", "unknown-clock"), ("ok", "0/6")]


def test_clock_19_rewrite_with_result(rs, state):
    a, _ = run(rs, state, '[clock: name="Alarm raised" size="6"] [clock: name="Alarm raised" tick="2"] '
                          '[clock: name="Nope" tick="1"]')
    assert a.text == ('[clock: name="Alarm raised" size="6" result="ok" now="0/6"] '
                      '[clock: name="Alarm raised" tick="2" result="ok" now="2/6"] '
                      '[clock: name="Nope" tick="1" result="refused" reason="unknown-clock"]')


def test_clock_20_model_results_are_discarded(rs, state):
    a, _ = run(rs, state, '[clock: name="A" size="4" result="refused" reason="bad-size" now="4/4"]')
    assert a.text == '[clock: name="A" size="4" result="ok" now="0/4"]'


def test_clock_21_unknown_and_malformed(rs, state):
    _, res = run(rs, state, '[clock: name="Ghost" clear][clock: name="Ghost tick=1]')
    assert res == [("refused", "unknown-clock"), ("refused", "malformed")]


def test_clock_21_attribute_refusals(rs, state):
    _, res = run(rs, state, '[clock: name="A" size="4" colour="red"][clock: size="4"][clock: name="A" name="B" '
                            'size="4"][clock: name="A" size="four"][clock: name="A" size="4" clear="yes"]')
    assert res == [("refused", "unknown-attribute"), ("refused", "missing-attribute"),
                   ("refused", "duplicate-attribute"), ("refused", "invalid-amount"), ("refused", "one-action")]


def test_clock_22_at_most_40_commands(rs, state):
    s = state.with_clocks((Clock("A", 4, 0),))
    a, res = run(rs, s, '[clock: name="A" tick="1"][clock: name="A" tick="-1"]' * 21)
    assert res[:40] == [("ok", "1/4"), ("ok", "0/4")] * 20
    assert res[40:] == [("refused", "command-limit")] * 2
    assert a.state.clocks == (Clock("A", 4, 0),)


def test_clock_25_stored_as_ruleset_clocks(rs, state):
    a, _ = run(rs, state, '[clock: name="Alarm raised" size="6"][clock: name="Alarm raised" tick="4"]')
    assert a.state.to_json()["rulesetClocks"] == [{"name": "Alarm raised", "size": 6, "filled": 4}]


def test_clock_26_27_apply_never_mutates_the_snapshot(rs, state):
    s = state.with_clocks((Clock("A", 4, 1),))
    before = copy.deepcopy(s.to_json())
    a, _ = run(rs, s, '[clock: name="A" tick="2"][clock: name="B" size="6"]')
    assert s.to_json() == before and s.clocks == (Clock("A", 4, 1),)
    regen, _ = run(rs, s, '[clock: name="A" tick="1"]')  # regenerate: from the previous snapshot
    assert regen.state.clocks == (Clock("A", 4, 2),)
    cont, _ = run(rs, a.state, '[clock: name="A" tick="1"]')  # continue: from the current one
    assert cont.state.clocks[0] == Clock("A", 4, 4)


def test_dec_9_numbers(rs, state):
    s = state.with_clocks((Clock("A", 6, 0),))
    _, res = run(rs, s, '[clock: name="A" tick="+2"][clock: name="A" tick="1.5"][clock: name="A" tick="9999999999"]')
    assert res == [("ok", "2/6"), ("refused", "invalid-amount"), ("refused", "invalid-amount")]
