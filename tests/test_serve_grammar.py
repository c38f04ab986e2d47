"""`serve --grammar KIND` (docs/grammar.md, GR-5..GR-7): the turn's reply grammar reaches a fake upstream on
loopback in the field that kind of server reads; `off` (the default) adds no field; a request with its own
constraint, and a continued reply, get none."""

from __future__ import annotations

import json
import random

import openai
import pytest
from grammar_walk import walk
from serve_kit import Fake
from test_serve import SCRIPT, client, history, serving

from conftest import load_sample
from tagengine import GameState, apply_reply
from tagengine._internal.commands.reply_grammar import grammar_of, reply_grammar
from tagengine._internal.server.turn.grammar_field import CONSTRAINTS, GRAMMAR_KINDS

FIELDS = {"gbnf": "grammar", "llguidance": "grammar", "vllm": "structured_outputs", "sglang": "ebnf"}


def _sent(fake):
    return json.loads(fake.bodies[-1])


def test_the_cli_offers_the_kinds_the_server_knows():
    from tagengine._internal.cli.arguments import arg_parser

    p = arg_parser(["serve"])
    sub = next(a for a in p._actions if a.dest == "command").choices["serve"]
    grammar = next(a for a in sub._actions if a.dest == "grammar")
    assert tuple(grammar.choices) == GRAMMAR_KINDS and grammar.default == "off"


@pytest.mark.parametrize("stream", [False, True])
def test_off_adds_no_field(tmp_path, stream):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], []), stream=stream)
    sent = _sent(fake)
    assert not set(sent) & (set(FIELDS.values()) | CONSTRAINTS)


@pytest.mark.parametrize("kind", ["gbnf", "llguidance", "vllm", "sglang"])
def test_each_kind_sends_the_turns_grammar_in_its_field(tmp_path, kind):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, grammar=kind) as srv:
        c = client(srv)
        first = c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], [])).choices[0]
        c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one", "two"], [first.message.content]))
    rs = load_sample("blades-like")
    state = GameState.new(rs, ["Cutter", "Lurk"])
    form = "llguidance" if kind == "llguidance" else "gbnf"
    for raw in fake.bodies:
        sent = json.loads(raw)
        value = sent[FIELDS[kind]]
        text = value["grammar"] if kind == "vllm" else value
        assert text == reply_grammar(rs, state, form)  # the characters' names: the same grammar both turns
        assert set(sent) & set(FIELDS.values()) == {FIELDS[kind]}
    assert '"\\"Cutter\\""' in text


def test_a_request_with_its_own_constraint_keeps_it(tmp_path):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, grammar="gbnf") as srv:
        c = client(srv)
        c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], []),
                                  extra_body={"grammar": 'root ::= "x"'})
        assert _sent(fake)["grammar"] == 'root ::= "x"'
        c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], []),
                                  response_format={"type": "json_object"})
        assert "grammar" not in _sent(fake)


def test_a_continued_reply_gets_no_grammar(tmp_path):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, grammar="gbnf") as srv:
        c = client(srv)
        msgs = [*history("heist", ["one"], []), {"role": "assistant", "content": "The door [clock: name=\"Al"}]
        c.chat.completions.create(model="gpt-4o", messages=msgs)
    assert "grammar" not in _sent(fake)


def test_a_reply_cut_off_inside_a_tag_is_refused_and_kept_out_of_the_state(tmp_path):
    """`finish_reason: "length"` mid-tag, under any grammar: the half tag is refused `malformed` (DEC-3), the
    state does not change, and the player sees the rest of its line closed as a refused receipt."""
    rs = load_sample("blades-like")
    state = GameState.new(rs, ["Cutter", "Lurk"])
    g = grammar_of(rs, state)
    rnd = random.Random(5)
    cut = 0
    for _ in range(300):
        text = walk(g, rnd, most=10)
        opener = text.find("[sheet:")
        if opener < 0:
            opener = text.find("[clock:")
        if opener < 0:
            continue
        end = text.index("]", opener)
        half = text[:rnd.randint(opener + len("[sheet:"), end)]  # the token limit struck after the opener
        before = apply_reply(rs, state, text[:opener])
        out = apply_reply(rs, state, half)
        assert out.state == before.state
        last = out.receipts[-1]
        assert (last.result, last.reason) == ("refused", "malformed")
        assert out.text.rstrip(" \t").endswith('result="refused" reason="malformed"]')  # blanks stay prose
        cut += 1
    assert cut > 50


def test_a_cut_reply_through_the_server(tmp_path):
    """The same through `serve --grammar gbnf`: the upstream's reply ends mid-tag (as a token limit leaves it)."""
    script = dict(SCRIPT, cut='The guard turns. [clock: name="Alarm raised" si')
    fake = Fake(script)
    with serving(tmp_path, fake, grammar="gbnf") as srv:
        c = client(srv)
        got = c.chat.completions.create(model="gpt-4o", messages=history("heist", ["cut"], []))
    text = got.choices[0].message.content
    assert text.startswith("The guard turns. [clock:") and 'reason="malformed"' in text
    assert "grammar" in _sent(fake)


def test_the_upstream_refusing_the_field_is_its_answer(tmp_path):
    """A server that does not take the field answers as it does; the middleware passes its error on."""
    fake = Fake(SCRIPT, mode="500")
    with serving(tmp_path, fake, grammar="vllm") as srv:
        c = client(srv)
        with pytest.raises(openai.APIStatusError):
            c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], []))
