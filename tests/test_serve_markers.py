"""Issue 26 item 14 (TR-8): a near-miss campaign marker (another case, quotes or spaces: a no-break space) is
not read, so the request goes on as it would have (the default campaign, or passed through), but it is said:
`x-tagengine-warning` on the answer and a line in the log. A real server on loopback, a scripted upstream."""

from __future__ import annotations

import json
import logging
import sys

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_kit import Fake
from test_serve import SCRIPT, serving

from conftest import examples
from tagengine._internal.server import limits
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.limits import LOOP_CHARS
from tagengine._internal.server.turn import request
from tagengine._internal.server.turn.request import (
    MARKER,
    NEAR_LONGEST,
    NEAR_MARKER,
    near_miss,
    read_marked,
    read_marked_within,
    unmarked,
)

NEAR = ["[TAGENGINE: campaign='heist']", '[tagengine:\u00a0campaign="heist"]', '[Tagengine: campaign="heist"]',
        '[tagengine: campaign=\u201cheist\u201d]', '[tagengine campaign="heist"]']


def ask(url: str, system: str, stream: bool = False) -> httpx.Response:
    body = {"model": "m", "stream": stream, "messages": [{"role": "system", "content": f"You are the GM. {system}"},
                                                         {"role": "user", "content": "TURN:one"}]}
    with httpx.Client(timeout=30) as h:
        if not stream:
            return h.post(f"{url}/v1/chat/completions", json=body)
        with h.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
            r.read()
            return r


@pytest.mark.parametrize("marker", NEAR)
def test_a_near_miss_marker_is_warned_in_a_header_and_the_log(tmp_path, caplog, marker):
    caplog.set_level(logging.WARNING, "tagengine.serve")
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, campaign="heist") as srv:
        r = ask(srv.url, marker)
        assert r.status_code == 200 and r.headers["x-tagengine-campaign"] == "heist"  # the default, as before
        warning = r.headers["x-tagengine-warning"]
        assert "a campaign marker was not read" in warning and ascii(marker) in warning
        assert 'write it [tagengine: campaign="NAME"]' in warning
        sent = json.loads(fake.bodies[-1])["messages"]
        assert any(marker in m["content"] for m in sent)  # goes to the model as it is: said, not guessed
    logged = [rec.getMessage() for rec in caplog.records if "was not read" in rec.getMessage()]
    assert len(logged) == 1 and "plays campaign heist" in logged[0]


def test_without_a_default_the_near_miss_passes_through_with_the_warning(tmp_path, caplog):
    caplog.set_level(logging.WARNING, "tagengine.serve")
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake) as srv:
        for stream in (False, True):
            r = ask(srv.url, NEAR[0], stream)
            assert r.status_code == 200 and "x-tagengine-campaign" not in r.headers
            assert ascii(NEAR[0]) in r.headers["x-tagengine-warning"]
    assert sum("passes through" in rec.getMessage() for rec in caplog.records) == 2


def test_a_marker_as_written_and_text_in_a_reply_say_nothing(tmp_path):
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        r = ask(srv.url, '[tagengine: campaign="heist"]')
        assert r.headers["x-tagengine-campaign"] == "heist" and "x-tagengine-warning" not in r.headers
    quoted = [{"role": "assistant", "content": NEAR[0]}, {"role": "user", "content": "a [tag] and [TAGENGINE] alone"}]
    assert read_marked(quoted).near_miss is None  # a model's reply cannot name a campaign; no `campaign` word
    both = [{"role": "system", "content": f'[tagengine: campaign="heist"] {NEAR[1]}'}]
    got = read_marked(both)
    assert (got.campaign, got.near_miss) == ("heist", NEAR[1])


