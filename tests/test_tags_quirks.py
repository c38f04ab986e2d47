"""What real models write that the reader forgives (docs/tags.md, GR-9..GR-11): single-quoted values, commas
between attributes, a markdown-escaped tag `\\[...\\]`; each read as the tag it plainly is, its receipt written in
the canonical form, and the engine applied to its own output changes nothing. What is still not forgiven stays
`malformed`."""

from __future__ import annotations

import pytest
from cmdkit import sample_state

from conftest import load_sample
from tagengine import apply_reply
from tagengine._internal.stream import StreamFilter
from tagengine._internal.tags import narration
from tagengine._internal.tags.parse import _lexed, judged_by_lark, verdict

CLOCK = 'x [clock: name="{}" size="4" result="ok" now="0/4"] y'
FORGIVEN = {
    # single quotes (DEC-2 spoke of double and typographic ones): the clock is `Patrol`, not `'Patrol'`
    "x [clock: name='Patrol' size='4'] y": CLOCK.format("Patrol"),
    "x [clock: name='It's late' size='4'] y": CLOCK.format("It's late"),  # an apostrophe inside stays
    "x [clock: name='Patrol', size=4] y": CLOCK.format("Patrol"),
    # commas between attributes, a JSON habit
    'x [clock: name="Comma", size="4"] y': CLOCK.format("Comma"),
    'x [clock: name="Comma" , size="4",] y': CLOCK.format("Comma"),
    'x [clock: name="Comma",size=4] y': CLOCK.format("Comma"),
    # markdown-escaped brackets: the receipt is canonical; the `\\` before it is the reply's own text
    'x \\[clock: name="Esc" size="4"\\] y': "x \\" + CLOCK.format("Esc")[2:],
    "x \\[clock: name='Esc', size=4\\] y": "x \\" + CLOCK.format("Esc")[2:],
    # a backslash inside a bare value stays there, as before the escaped `\\]`: only a `\\` before `]` closes
    "x [clock: name=Alarm\\Bell size=4] y": CLOCK.format("Alarm\\\\Bell"),
    "x [clock: name=C:\\Maps size=4\\] y": CLOCK.format("C:\\\\Maps"),
}
NOT_FORGIVEN = [
    "x [clock: name='Rock 'n' roll' size='4'] y",  # a quote then a blank inside single quotes ends the value
    'x [clock: name="Esc" size="4"\\\\] y',  # two backslashes before the bracket
    "x [clock: name=`Tick` size=4] y",  # backticks are no quotes: the value keeps them (bad-name below)
    "x [clock; name=\"Semi\" size=4] y",  # not an opener at all: prose
]


@pytest.mark.parametrize("reply", sorted(FORGIVEN))
def test_a_forgiven_shape_is_read_as_the_tag_it_plainly_is(reply):
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    out = apply_reply(rs, state, reply)
    assert out.text == FORGIVEN[reply]
    assert [r.result for r in out.receipts] == ["ok"]
    assert apply_reply(rs, state, out.text).text == out.text  # its own output, read again, changes nothing


@pytest.mark.parametrize("reply", sorted(FORGIVEN))
def test_the_regular_expression_and_lark_agree_on_each(reply):
    start = reply.index("[")
    end = reply.index("]", start) + 1
    fast = _lexed(reply[start:end])  # the regular expression's own verdict: None would leave it to Lark
    assert fast is not None and fast == verdict(reply[start:end]) == judged_by_lark(reply[start:end])


@pytest.mark.parametrize("reply", sorted(FORGIVEN))
def test_the_stream_shows_what_the_narration_shows(reply):
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    f = StreamFilter(rs, state)
    shown = "".join(f.feed(c) for c in reply) + f.finish()[0]
    assert shown == narration(reply)


def test_what_is_not_forgiven():
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    rock, doubled, ticks, semi = (apply_reply(rs, state, r) for r in NOT_FORGIVEN)
    assert [r.reason for r in rock.receipts] == ["malformed"]
    assert [r.reason for r in doubled.receipts] == ["malformed"]
    assert ticks.receipts[0].attrs[0] == ("name", "`Tick`")
    assert semi.receipts == () and semi.text == NOT_FORGIVEN[3]


def test_single_quotes_before_were_kept_in_the_value():
    """The defect as the issue found it: `name='Patrol'` made a clock called `'Patrol'` and `size='4'` was
    refused `invalid-amount`. Now neither."""
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    out = apply_reply(rs, state, "[clock: name='Patrol' size='4']")
    assert [c.name for c in out.state.clocks][-1] == "Patrol"
    assert out.receipts[0].reason is None
