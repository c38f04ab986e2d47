"""Issue 12: continue (an assistant prefill, SillyTavern's "Continue"), S-17. The prefill and what the model
adds are one reply: its tags apply together from the state before the prefill, the response carries only
the continuation, and the chat app's text (prefill + response) is what apply_reply gives for the whole."""

from __future__ import annotations

import json

import pytest
from serve_kit import Fake
from test_serve import CREW, SCRIPT, ask, client, expected, history, serving

from tagengine._internal.tags import narration

ONE = CREW[0]  # 'The lock gives with a dry click. Somewhere above, ...\n[clock: name="Alarm raised" ...'
BEGUN = ONE[:ONE.index('size="6"')]  # ends inside the clock tag


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("prefill", ["The lock gives with a dry click. ",  # prose: the tags come in the continuation
                                     BEGUN])  # a tag begun in the prefill
def test_continue_applies_prefill_and_continuation_as_one_reply(tmp_path, stream, prefill):
    assert ONE.startswith(prefill)
    fake = Fake(SCRIPT)
    whole, _ = expected("heist", [ONE])
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        msgs = [*history("heist", ["one"], []), {"role": "assistant", "content": prefill}]
        got = ask(c, msgs, stream)
        sent = json.loads(fake.bodies[-1])["messages"]
        assert sent[-1] == {"role": "assistant", "content": prefill}  # after the reminder: the model goes on
        assert prefill + got == whole[0]
        assert 'size="6" result="ok" now="0/6"]' in got  # the clock made once, its receipt in the continuation
        # the next turn reads the chat app's text: the state after the whole reply, from the store
        raw = c.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history("heist", ["one", "tick"], [prefill + got]))
        assert "x-tagengine-history" not in raw.headers
        assert raw.parse().choices[0].message.content == expected("heist", [ONE, SCRIPT["tick"]])[0][1]
        assert 'now="1/6"' in raw.parse().choices[0].message.content


def test_continue_with_hidden_tags_maps_the_whole_narration_back(tmp_path):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, hide_tags=True) as srv:
        c = client(srv)
        prefill = "The lock gives with a dry click. "
        got = ask(c, [*history("heist", ["one"], []), {"role": "assistant", "content": prefill}], True)
        assert prefill + got == narration(ONE)
        ask(c, history("heist", ["one", "tick"], [prefill + got]), False)
        sent = [m["content"] for m in json.loads(fake.bodies[-1])["messages"] if m["role"] == "assistant"]
        assert sent == [expected("heist", [ONE])[0][0]]  # the tagged reply, receipts in it