def test_a_replys_text_counts_for_the_event_loop_only_when_it_holds_a_markers_start():
    """What `read_marked` scans with a regular expression decides where it runs (SEC-11, LOOP_CHARS): a system or
    user message's text (the near-miss scan) and a reply's only when it holds `[tagengine:` (the marker taken
    out); a reply without it is searched for that literal alone, so a long chat's replies keep the read on the
    event loop, where a worker thread's hop would cost more than the read. The read that counts is the read
    itself (`read_marked_within`, PF-32): None past the bound, the whole read within it, both sides of it."""
    brackets = "[" * 50_000
    long_replies = [{"role": "assistant", "content": brackets}, {"role": "user", "content": "go on"}]
    assert read_marked_within(long_replies, 5) == read_marked(long_replies)
    assert read_marked_within(long_replies, 4) is None
    assert read_marked_within([{"role": "user", "content": brackets}], 50_000) is not None
    assert read_marked_within([{"role": "user", "content": brackets}], 49_999) is None
    marked = "[tagengine: x] " * 10
    parts = [{"type": "text", "text": "ab"}, {"type": "text", "text": "cde"}]
    both = [{"role": "assistant", "content": marked}, {"role": "user", "content": parts}]
    assert read_marked_within(both, len(marked) + 5) == read_marked(both)
    assert read_marked_within(both, len(marked) + 4) is None
    near = [{"role": "user", "content": NEAR[0]}]  # a near miss goes the long way, and is counted once
    assert read_marked_within(near, len(NEAR[0])) == read_marked(near)
    assert read_marked_within(near, len(NEAR[0]) - 1) is None
    assert read_marked([{"role": "assistant", "content": brackets}]).near_miss is None


PIECES = ["[", "]", "tag", "TAG", "engine", "engıne", "ENGİNE", "campaign", "campaıgn", "CAMPAİGN", "Campaign", ":",
          " ", "\u00a0", "=", '"', "'", "\u201c", "heist", "[tagengine:", "-", "\n", "x", *NEAR, "[tag engıne campaıgn",
          "[TAG-ENGİNE CAMPAİGN", '[tagengine: campaign="heist"]']
ROLES = ["user", "system", "assistant", "Assistant", "tool", "narrator", "USER"]


@st.composite
def chats(draw: st.DrawFn) -> list[object]:
    def text() -> str:
        return "".join(draw(st.lists(st.sampled_from(PIECES), max_size=12)))

    out: list[object] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:  # what is not a message, or a message of another shape
            out.append(draw(st.sampled_from([3, "hi", None, {"content": "x"}, {"role": 1, "content": "x"},
                                             {"role": "assistant", "content": None}])))
        elif kind == 1:  # text in parts, which the read joins
            out.append({"role": draw(st.sampled_from(ROLES)), "content": [{"type": "text", "text": text()}
                                                                          for _ in range(draw(st.integers(1, 3)))]})
        else:
            out.append({"role": draw(st.sampled_from(ROLES)), "content": text()})
    return out


@settings(max_examples=examples(400))
@given(chats())
def test_an_unmarked_chat_is_one_the_read_finds_no_marker_or_near_miss_in_and_refuses_nothing_of(msgs):
    """PF-33: a request with no campaign from its URL or --campaign passes through without its messages read when
    `unmarked` says the read would find no marker (S-5) and no near miss (TR-8), and refuse no item: then it
    does not; any doubt is read."""
    if unmarked(msgs):
        marked = read_marked(msgs)
        assert marked.campaign is None and marked.near_miss is None and marked.problem is None


