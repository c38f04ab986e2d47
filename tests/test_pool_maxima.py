"""A lowered maximum clamps what a pool holds (PARTY-20: party pools follow character-pool arithmetic)."""

from __future__ import annotations

import json

from cmdkit import run, sample_state, with_live

from conftest import load_sample
from tagengine._internal.commands.party_save import save_party
from tagengine._internal.commands.pools import clamp_maxima
from tagengine._internal.sheet import view_character, view_party
from tagengine._internal.state import PARTY, GameState

BLADES, FIFTH = load_sample("blades-like"), load_sample("fifth-like")


def coin(state):
    p = next(p for p in view_party(BLADES, state).pools if p.id == "coin")
    return f"{p.cur}/{p.max}"


def test_party_20_lowered_vault_clamps_coin_and_raising_it_adds_no_coin():
    s = sample_state("blades-like")  # coin 3 of vault 8
    a, res = run(BLADES, s, '[sheet: sheet="party" op="restore" pool="coin" amount="5"]'
                            '[sheet: sheet="party" op="advance" field="vault" to="3"]'
                            '[sheet: sheet="party" op="spend" pool="coin" amount="4"]'
                            '[sheet: sheet="party" op="advance" field="vault" to="8"]'
                            '[sheet: sheet="party" op="spend" pool="coin" amount="4"]')
    assert res == [("ok", "8/8"), ("ok", "3"), ("refused", "insufficient"), ("ok", "8"), ("refused", "insufficient")]
    assert coin(a.state) == "3/8"
    assert a.state.live_of(PARTY).pools == {"coin": 3}


def test_party_20_advance_that_raises_the_max_changes_no_pool():
    s = sample_state("blades-like")
    a, res = run(BLADES, s, '[sheet: sheet="party" op="advance" field="vault" by="2"]')
    assert res == [("ok", "10")] and coin(a.state) == "3/10"
    assert a.state.live_of(PARTY) == s.live_of(PARTY)


def test_party_20_an_empty_pool_at_its_start_stays_unstored():
    s = with_live(BLADES, sample_state("blades-like"), **{"$party": {}})  # coin back at its start: empty
    a, _ = run(BLADES, s, '[sheet: sheet="party" op="advance" field="vault" to="0"]'
                          '[sheet: sheet="party" op="advance" field="vault" to="8"]')
    assert coin(a.state) == "0/8" and a.state.live_of(PARTY).pools == {}  # nothing held above 0: nothing written


def test_party_20_saved_party_sheet_clamps_too():
    s = sample_state("blades-like")
    a, _ = run(BLADES, s, '[sheet: sheet="party" op="restore" pool="coin" amount="5"]')
    low = save_party(BLADES, a.state, {**a.state.party_sheet, "fields": {**a.state.party_sheet["fields"], "vault": 2}},
                     a.state.party_revision)
    assert coin(low) == "2/2"
    high = save_party(BLADES, low, {**low.party_sheet, "fields": {**low.party_sheet["fields"], "vault": 8}},
                      low.party_revision)
    assert coin(high) == "2/8"


def card_with(state, rs, name, **fields):
    doc = state.to_json()
    doc["gameCharacterCards"][name]["fields"].update(fields)
    return GameState.loads(rs, json.dumps(doc))


def hd(state, pid="hd_d8"):
    p = next(p for p in view_character(FIFTH, state, "Vess").pools if p.id == pid)
    return f"{p.cur}/{p.max}"


def test_party_20_character_pool_whose_max_reads_a_field():
    """Character pools: a card edit lowers `levels_d8` (the hit dice pool's max); the chat app passes the
    states before and after the edit to `clamp_maxima`, so raising it back does not refill the pool."""
    s = with_live(FIFTH, sample_state("fifth-like"), vess={"pools": {"hd_d8": 3}})  # full: 3/3
    low = clamp_maxima(FIFTH, s, card_with(s, FIFTH, "Vess", levels_d8=1))
    assert hd(low) == "1/1" and low.live_of("Vess").pools["hd_d8"] == 1
    high = clamp_maxima(FIFTH, low, card_with(low, FIFTH, "Vess", levels_d8=3))
    assert hd(high) == "1/3"
    assert hd(high, "hp") == hd(s, "hp")  # other pools untouched


def test_party_20_a_full_pool_at_its_start_is_written_when_its_max_falls():
    s = with_live(FIFTH, sample_state("fifth-like"), vess={})  # every pool at its start: hit dice d8 3/3
    low = clamp_maxima(FIFTH, s, card_with(s, FIFTH, "Vess", levels_d8=1))
    assert low.live_of("Vess").pools == {"hd_d8": 1}  # the others did not fall below what they held
    assert hd(clamp_maxima(FIFTH, low, card_with(low, FIFTH, "Vess", levels_d8=3))) == "1/3"


def test_party_20_without_the_clamp_a_card_edit_is_read_clamped():
    """A max changed outside the engine reads clamped, and the next command writes the clamped value."""
    s = with_live(FIFTH, sample_state("fifth-like"), vess={"pools": {"hd_d8": 3}})
    low = card_with(s, FIFTH, "Vess", levels_d8=1)
    assert hd(low) == "1/1"
    a, res = run(FIFTH, low, '[sheet: who="Vess" op="spend" pool="hd_d8" amount="0"]')
    assert res == [("ok", "1/1")] and a.state.live_of("Vess").pools["hd_d8"] == 1


def test_party_20_clamp_leaves_the_state_it_was_given():
    s = sample_state("blades-like")
    before = s.dumps()
    run(BLADES, s, '[sheet: sheet="party" op="restore" pool="coin" amount="5"]'
                   '[sheet: sheet="party" op="advance" field="vault" to="3"]')
    assert s.dumps() == before
