"""The contract every sheet op is built on: `character_op` checks a tag's attributes and finds its subject before
the op runs (issue 29, docs/mutation.md). The ops are built here, in the test, not at import: a mutation run
imports the package once, with the clean code, so only an op built while a test runs sees a broken factory."""

from __future__ import annotations

import pytest
from cmdkit import sample_state

from conftest import load_sample
from tagengine._internal.commands.result import Outcome, ok
from tagengine._internal.commands.subject import character_op
from tagengine._internal.state import PARTY, GameState
from tagengine._internal.tags import parse

BLADES, GRAVE = load_sample("blades-like"), load_sample("gravewatch")


def probe(**kw):
    """An op built afresh that records whom it ran for and answers `ok`."""
    seen: list[tuple[str, bool]] = []

    def fn(rs, state, subj, tag):
        seen.append((subj.name, subj.party))
        return Outcome(ok(f"ran for {subj.name}"), state)

    return character_op("probe", **kw)(fn), seen


def verdict(op, rs, state, tag):
    out = op.handler(rs, state, parse(tag))
    assert out.state is state  # the probe changes nothing; a refusal never does
    return (out.result.result, out.result.now if out.result.result == "ok" else out.result.reason)


@pytest.fixture
def two():
    return sample_state("blades-like")  # Cutter and Lurk, and the crew's party sheet


def test_party_16_dec_13_which_sheet_an_op_may_act_on(two):
    both, seen = probe(required=("pool",), party=True)
    assert verdict(both, BLADES, two, '[sheet: sheet="party" op="probe" pool="coin"]') == ("ok", f"ran for {PARTY}")
    assert seen == [(PARTY, True)]
    assert verdict(both, BLADES, two, '[sheet: sheet="Party" op="probe" pool="coin"]')[0] == "ok"  # DEC-8
    assert verdict(both, BLADES, two, '[sheet: sheet="crew" op="probe" pool="coin"]') == ("refused", "unknown-sheet")
    assert verdict(both, BLADES, two, '[sheet: sheet="party" who="Cutter" op="probe" pool="coin"]') == (
        "refused", "unknown-attribute")  # PARTY-16: a party command leaves `who` out
    lone = GameState.new(GRAVE, ["Mira"])
    assert verdict(both, GRAVE, lone, '[sheet: sheet="party" op="probe" pool="coin"]') == (
        "refused", "unknown-sheet")  # no party sheet in this ruleset
    characters_only, _ = probe(required=("pool",))
    assert verdict(characters_only, BLADES, two, '[sheet: sheet="party" op="probe" pool="coin"]') == (
        "refused", "unsupported-op")  # DEC-13
    party_only, _ = probe(required=("pool",), party=True, character=False)
    assert verdict(party_only, BLADES, two, '[sheet: who="Cutter" op="probe" pool="coin"]') == (
        "refused", "unsupported-op")
    assert verdict(party_only, BLADES, two, '[sheet: sheet="party" op="probe" pool="coin"]')[0] == "ok"


def test_dec_9_the_attributes_an_op_takes(two):
    op, seen = probe(required=("pool",), optional=("amount",), choose_one=("by", "to"))
    tag = '[sheet: who="Cutter" op="probe" pool="stress"{}]'
    assert verdict(op, BLADES, two, tag.format(' by="1"')) == ("ok", "ran for Cutter")
    assert verdict(op, BLADES, two, tag.format(' to="1" amount="2"'))[0] == "ok"  # an optional one may come
    assert seen == [("Cutter", False)] * 2
    assert verdict(op, BLADES, two, tag.format(' by="1" colour="red"')) == ("refused", "unknown-attribute")
    assert verdict(op, BLADES, two, '[sheet: who="Cutter" op="probe" by="1"]') == ("refused", "missing-attribute")
    assert verdict(op, BLADES, two, tag.format("")) == ("refused", "missing-attribute")  # neither `by` nor `to`
    assert verdict(op, BLADES, two, tag.format(' by="1" to="2"')) == ("refused", "one-action")  # both
    plain, _ = probe()
    assert verdict(plain, BLADES, two, '[sheet: who="Cutter" op="probe"]') == ("ok", "ran for Cutter")
    assert verdict(plain, BLADES, two, '[sheet: who="Cutter" op="probe" pool="x"]') == (
        "refused", "unknown-attribute")


def test_party_17_who_names_one_character_the_party_or_no_one_when_there_is_one(two):
    op, seen = probe()
    assert verdict(op, BLADES, two, '[sheet: who="cutter" op="probe"]') == ("ok", "ran for Cutter")  # DEC-8
    assert verdict(op, BLADES, two, '[sheet: who="Nobody" op="probe"]') == ("refused", "unknown-character")
    assert verdict(op, BLADES, two, '[sheet: op="probe"]') == ("refused", "missing-attribute")  # two characters
    assert verdict(op, BLADES, two, '[sheet: who="party" op="probe"]') == (
        "ok", "Cutter ran for Cutter; Lurk ran for Lurk")  # DEC-10: each in turn
    assert seen == [("Cutter", False), ("Cutter", False), ("Lurk", False)]
    lone = GameState.new(GRAVE, ["Mira"])
    assert verdict(op, GRAVE, lone, '[sheet: op="probe"]') == ("ok", "ran for Mira")  # DESIGN.md section 5
    assert verdict(op, GRAVE, lone, '[sheet: who="Party" op="probe"]') == ("ok", "Mira ran for Mira")
    empty = GameState.new(GRAVE, [])
    assert verdict(op, GRAVE, empty, '[sheet: who="party" op="probe"]') == ("refused", "unknown-character")


def test_party_17_a_character_named_party_does_not_hide_the_party_word():
    """DEC-10 over DEC-8: `who="Party"` means every character, even when one of them is named Party."""
    op, seen = probe()
    s = GameState.new(BLADES, ["Party", "Ana"])
    assert verdict(op, BLADES, s, '[sheet: who="Party" op="probe"]') == ("ok", "Party ran for Party; Ana ran for Ana")
    assert seen == [("Party", False), ("Ana", False)]
