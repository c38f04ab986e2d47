"""The grammar of a reply (docs/grammar.md): what it writes, the engine reads with no `malformed` and none of the
refusals it rules out, for every sample ruleset; it is generated from the command table, so a new tag kind (the
house's `probe`) has one with no code of its own; its three written forms agree."""

from __future__ import annotations

import random
import sys
import types

import pytest
from cmdkit import sample_state
from grammar_walk import walk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine import apply_reply
from tagengine._internal.commands import reasons
from tagengine._internal.commands import table as table_module
from tagengine._internal.commands.family import Family, Op
from tagengine._internal.commands.reply_grammar import RULED_OUT, grammar_of, reply_grammar
from tagengine._internal.commands.result import Outcome, ok
from tagengine._internal.tags import vocabulary as voc

SAMPLES = ("blades-like", "ember-roads", "fifth-like", "gravewatch")


def _refusals(out):
    for r in out.receipts:
        if r.result in ("refused", "partial"):
            for part in (r.reason or "").split("; "):
                yield r, part.rsplit(": ", 1)[-1]


def _ruled_out_met(rs, state, text):
    out = apply_reply(rs, state, text)
    bad = []
    for r, reason in _refusals(out):
        if reason == "unknown-pool" and "row" in dict(r.attrs):
            continue  # a row's name is free text: the engine judges it (docs/grammar.md)
        if reason in RULED_OUT:
            bad.append((r.name, r.attrs, reason))
    return out, bad


def test_ruled_out_reasons_are_the_tables():
    assert set(reasons.REASONS) >= RULED_OUT


@pytest.mark.parametrize("name", SAMPLES)
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_what_the_grammar_writes_is_read_with_no_refusal_it_rules_out(name, seed):
    rs, state = load_sample(name), sample_state(name)
    text = walk(grammar_of(rs, state), random.Random(seed))
    _, bad = _ruled_out_met(rs, state, text)
    assert not bad, (text, bad)


@pytest.mark.parametrize("name", SAMPLES)
def test_every_tag_the_grammar_writes_applies(name):
    """Each alternative of `tag` once, written alone: a tag, read as one, none refused for a reason ruled out."""
    rs, state = load_sample(name), sample_state(name)
    g = grammar_of(rs, state)
    tag_rule = next(r for r in g.rules if r.name == "tag")
    from tagengine._internal.tags.grammar_forms import Grammar, Rule
    rnd = random.Random(7)
    for alt in tag_rule.alts:
        one = Grammar((Rule("one", (alt,)), *g.rules))
        text = walk(one, rnd)
        out, bad = _ruled_out_met(rs, state, text)
        assert len(out.receipts) == 1 and not bad, (text, bad)


@pytest.mark.parametrize("name", SAMPLES)
def test_the_lark_form_reads_what_the_grammar_writes(name):
    from lark import Lark

    rs, state = load_sample(name), sample_state(name)
    parser = Lark(reply_grammar(rs, state, "lark"), parser="earley", lexer="dynamic")
    g = grammar_of(rs, state)
    rnd = random.Random(3)
    for _ in range(15):
        parser.parse(walk(g, rnd, most=6))
    from lark.exceptions import LarkError
    for wrong in ('[sheet: who="Nobody" op="spend" pool="x"]', "[clock: name='x' size=4]", "[Sheet: "):
        with pytest.raises(LarkError):
            parser.parse(wrong)


def test_the_forms_are_text_in_their_own_syntax():
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    gbnf = reply_grammar(rs, state)
    assert gbnf.startswith("root ::= ") and "::=" in gbnf.splitlines()[-1]
    assert reply_grammar(rs, state, "llguidance").startswith("%llguidance {}\n")
    assert reply_grammar(rs, state, "lark").startswith("start: ")
    with pytest.raises(ValueError):
        reply_grammar(rs, state, "json")


def test_names_come_from_the_state_and_ruleset():
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    gbnf = reply_grammar(rs, state)
    for name in state.cards:
        assert f'"\\"{name}\\""' in gbnf
    assert '"\\"Stress\\""' in gbnf and "edit" not in gbnf.split("brk-0")[0]  # the model never writes an edit receipt


def test_a_grammar_is_kept_per_ruleset_and_names():
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    assert reply_grammar(rs, state) is reply_grammar(rs, state)


def test_a_new_kind_gets_its_grammar_with_no_code(monkeypatch):
    """The house's `probe` kind (tests/test_tag_kinds.py): a row and a family, no Shape: the grammar writes it
    with the tag syntax, and the engine applies what it writes."""
    from tagengine._internal.commands import dispatch
    from tagengine._internal.tags.scan import found_in

    module = types.ModuleType("tagengine._internal.commands.probe")
    module.FAMILY = Family.of("probe", lambda rs, tag: "echo", (Op("echo", lambda rs, s, tag: Outcome(ok("x"), s)),))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    kinds = (*voc.TAG_KINDS, voc.TagKind("probe", "probe"))
    extended = voc.vocabulary(tuple(k.name for k in kinds))
    monkeypatch.setattr(table_module, "TAG_KINDS", kinds)
    monkeypatch.setattr(dispatch, "found_in", lambda text: found_in(text, extended))
    table_module.families.cache_clear()
    table_module.family_of.cache_clear()
    try:
        rs, state = load_sample("blades-like"), sample_state("blades-like")
        g = grammar_of(rs, state)
        assert "[probe:" in g.write("gbnf") and "brk-probe" in g.write("gbnf")
        rnd = random.Random(11)
        seen = 0
        for _ in range(200):
            text = walk(g, rnd, most=8)
            out, bad = _ruled_out_met(rs, state, text)
            assert not bad, (text, bad)
            seen += sum(r.name == "probe" for r in out.receipts)
        assert seen
    finally:
        table_module.families.cache_clear()
        table_module.family_of.cache_clear()
