"""Hypothesis properties of apply_reply (1,000 examples each): idempotence (DEC-5), text outside tags
byte-identical, no exception for any text, clock invariants (CLOCK-4/5/12)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.state import GameState
from tagengine._internal.tags import narration, scan
from tagengine._internal.text import normalise

RS = load_sample("blades-like")
STATE = GameState.new(RS, ["Cutter", "Lurk"])
SETTINGS = settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.sampled_from(["Alarm raised", "alarm RAISED", "Tide", "The Duke's patience", "x" * 101, ""])
numbers = st.sampled_from(["1", "2", "-1", "+3", "6", "4", "8", "0", "1.5", "x", "-99"])
good_clock = st.builds(
    lambda n, action, v, q: "[clock: name=" + (f'"{n}"' if q else n.replace(" ", "_") or "a") + " "
    + (action if action == "clear" else f'{action}="{v}"') + "]",
    names, st.sampled_from(["size", "tick", "tick", "clear"]), numbers, st.booleans())
sheet_tag = st.builds(lambda who, op: f'[sheet: who="{who}" op="{op}" pool="stress" amount="1"]',
                      st.sampled_from(["Cutter", "Nobody"]), st.sampled_from(["spend", "restore", "fly"]))
fragments = st.sampled_from([
    '[clock: name="Alarm raised tick="1"]', "[sheet: who=Mira op=", "[clock:", "[", "]", '"', "\u201c", "\\",
    "[OOC: note]", "[link](http://x)", '[clock: name="A" size="6" result="ok" now="9/9"]', "\n", "\n\n", "\x00",
    '[clock: raw="x" result="refused" reason="malformed"]', '[clock: name="A" clear="yes"]', "[CLOCK :name=A tick=1]",
])
piece = st.one_of(st.text(max_size=40), good_clock, good_clock, sheet_tag, fragments)
replies = st.lists(piece, max_size=30).map("".join)


def gaps(text: str, spans: list[tuple[int, int]]) -> list[str]:
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return out


@SETTINGS
@given(replies)
def test_dec_5_idempotence(text):
    a = apply_reply(RS, STATE, text)
    b = apply_reply(RS, STATE, a.text)
    assert b.text == a.text
    assert b.state == a.state
    assert [(r.result, r.now, r.reason) for r in b.receipts] == [(r.result, r.now, r.reason) for r in a.receipts]


@SETTINGS
@given(replies)
def test_text_outside_tags_is_byte_identical(text):
    a = apply_reply(RS, STATE, text)
    found = [(f.start, f.end) for f in scan(text)]
    receipts = [(r.start, r.end) for r in a.receipts]
    assert gaps(text, found) == gaps(a.text, receipts)
    assert [(f.start, f.end) for f in scan(a.text)] == receipts  # receipts are exactly the tags of the output
    assert narration(a.text) == narration(text)


@SETTINGS
@given(st.text())
def test_no_exception_for_any_text(text):
    a = apply_reply(RS, STATE, text)
    assert isinstance(a.text, str)
    narration(text)


@SETTINGS
@given(st.lists(good_clock, max_size=60).map(" ".join))
def test_clock_invariants(text):
    cfg = RS.file.clocks
    a = apply_reply(RS, STATE, text)
    clocks = a.state.clocks
    assert len(clocks) <= cfg.max
    assert len({normalise(c.name) for c in clocks}) == len(clocks)
    for c in clocks:
        assert c.size in cfg.sizes and 0 <= c.filled <= c.size and 1 <= len(c.name) <= 100


def test_dec_6_ten_thousand_tags():
    text = '[clock: name="A" size="4"] ' + '[clock: name="A" tick="1"] ' * 10_000
    a = apply_reply(RS, STATE, text)
    assert len(a.receipts) == 10_001
    assert a.counts() == {"ok": 40, "refused": 9_961}
    assert a.state.clocks[0].filled == 4


def test_one_megabyte_reply_and_hostile_inputs():
    big = ("Prose with [OOC: decoys] and \u201cquotes\u201d. " * 25_000)[:1_000_000]
    a = apply_reply(RS, STATE, big + '[clock: name="A" size="4"]')
    assert a.text.startswith(big) and a.receipts[-1].result == "ok"
    for hostile in ("[" * 100_000, '[clock: name="' + '"' * 1_000_000, '[clock: name="' + "a" * 1_000_000,
                    "[clock: " + 'name="x" ' * 100_000 + "]", "[sheet:" * 50_000, "\x00" * 10_000 + "[clock:\x00]"):
        a = apply_reply(RS, STATE, hostile)
        assert gaps(hostile, [(f.start, f.end) for f in scan(hostile)]) == gaps(a.text, [(r.start, r.end)
                                                                                       for r in a.receipts])


def test_untagged_replies_are_untouched(untagged_replies):
    for text in untagged_replies:
        a = apply_reply(RS, STATE, text)
        assert a.text == text and a.receipts == () and narration(text) == text
