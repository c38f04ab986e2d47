"""Issue 12: the streamed reply, split anywhere, puts together exactly apply_reply's text (receipts in the
tags), and the chain gives the same state from the store or from a replay."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_kit import heist_store
from test_golden_replies import start

from conftest import GOLDEN, SAMPLES, examples
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.memory import chain
from tagengine._internal.server.memory.chain import Chain
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.turn.receipts import ReceiptStream

CASES = sorted((GOLDEN / "replies").glob("*.in.md"))
TRICKY = ['a [b [sheet: who="Cutter" op="spend" pool="stress" amount="1"', '[clock: name="X\n" size=4] after [ '
          '[clock: name="Y" size="3"]]]', "[[[", "x]y[clock: name=Z size=2", "", "[clock: name=\"Q\" size=\"4\"]\n",
          '[clock: name="A" size="8"] ' + '[clock: name="A" tick="1"] [clock: oops\n' * 45]  # DEC-6: 40 a reply


def stream(rs, state, text, rng):
    f = ReceiptStream(rs, state)
    out, i = [], 0
    while i < len(text):
        j = i + rng.randint(1, 12)
        out.append(f.feed(text[i:j]))
        i = j
    rest, applied = f.finish()
    return "".join([*out, rest]), applied


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".in.md") for c in CASES])
def test_streamed_receipts_equal_apply_reply_for_every_golden_reply(case):
    rs, state = start(case.name.removesuffix(".in.md"))
    text = case.read_text(encoding="utf-8")
    want = apply_reply(rs, state, text)
    rng = random.Random(case.name)
    for _ in range(40):
        got, applied = stream(rs, state, text, rng)
        assert got == want.text
        assert applied.state == want.state


def test_tags_are_held_until_they_close_and_prose_passes_at_once():
    rs, state = start("clocks")
    f = ReceiptStream(rs, state)
    assert f.feed("The door creaks. ") == "The door creaks. "
    assert f.feed('[clock: name="Alarm" ') == ""
    assert f.feed('size="4"]') == '[clock: name="Alarm" size="4" result="ok" now="0/4"]'
    assert f.feed(" Then") == " Then"


@pytest.mark.parametrize("text", TRICKY)
def test_streamed_receipts_for_unclosed_and_nested_brackets(text):
    rs, state = start("clocks")
    got, applied = stream(rs, state, text, random.Random(text))
    want = apply_reply(rs, state, text)
    assert got == want.text and applied.state == want.state
    assert ("command-limit" in got) == (text.count("tick") > 40)


def test_each_part_of_a_streamed_reply_is_applied_once(monkeypatch):
    """Linear work however the reply is split: the parts applied add up to the reply, no more."""
    from tagengine._internal.server.turn import receipts

    rs, state = start("clocks")
    text = ('Prose [clock: name="A" size="8"] more [clock: name="A" tick="1"] [[x] ' * 50) + "[clock: open"
    sizes = []
    real = receipts.apply_part

    def counted(rs, st, part, n):
        sizes.append(len(part))
        return real(rs, st, part, n)

    monkeypatch.setattr(receipts, "apply_part", counted)
    got, _ = stream(rs, state, text, random.Random(3))
    assert got == apply_reply(rs, state, text).text
    assert sum(sizes) <= len(text)


@pytest.fixture
def campaign(tmp_path):
    yield from heist_store(tmp_path)


def crew_night(rs, state):
    """The bundled transcript as a chat app stores it: each reply with its receipts."""
    out = []
    for m in json.loads((SAMPLES / "transcripts" / "crew-night.jsonl").read_text().splitlines()[0])["messages"]:
        if m["role"] == "assistant":
            a = apply_reply(rs, state, m["content"])
            state, m = a.state, {"role": "assistant", "content": a.text}
        out.append(m)
    return out, state


def test_state_from_the_store_equals_the_replay_from_the_start(campaign, tmp_path):
    store, c = campaign
    ch = Chain(store)
    messages, final = crew_night(c.rs, c.start)
    cold = ch.state_of(c, messages)
    assert cold.replayed == 3 and cold.consistent and cold.state == final
    warm = ch.state_of(c, messages)
    assert warm.replayed == 0 and warm.state == final and warm.key == cold.key
    assert ch.state_of(c, messages[:3]).replayed == 0  # every snapshot on the way was kept
    fresh = Store(tmp_path / "other")  # the database deleted: same result
    assert Chain(fresh).state_of(c, messages).state == final
    fresh.close()


def test_a_reply_the_chat_app_trimmed_is_the_same_turn(campaign):
    """S-23: SillyTavern trims white space around a reply before it stores it ("Trim spaces", on by default);
    the trimmed reply keys the same snapshot, so the next turn replays nothing."""
    store, c = campaign
    ch = Chain(store)
    messages, final = crew_night(c.rs, c.start)
    padded = [{**m, "content": f"\n{m['content']}  \n\n"} if m["role"] == "assistant" else m for m in messages]
    assert ch.state_of(c, padded).replayed == 3  # as the model sent them: padded
    trimmed = [{**m, "content": m["content"].strip()} for m in padded]  # as the chat app stored them
    warm = ch.state_of(c, trimmed)
    assert warm.replayed == 0 and warm.state == final


def test_a_history_missing_its_oldest_reply_is_reported_inconsistent(campaign, caplog):
    store, c = campaign
    ch = Chain(store)
    messages, _ = crew_night(c.rs, c.start)
    broken = ch.state_of(c, messages[2:])  # the store knows none of its replies yet
    assert not broken.consistent and broken.notes == (chain.INCOMPLETE,)
    assert "do not match a replay" in caplog.text
    assert store.known([broken.key]) is None  # a guess is never kept: the next request says it again
    full = ch.state_of(c, messages)
    assert full.consistent
    # S-15: now the store knows reply 2 by its content, at one state: the trimmed history resumes there
    trimmed = ch.state_of(c, messages[2:])
    assert trimmed.consistent and trimmed.state == full.state and trimmed.key == full.key
    assert trimmed.notes[0].startswith("resumed")


def test_a_reply_without_receipts_is_not_a_sign_of_a_broken_history(campaign):
    store, c = campaign
    ch = Chain(store)
    raw = [{"role": "assistant", "content": '[clock: name="Alarm" size="4"]'}]
    assert ch.state_of(c, raw).consistent


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(["result", "=", '"', " ", "\t", "x", "_", "1", "é", "٠", "·", "-", "[", "re",
                                 'result="', "Result"]), max_size=12).map("".join))
def test_pf_63_a_receipt_is_found_as_the_pattern_with_its_word_boundary_finds_it(text):
    """PF-63: `has_receipts` looks for the pattern's literal first and reads the word boundary itself; it says what
    `\\bresult\\s*=\\s*"` says, Unicode word characters (Arabic-Indic digits, accented letters) and `_` included."""
    assert chain.has_receipts(text) is (re.search(r'\bresult\s*=\s*"', text) is not None)


def test_pf_63_a_receipt_is_a_word_of_its_own():
    assert chain.has_receipts('ok [sheet: op="spend" result="ok"]') and not chain.has_receipts('xresult="ok"')
