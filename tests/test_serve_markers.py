"""Issue 26 item 14 (TR-8): a near-miss campaign marker (another case, quotes or spaces: a no-break space) is
not read, so the request goes on as it would have (the default campaign, or passed through), but it is said:
`x-tagengine-warning` on the answer and a line in the log. A real server on loopback, a scripted upstream."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable

import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from serve_kit import Fake
from test_serve import SCRIPT, serving

from conftest import examples
from tagengine._internal.server import limits
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.errors import Refused
from tagengine._internal.server.limits import (
    HASH_CHARS,
    HISTORIES_HELD,
    HISTORY_CHARS_HELD,
    KEPT_MESSAGE_CHARS,
    LOOP_CHARS,
)
from tagengine._internal.server.turn import request
from tagengine._internal.server.turn.request import (
    MARKER,
    NEAR_LONGEST,
    NEAR_MARKER,
    MarkedHistory,
    RecentHistories,
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
                                             {"role": "assistant", "content": None}, {"role": "user", "content": 7},
                                             {"role": "system", "content": [{"type": "text", "text": None}]},
                                             {"role": "user", "content": "x", "name": "Mira"}, {"role": "User",
                                             "content": "x"}, {"role": "tool", "content": "x"},
                                             {"role": ["user"], "content": "x"}, {"role": "user"}])))
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


def said(messages: list[object], read: Callable[[list[object]], MarkedHistory | None]) -> object:
    """A read as plain values (a refusal by what it says), or what it raised."""
    try:
        got = read(messages)
    except Refused as e:
        return ("raised", e.status, e.message)
    if got is None:
        return None
    problem = None if got.problem is None else (got.problem.status, got.problem.message)
    return got.campaign, got.history, got.near_miss, problem


@st.composite
def request_runs(draw: st.DrawFn) -> list[list[object]]:
    """Requests one after another as chat apps send them: the next turn (a request before with messages more), a
    regenerate (one again), an edit or a deletion (one cut short), or another chat."""
    out: list[list[object]] = [draw(chats())]
    for _ in range(draw(st.integers(1, 8))):
        before = draw(st.sampled_from(out))
        kind = draw(st.integers(0, 4))
        if kind == 0:
            out.append(before + draw(chats()))
        elif kind == 1:
            out.append(list(before))
        elif kind == 2:
            out.append(before[:draw(st.integers(1, len(before)))])
        elif kind == 3:
            out.append(draw(chats()))
        else:  # one message given another key, or its role or text changed, the rest as it was: one before the last
            # where there is one, since the read compares a kept run's last message first and would find that alone
            i = draw(st.integers(0, max(0, len(before) - 2)))
            m = before[i]
            change = draw(st.sampled_from([{"name": "Mira"}, {"role": "system"}, {"content": "edited"}]))
            out.append([*before[:i], {**m, **change} if isinstance(m, dict) else m, *before[i + 1:]])
    return out


@settings(max_examples=examples(400))
@given(request_runs())
def test_a_request_read_after_others_reads_as_it_reads_alone(runs):
    """PF-59: `RecentHistories` reads only what a request adds to one it read before (its marker, near miss,
    problem and plain history carried from there), and what it finds is what `read_marked` finds in the whole
    list: the campaign, the history, the first near miss, the first problem, or the same refusal."""
    histories = RecentHistories()
    for messages in runs:
        copy = json.loads(json.dumps(messages))  # another request's own objects, equal to the kept ones
        alone = said(copy, read_marked)
        on_loop = said(copy, lambda m: histories.read(m, 40))  # a bound some reads pass: then a worker's read
        assert on_loop is None or on_loop == alone
        assert said(copy, histories.read_whole) == alone


@settings(max_examples=examples(400))
@given(chats(), chats())
def test_a_read_goes_on_from_the_read_of_a_start_as_the_whole_read_does(start, rest):
    """`read_marked_within(messages, None, (read of messages[:n], n))` is the read of the whole list, whatever the
    start held: a marker, a near miss, a problem (the first is kept); what follows may hold anything."""
    whole = start + rest

    def went_on(messages: list[object]) -> MarkedHistory | None:
        return read_marked_within(messages, None, (read_marked(start), len(start)))

    alone = said(start, read_marked)
    assume(isinstance(alone, tuple) and alone[0] != "raised")  # a start that is refused has no read to go on from
    assert said(whole, went_on) == said(whole, read_marked)


def test_pf_62_the_same_messages_again_give_their_kept_read_itself(monkeypatch):
    """PF-62: a request whose messages are all those of a kept read (a regenerate, a swipe) gets that read itself,
    read-only: its history is the very list and message objects the turn before had, so what follows finds them
    by identity; the request's own objects are compared with the kept ones, never read."""
    histories = RecentHistories()
    chat = [{"role": "system", "content": '[tagengine: campaign="heist"]'}, *chat_of_length(6)]
    first, alone = histories.read_whole(json.loads(json.dumps(chat))), read_marked(chat)
    starts = spied(monkeypatch)
    again = histories.read_whole(json.loads(json.dumps(chat)))
    assert again is first and again.campaign == alone.campaign == "heist" and again.history == alone.history
    assert starts == [len(chat)]
    grown = histories.read_whole(json.loads(json.dumps([*chat, {"role": "user", "content": "more"}])))
    assert grown is not first and grown.history[:len(first.history)] == first.history
    assert all(a is b for a, b in zip(grown.history, first.history, strict=False))  # the kept start: its objects