def test_unmarked_reads_what_could_be_a_marker_and_bounds_what_it_scans():
    reply = {"role": "assistant", "content": '[clock: name="Alarm" tick="1" result="ok" now="1/4"] ' * 50}
    assert unmarked([{"role": "system", "content": "GM. [OOC: keep it short]"}, reply,
                     {"role": "user", "content": "[tag] and [TAGENGINE] alone"}])
    for text in [*NEAR, '[tagengine: campaign="heist"]', '[tag engıne campaıgn="heist"]', '[TAG-ENGİNE CAMPAİGN]']:
        assert not unmarked([{"role": "user", "content": f"go {text}"}]), text
        assert not unmarked([{"role": "narrator", "content": text}]), text  # an unknown role is read as system
    escaped = json.loads('[{"role": "user", "content": "\\u005btagengine: campaign=\\"heist\\"]"}]')
    assert not unmarked(escaped) and read_marked(escaped).campaign == "heist"
    parts = [{"type": "text", "text": "[tagengine: camp"}, {"type": "text", "text": 'aign="heist"]'}]
    assert not unmarked([{"role": "user", "content": parts}]) and read_marked([{"role": "user", "content": parts}]
                                                                              ).campaign == "heist"
    for item in (3, {"content": "x"}, {"role": ["user"], "content": "x"}):
        assert not unmarked([item])  # the read says why it is refused
    assert unmarked([{"role": "user", "content": "x" * LOOP_CHARS}])  # both sides of the bound (SEC-11)
    assert not unmarked([{"role": "user", "content": "x" * (LOOP_CHARS + 1)}])


def whole_scan(text: str) -> str | None:
    """The near-miss scan in one call, as it was before it went by parts."""
    return next((h.group() for h in NEAR_MARKER.finditer(text) if MARKER.match(text, h.start()) is None), None)


def test_the_longest_near_miss_is_near_longest_characters():
    longest = "[" + "-" * 3 + "tag" + "-" * 3 + "engine" + "-" * 3 + "campaign" + "x" * 120 + "]"
    assert len(NEAR_MARKER.match(longest + "]]").group()) == NEAR_LONGEST == len(longest) == 148
    assert len(NEAR_MARKER.match(longest.replace("]", "x") + "]").group()) == NEAR_LONGEST - 1  # 121 x's: no "]"


@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.integers(1, 40))
def test_a_near_miss_scanned_by_parts_is_the_one_a_whole_scan_finds(text, part):
    """SEC-11: the scan reads SCAN_CHARS characters at a time, so a worker thread scanning megabytes gives the
    event loop's thread its turn between calls; a near miss across two parts, or a marker that ends in the next,
    is found as one call finds it."""
    saved = request.SCAN_CHARS
    request.SCAN_CHARS = part  # a given test cannot take a fixture per example
    try:
        assert near_miss(text) == whole_scan(text)
    finally:
        request.SCAN_CHARS = saved


def test_a_megabyte_of_brackets_is_scanned_in_parts(monkeypatch):
    """SEC-11: no search call of the read (its common case's or the near miss's) reads more than a part."""
    calls: list[tuple[int, int]] = []

    class Counted:
        def search(self, text: str, start: int = 0, end: int = sys.maxsize) -> object:
            calls.append((start, min(end, len(text))))
            return NEAR_MARKER.search(text, start, end)

    monkeypatch.setattr(request, "NEAR_MARKER", Counted())
    text = "[" * (limits.MAX_MESSAGE - 10) + " x [tag engine campaign 'x']"
    assert near_miss(text) == "[tag engine campaign 'x']"
    assert len(calls) == text.index("[tag") // limits.SCAN_CHARS + 1  # the last part holds the near miss
    brackets = "[" * (limits.MAX_MESSAGE - 10)
    got = read_marked([{"role": "user", "content": brackets}, {"role": "user", "content": text}])
    assert got.near_miss == "[tag engine campaign 'x']"
    assert max(end - start for start, end in calls) == limits.SCAN_CHARS + NEAR_LONGEST


def test_an_unmarked_request_passes_through_unread_and_a_marked_one_is_read(tmp_path, monkeypatch):
    read: list[int] = []
    real = ServerContext.read_history

    async def counted(self: ServerContext, messages: list[object]) -> object:
        read.append(len(messages))
        return await real(self, messages)

    monkeypatch.setattr(ServerContext, "read_history", counted)
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        r = ask(srv.url, "[OOC: no marker here]")
        assert r.status_code == 200 and read == [] and "x-tagengine-warning" not in r.headers
        r = ask(srv.url, NEAR[0])
        assert r.status_code == 200 and read == [2] and ascii(NEAR[0]) in r.headers["x-tagengine-warning"]
