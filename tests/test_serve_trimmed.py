"""Issue 12 item 4: a history whose oldest messages the chat app dropped (S-15). The newest reply with
receipts that the store knows by its content, at one state only, gives the state; else the state is
rebuilt from the campaign's start and the x-tagengine-history header says the history was incomplete."""

from __future__ import annotations

from serve_kit import Fake
from test_serve import CREW, SCRIPT, client, expected, history, serving

SCRIPTS = {**SCRIPT, "calm": 'All quiet. [clock: name="Alarm raised" size="8"] [clock: name="Dawn" size="4"]'}


def turn(c, msgs):
    raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
    return raw.parse().choices[0].message.content, raw.headers.get("x-tagengine-history")


def test_a_trimmed_history_resumes_at_a_reply_the_store_knows(tmp_path):
    with serving(tmp_path, Fake(SCRIPTS)) as srv:
        c = client(srv)
        stored = []
        for n in range(3):
            stored.append(turn(c, history("heist", ["one", "two", "three"][:n + 1], stored))[0])
        full = history("heist", ["one", "two", "three", "tick"], stored)
        want, note = turn(c, full)
        assert note is None
        trimmed = [full[0], *full[3:]]  # the app dropped turn 1 and its reply (the clock was made there)
        got, note = turn(c, trimmed)
        assert got == want and note is not None and note.startswith("resumed")
        # without the store's help the same trimmed history gives another answer: the test can fail
        rebuilt = expected("heist", [*stored[1:], SCRIPT["tick"]])[0][2]
        assert rebuilt != want


def test_an_ambiguous_reply_is_not_used_and_the_rebuild_is_said(tmp_path):
    a = expected("heist", [SCRIPTS["alt"], SCRIPTS["tick"]])
    b = expected("heist", [SCRIPTS["calm"], SCRIPTS["tick"]])
    assert a[0][1] == b[0][1] and a[1] != b[1]  # the same reply text at two different states
    with serving(tmp_path, Fake(SCRIPTS)) as srv:
        c = client(srv)
        for first in ("alt", "calm"):
            stored = [turn(c, history("heist", [first], []))[0]]
            stored.append(turn(c, history("heist", [first, "tick"], stored))[0])
            assert stored[1] == a[0][1]
        msgs = history("heist", [first, "tick", "tick"], stored)
        trimmed = [msgs[0], *msgs[3:]]
        got, note = turn(c, trimmed)
        assert note is not None and note.startswith("incomplete")
        assert got == expected("heist", [stored[1], SCRIPTS["tick"]])[0][1]  # the rebuild from the start
        _, again = turn(c, trimmed)  # nothing from the guess was kept: the next request says it again
        assert again is not None and again.startswith("incomplete")
        # the unambiguous chat still resumes
        full = history("heist", ["one", "tick"], expected("heist", [CREW[0]])[0])
        assert turn(c, full)[1] is None