def spied(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The message each read starts at (0: the whole list read)."""
    starts: list[int] = []
    real = request.read_marked_within

    def counted(messages: list[object], scanned: int | None, read: tuple[MarkedHistory, int] | None = None) -> object:
        starts.append(0 if read is None else read[1])
        return real(messages, scanned, read)

    monkeypatch.setattr(request, "read_marked_within", counted)
    return starts


def chat_of_length(n: int, text: str = "x") -> list[object]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{text}{i}"} for i in range(n)]


def test_a_kept_start_is_not_read_again_nor_counted_against_the_loops_bound(monkeypatch):
    """PF-59, SEC-11: the next turn, a regenerate and a continue read only what follows the kept start, and the
    bound on the text a read scans on the event loop counts only that: a long chat's new short message reads on
    the loop, at the bound and not one character past it."""
    starts = spied(monkeypatch)
    histories = RecentHistories()
    long = [{"role": "system", "content": "w" * (2 * LOOP_CHARS)}, {"role": "user", "content": "go"}]
    assert histories.read(long, LOOP_CHARS) is None and histories.read_whole(long).history == long
    nxt = [*long, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "u" * LOOP_CHARS}]
    went_on = [*nxt, {"role": "assistant", "content": "I go"}]  # a continue: its prefill
    edited = [long[0], {"role": "user", "content": "went"}, *nxt[2:]]  # a message edited: read whole
    alone = {id(m): read_marked(m) for m in (nxt, went_on, edited)}
    assert histories.read(nxt, LOOP_CHARS) == alone[id(nxt)] and starts[-1] == 2  # 2 * LOOP_CHARS + 2 kept
    assert histories.read(nxt, LOOP_CHARS) == alone[id(nxt)] and starts[-1] == len(nxt)  # a regenerate
    past = [*nxt, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "u" * (LOOP_CHARS + 1)}]
    assert histories.read(past, LOOP_CHARS) is None and starts[-1] == len(nxt)
    assert histories.read(went_on, LOOP_CHARS) == alone[id(went_on)] and starts[-1] == len(nxt)
    assert histories.read_whole(edited) == alone[id(edited)] and starts[-1] == 0


def test_a_refusal_in_what_follows_a_kept_start_names_its_place_in_the_whole_request(monkeypatch):
    starts = spied(monkeypatch)
    histories = RecentHistories()
    kept = chat_of_length(3)
    histories.read_whole(kept)
    with pytest.raises(Refused, match=r"messages\[4\] is not a message"):
        histories.read_whole([*kept, {"role": "assistant", "content": "a"}, 3])
    got = histories.read_whole([*kept, {"role": "user", "content": 42}])
    assert got.problem is not None and got.problem.message == "messages[3].content must be text"
    assert starts == [0, 3, 3]


def test_only_requests_of_plain_messages_are_kept(monkeypatch):
    """What is held is counted as text, and a comparison with it is one message deep: a request with a message of
    parts or of another key is read, not kept (the next one reads it whole again); the plain request is kept."""
    starts = spied(monkeypatch)
    histories = RecentHistories()
    for odd in ({"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "user", "content": "hi", "name": "Mira"}, {"role": "assistant", "content": None}):
        plain = chat_of_length(3)
        histories.read_whole([*plain, odd])
        histories.read_whole([*plain, odd, {"role": "assistant", "content": "a"}])
        assert starts[-2:] == [0, 0], odd
        histories.read_whole(plain)
        histories.read_whole([*plain, {"role": "assistant", "content": "a"}])
        assert starts[-2:] == [0, 3]
        histories = RecentHistories()


def test_at_most_histories_held_requests_and_history_chars_held_characters_are_kept(monkeypatch):
    """PF-59's bounds, both sides: the HISTORIES_HELD most recent requests are kept, not one more; a request that
    holds HISTORY_CHARS_HELD / 2 (its text, and KEPT_MESSAGE_CHARS a message) is kept, not one that holds a character
    more, be it in long texts or in many short messages; all kept hold at most HISTORY_CHARS_HELD."""
    starts = spied(monkeypatch)
    histories = RecentHistories()
    chats = [chat_of_length(2, f"chat {i}: ") for i in range(HISTORIES_HELD + 1)]
    for chat in chats:
        histories.read_whole(chat)
    histories.read_whole([*chats[1], {"role": "user", "content": "more"}])
    assert starts[-1] == 2  # the oldest of the HISTORIES_HELD kept
    histories.read_whole([*chats[0], {"role": "user", "content": "more"}])
    assert starts[-1] == 0  # one more than that: forgotten
    half, each = HISTORY_CHARS_HELD // 2, KEPT_MESSAGE_CHARS
    for size, kept in ((half, True), (half + 1, False)):
        long = [{"role": "system", "content": "w" * (size - 1 - 2 * each)}, {"role": "user", "content": "g"}]
        n = half // (1 + each)  # short messages of one or two characters: their objects are counted too
        many = [{"role": "user", "content": "w" * (1 + (i < half - n * (1 + each)))} for i in range(n)]
        many[-1]["content"] += "w" * (size - half)
        for big in (long, many):
            assert sum(len(m["content"]) + each for m in big) == size
            histories = RecentHistories()
            histories.read_whole(big)
            histories.read_whole([*big, {"role": "assistant", "content": "a"}])
            assert starts[-1] == (len(big) if kept else 0), (size, len(big))
    histories = RecentHistories()
    halves = [[{"role": "system", "content": c * (half - each)}] for c in "abc"]
    for chat in halves:
        histories.read_whole(chat)
    for chat, kept in zip(halves, (False, True, True), strict=True):  # the newest two: HISTORY_CHARS_HELD in all
        histories.read_whole([*chat, {"role": "user", "content": "go"}])
        assert starts[-1] == (1 if kept else 0)


def test_a_kept_start_is_held_once_and_only_known_roles_are_kept(monkeypatch):
    """What a kept request holds is what it counts: the start it shares with a kept one is the kept one's objects,
    not a second copy, and a message of a role `ROLES` does not spell (any text, of any length) is not kept."""
    starts = spied(monkeypatch)
    histories = RecentHistories()
    first = chat_of_length(3)
    histories.read_whole(first)
    copy = json.loads(json.dumps([*first, {"role": "assistant", "content": "a"}]))
    held = [sys.getrefcount(m) for m in copy]
    got = histories.read_whole(copy)
    assert [sys.getrefcount(m) for m in copy] == [*held[:3], held[3] + 2]  # its new message, kept and read: held
    assert all(a is b for a, b in zip(got.history[:3], first, strict=True))  # the kept objects, not the copy's
    histories.read_whole([*copy, {"role": "user", "content": "b"}])
    assert starts[-1] == 4
    for role in ("User", "tool", "r" * 100_000):
        histories = RecentHistories()
        histories.read_whole(first)
        odd = [*first, {"role": role, "content": "x"}]
        histories.read_whole(odd)
        histories.read_whole([*odd, {"role": "user", "content": "y"}])
        assert starts[-1] == 3, role  # `first`, not `odd`


def test_on_the_event_loop_the_comparisons_read_at_most_hash_chars_of_kept_text(monkeypatch):
    """SEC-2: a read on the event loop (a bound on what it scans) compares at most HASH_CHARS characters of kept text,
    each kept message counted as it is held; a longer kept start is looked for by the read in a worker thread (no
    bound) that the loop's read hands the request to. Both sides of the bound."""
    starts = spied(monkeypatch)
    for size, on_loop in ((HASH_CHARS, True), (HASH_CHARS + 1, False)):
        histories = RecentHistories()
        kept = [{"role": "system", "content": "w" * (size - 1 - 2 * KEPT_MESSAGE_CHARS)},
                {"role": "user", "content": "g"}]
        histories.read_whole(kept)
        more = [*kept, {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
        got = histories.read(more, LOOP_CHARS)
        assert starts[-1] == (2 if on_loop else 0), size
        assert (got is not None) is on_loop  # else the whole read scans too much for the loop: a worker's turn
        histories.read_whole(more)
        assert starts[-1] == (4 if on_loop else 2)  # a read in a worker thread finds the kept start
    # two kept starts of one request, each within the bound and both over it together: the more recent one only
    histories = RecentHistories()
    a = {"role": "system", "content": "w" * (HASH_CHARS // 2 - KEPT_MESSAGE_CHARS)}
    b, c = {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}
    histories.read_whole([a, b])
    histories.read_whole([a])  # kept beside [a, b], first
    histories.read([a, b, c], LOOP_CHARS)
    assert starts[-1] == 1
    histories.read_whole([a, b, c, b])
    assert starts[-1] == 3  # [a, b, c], kept by the read before
