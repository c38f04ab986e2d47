"""Hypothesis: evaluating never raises for any state that loads; hidden things read as the spec says."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.errors import StateError
from tagengine._internal.sheet import view_character, view_party
from tagengine._internal.state import GameState

RULESETS = {n: load_sample(n) for n in ("ember-roads", "gravewatch", "fifth-like", "blades-like")}
SETTINGS = settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalar = st.one_of(st.none(), st.booleans(), st.integers(-200, 200), st.text(max_size=8),
                   st.sampled_from(["night", "dawn", "reckless", "tear", "knock", "strain", "sworn", "d8", "full"]))
json_value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)
keys = st.sampled_from(["watch", "level", "casting", "calling", "resolve", "oil", "grit", "hp", "harm", "strain",
                        "stance", "lantern", "gear", "scars", "features", "bulk", "packed", "levels", "penalty",
                        "nerve", "sinew", "brawn", "soothe", "dig", "marks", "overflow", "coin", "vault"])
shaped = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(keys, inner, max_size=5)), max_leaves=20)
parts = st.fixed_dictionaries({}, optional={
    "abilities": shaped, "skills": shaped, "fields": shaped, "lists": shaped})
live = st.fixed_dictionaries({}, optional={
    "pools": shaped, "temp": shaped, "tracks": shaped, "marks": shaped, "states": shaped, "conditions": shaped,
    "text": shaped, "rows": shaped})


@SETTINGS
@given(st.sampled_from(sorted(RULESETS)), parts, live, json_value)
def test_evaluation_never_raises_for_a_state_that_loads(name, card, live_doc, noise):
    rs = RULESETS[name]
    doc = {"format": "tagengine.state/1", "gameCharacterCards": {"Mira": card}, "rulesetLive": {"mira": live_doc,
           "$party": live_doc}, "gamePartySheet": {"fields": card.get("fields")}, "noise": noise}
    try:
        state = GameState.loads(rs, json.dumps(doc))
    except StateError:
        return
    sheet = view_character(rs, state, "Mira")
    view_party(rs, state)
    for p in sheet.pools:
        assert 0 <= p.cur <= p.max
    for w in sheet.wounds:
        assert w.filled <= w.length and w.overflow >= 0 and w.penalty <= 0
    for t in sheet.tracks:
        assert t.min <= t.value <= t.max


@SETTINGS
@given(st.sampled_from(["dawn", "dusk", "night", "noon", None]), st.integers(0, 9))
def test_hidden_pool_reads_zero_and_is_reported(watch, oil):
    from tagengine._internal.sheet import Eval

    rs = RULESETS["gravewatch"]
    state = GameState.new(rs, ["Mira"])
    card = {**state.cards["Mira"], "fields": {"watch": watch}}
    from tagengine._internal.state import LiveValues

    ev = Eval(rs, card, LiveValues(pools={"oil": oil}))
    oil_pool = rs.sheet.pools.get("oil")
    hidden = watch != "night"
    assert (ev.hidden(oil_pool) is not None) == hidden
    from tagengine._internal.ruleset.refs import ValueRefDef

    assert ev.read(ValueRefDef(livePool="oil")) == (0 if hidden else min(oil, 6))


def mira_states(rs, card, *live_docs):
    """A state of the character Mira per live document, each with `card`; None when one does not load."""
    states = []
    for live_doc in live_docs:
        doc = {"format": "tagengine.state/1", "gameCharacterCards": {"Mira": card}, "rulesetLive": {"mira": live_doc}}
        try:
            states.append(GameState.loads(rs, json.dumps(doc)))
        except StateError:
            return None
    return states


@SETTINGS
@given(st.sampled_from(sorted(RULESETS)), parts, live, live)
def test_a_cards_kept_check_numbers_are_those_its_live_values_give(name, card, live_a, live_b):
    """The check numbers of a sheet (kept by the card's object when they read no live value) are, for the same
    card object under any live values, those computed from that card and those live values."""
    from tagengine._internal.sheet import Eval
    from tagengine._internal.sheet.check_numbers import check_number
    from tagengine._internal.sheet.sheet_views import view_of

    rs, states = RULESETS[name], mira_states(RULESETS[name], card, live_a, live_b)
    if states is None:
        return
    the_card, s = states[0].cards["Mira"], rs.file.sheet
    for state in states:
        view = view_of(Eval(rs, the_card, state.live_of("Mira")), "Mira", by_card=True)
        ev = Eval(rs, the_card, state.live_of("Mira"))
        assert view.abilities == tuple(check_number(ev, "ability", a.id) for a in s.abilities)
        assert view.skills == tuple(check_number(ev, "skill", k.id) for k in s.skills)
        assert view.saves == tuple(check_number(ev, "save", k.id) for k in s.saves)


@SETTINGS
@given(st.sampled_from(sorted(RULESETS)), parts, live, live)
def test_a_cards_kept_part_and_block_lines_are_those_its_live_values_give(name, card, live_a, live_b):
    """PF-60: what a card decides (its fields, hidden elements, derived values and lists; `kept_part`, kept by the
    card's object unless a derived value reads a live value) and the reminder lines made of it (kept by the card
    while it keeps their parts) are, for one card object under any live values, what that card and those live
    values give read anew."""
    from tagengine._internal.prompt.template_data import character_block, character_entry, inert_block
    from tagengine._internal.sheet import Eval
    from tagengine._internal.sheet.sheet_views import view_of

    rs, lives = RULESETS[name], mira_states(RULESETS[name], card, live_a, live_b)
    if lives is None:
        return
    first = lives[0]
    again = first.with_live("Mira", replace(first.live_of("Mira")))  # new live values, equal to the first's
    for state in (first, first.with_live("Mira", lives[1].live_of("Mira")), again):  # one card object throughout
        assert state.cards["Mira"] is first.cards["Mira"]
        live_values = state.live_of("Mira")
        assert view_of(Eval(rs, first.cards["Mira"], live_values), "Mira", by_card=True) == \
            view_of(Eval(rs, first.cards["Mira"], live_values), "Mira")
        assert character_entry(rs, state, "Mira") == inert_block(character_block(rs, state, "Mira"))
