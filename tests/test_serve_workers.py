"""Issue 26 (SEC-2, SEC-3, SEC-5): what runs off the event loop, and the bounds an upstream answer is read
within, step by step: a replay or a fit with much new text goes to a worker thread and a little stays on the
loop; `build_prompt(..., quick=N)` says SlowFit before it counts anything; at most WORKER_THREADS heavy steps
run at once; `Upstream.send` stops reading past its bound; the system prompts kept per ruleset are bounded."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_kit import Fake
from test_serve import SCRIPT, ask, client, serving

from conftest import load_sample
from tagengine._internal.prompt import Budget, build_prompt
from tagengine._internal.prompt import build as build_module
from tagengine._internal.prompt.tokens import SlowFit, TiktokenTokenizer
from tagengine._internal.server.errors import Refused
from tagengine._internal.server.limits import LOOP_CHARS, MAX_MESSAGE, WORKER_THREADS
from tagengine._internal.server.memory import chain
from tagengine._internal.server.runtime.worker_threads import Workers
from tagengine._internal.server.turn.relay import Reply
from tagengine._internal.server.turn.request import check_sizes, parse_body, read_marked
from tagengine._internal.server.upstream import client as upstream_module
from tagengine._internal.server.upstream import counting as upstream_count
from tagengine._internal.server.upstream.client import AnswerTooLarge, Upstream
from tagengine._internal.state import GameState

TICK = 'The guards stir. [clock: name="Watch" tick="1"]'
PROSE = "The rain keeps on over the rooftops of Doskvol, and the lamps gutter in the wind. "


def chat(replies: list[str], last: str = "TURN:tick") -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": '[tagengine: campaign="heist"]'}]
    for k, reply in enumerate(replies):
        msgs += [{"role": "user", "content": f"go {k}"}, {"role": "assistant", "content": reply}]
    return [*msgs, {"role": "user", "content": last}]


def test_a_replay_of_much_new_text_runs_in_a_worker_thread_and_a_little_on_the_loop(tmp_path, monkeypatch):
    """Three replies, fewer than THREAD_MIN but more than LOOP_CHARS characters in all, are replayed in a
    worker thread; the next turn, one short reply more, on the loop (S-19 counted replies only)."""
    threads = []
    real = chain.apply_reply

    def spy(rs, state, text):
        threads.append(threading.get_ident())
        return real(rs, state, text)

    monkeypatch.setattr(chain, "apply_reply", spy)
    long = [PROSE * (LOOP_CHARS // len(PROSE) // 2) + TICK for _ in range(3)]
    with serving(tmp_path, Fake({**SCRIPT, "tick": TICK})) as srv:
        c = client(srv)
        ask(c, chat(long), False)  # a cold store: every reply replayed
        loop = srv.thread.ident
        assert len(threads) == 3 and loop not in threads
        threads.clear()
        ask(c, chat([*long, "A short one."]), False)
        assert threads == [loop]


def test_a_fit_with_much_new_text_runs_in_a_worker_thread_and_a_warm_one_on_the_loop(tmp_path, monkeypatch):
    calls: list[tuple[int, bool, str]] = []  # (thread, quick asked, how it ended)
    real = upstream_count.build_prompt

    def spy(*args: Any, **kw: Any) -> Any:
        try:
            out = real(*args, **kw)
        except SlowFit:
            calls.append((threading.get_ident(), "quick" in kw, "SlowFit"))
            raise
        calls.append((threading.get_ident(), "quick" in kw, "fitted"))
        return out

    released: list[int] = []  # the threads that gave back a tokenizer's Python rank table (PF-34)
    monkeypatch.setattr(upstream_count, "build_prompt", spy)
    monkeypatch.setattr(upstream_count, "release_rank_tables", lambda: released.append(threading.get_ident()))
    with serving(tmp_path, Fake({**SCRIPT, "tick": TICK})) as srv:
        c = client(srv)
        loop = srv.thread.ident
        ask(c, chat([], "TURN:tick"), False)  # the tokenizer and the system prompt: a first fit, elsewhere
        assert len(released) == 1 and released[0] == calls[-1][0] != loop  # after it, in its worker thread
        calls.clear()
        big = chat([], "TURN:tick")
        big.insert(1, {"role": "user", "content": "word " * LOOP_CHARS})
        ask(c, big, False)
        assert calls[0] == (loop, True, "SlowFit") and calls[1][1:] == (False, "fitted") and calls[1][0] != loop
        calls.clear()
        ask(c, [*big[:-1], {"role": "assistant", "content": TICK}, {"role": "user", "content": "TURN:tick"}], False)
        assert calls == [(loop, True, "fitted")]  # the same chat, a turn later: little new text
        assert loop not in released


@dataclass(frozen=True, eq=False)
class Counted:
    """A tokenizer of its own (so its counter starts cold), counting its calls."""

    inner: TiktokenTokenizer
    calls: list[str]

    @property
    def name(self) -> str:
        return self.inner.name

    def encode(self, text: str) -> list[int]:
        self.calls.append(text)
        return self.inner.encode(text)

    def decode_bytes(self, tokens: Any) -> bytes:
        return self.inner.decode_bytes(tokens)


def test_build_prompt_quick_says_slowfit_before_it_counts():
    rs = load_sample("blades-like")
    state = GameState.new(rs, ["Cutter", "Lurk"], seed="s")
    calls: list[str] = []
    budget = Budget(context=32000, model="gpt-4o", tokenizer=Counted(TiktokenTokenizer("o200k_base"), calls))
    history = [{"role": "user", "content": "Hello there."}]
    with pytest.raises(SlowFit):  # a counter that has counted nothing: its tokenizer may still be loading
        build_prompt(rs, state, history, budget, checked=True, quick=LOOP_CHARS)
    assert calls == []
    whole = build_prompt(rs, state, history, budget, checked=True)
    assert build_prompt(rs, state, history, budget, checked=True, quick=LOOP_CHARS) == whole
    calls.clear()
    longer = [*history, {"role": "assistant", "content": "x" * LOOP_CHARS}, {"role": "user", "content": "On."}]
    with pytest.raises(SlowFit):  # more new text than `quick`: nothing of it counted
        build_prompt(rs, state, longer, budget, checked=True, quick=LOOP_CHARS)
    assert not any("x" * 100 in c for c in calls)
    short = [*history, {"role": "assistant", "content": "Fine."}, {"role": "user", "content": "On."}]
    assert build_prompt(rs, state, short, budget, checked=True, quick=LOOP_CHARS) == \
        build_prompt(rs, state, short, budget, checked=True)
    with pytest.raises(SlowFit):  # a new budget: its system prompt is not fitted yet
        build_prompt(rs, state, short, Budget(context=32000, response=300, model="gpt-4o",
                                              tokenizer=budget.tokenizer), checked=True, quick=LOOP_CHARS)


def test_the_system_prompts_kept_per_ruleset_are_bounded():
    """SEC-5: every response budget a request asks for was one system prompt kept for good."""
    rs = load_sample("blades-like")  # a ruleset object of its own: its system prompts are this test's
    state = GameState.new(rs, ["Cutter", "Lurk"], seed="s")
    for n in range(build_module.SYSTEM_MAX + 10):
        build_prompt(rs, state, [{"role": "user", "content": "Hi."}], Budget(context=32000, response=300 + n))
    assert len(build_module._SYSTEM[rs]) == build_module.SYSTEM_MAX


def test_at_most_worker_threads_heavy_steps_run_at_once():
    running, most = [0], [0]
    lock = threading.Lock()

    def heavy() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)  # long enough for the others to start, were they let in
        with lock:
            running[0] -= 1

    async def main() -> None:
        workers = Workers()
        await asyncio.gather(*(workers.run(heavy) for _ in range(3 * WORKER_THREADS)))

    asyncio.run(main())
    assert most[0] == WORKER_THREADS


def test_a_big_piece_of_a_streamed_reply_is_applied_in_a_worker_thread_and_a_reply_past_the_bound_refused():
    seen: list[int] = []

    class Spy:
        def feed(self, chunk: str) -> str:
            seen.append(threading.get_ident())
            return chunk

        def finish(self) -> tuple[str, Any]:
            seen.append(threading.get_ident())
            return "", None

    async def main() -> None:
        reply = Reply(Spy(), Workers())
        await reply.feed("small")
        await reply.feed("y" * (LOOP_CHARS + 1))
        await reply.finish()  # the reply is long: its end too
        loop = threading.get_ident()
        assert seen[0] == loop and seen[1] != loop and seen[2] != loop
        with pytest.raises(Refused) as e:
            await reply.feed("z" * MAX_MESSAGE)
        assert e.value.code == "reply_too_large" and e.value.status == 502

    asyncio.run(main())


def test_send_stops_reading_an_answer_past_its_bound(monkeypatch):
    """SEC-3: a whole answer past MAX_ANSWER and a stream past MAX_STREAM raise AnswerTooLarge (an httpx
    error, so every reader treats it as a failed connection), whatever the answer says its length is."""
    monkeypatch.setattr(upstream_module, "MAX_ANSWER", 1000)
    monkeypatch.setattr(upstream_module, "MAX_STREAM", 5000)

    def answer(request: httpx.Request) -> httpx.Response:
        size = int(request.url.params["size"])
        return httpx.Response(200, content=chunks(size))

    async def chunks(size: int):
        for _ in range(size // 100):
            yield b"x" * 100

    async def main() -> None:
        up = Upstream("http://up.invalid/v1", httpx.MockTransport(answer), forward_client_key=False)
        got = await up.send(httpx.Request("GET", "http://up.invalid/v1/a?size=1000"))
        assert len(got.content) == 1000
        with pytest.raises(AnswerTooLarge, match="over 1000 bytes"):
            await up.send(httpx.Request("GET", "http://up.invalid/v1/a?size=1100"))
        got = await up.send(httpx.Request("GET", "http://up.invalid/v1/a?size=5000"), stream=True)
        assert len(b"".join([c async for c in got.aiter_bytes()])) == 5000
        got = await up.send(httpx.Request("GET", "http://up.invalid/v1/a?size=9000"), stream=True)
        with pytest.raises(AnswerTooLarge):
            async for _ in got.aiter_bytes():
                pass
        await got.aclose()
        assert isinstance(AnswerTooLarge("x"), httpx.HTTPError)
        await up.close()

    asyncio.run(main())


def test_a_message_past_the_bound_is_named_as_the_request_names_it():
    """`check_sizes` names `messages[i]` of the request, though the history it reads dropped a marker-only
    message before it."""
    messages = [{"role": "system", "content": '[tagengine: campaign="heist"]'},
                {"role": "user", "content": [{"type": "text", "text": "x" * (MAX_MESSAGE + 1)}]}]
    history = [{"role": "user", "content": "x" * (MAX_MESSAGE + 1)}]
    with pytest.raises(Refused) as e:
        check_sizes(messages, history)
    assert e.value.status == 413 and "messages[1]" in e.value.message
    check_sizes(messages[:1], [])


def test_a_body_of_at_most_max_message_bytes_is_not_looked_through():
    """SEC-1 at both sides of its bound, read from the body's size: a body of MAX_MESSAGE bytes cannot hold a
    longer text, so its messages are not looked at (the history given here could not come from it); one byte
    more and they are, and the message past the bound is named."""
    history = [{"role": "user", "content": "x" * (MAX_MESSAGE + 1)}]
    messages = [{"role": "user", "content": history[0]["content"]}]
    check_sizes(messages, history, body_bytes=MAX_MESSAGE)
    with pytest.raises(Refused) as e:
        check_sizes(messages, history, body_bytes=MAX_MESSAGE + 1)
    assert e.value.status == 413 and "messages[0]" in e.value.message


TEXTS = st.text(st.characters(codec="utf-8"), max_size=40)
CONTENT = TEXTS | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXTS}), max_size=4)


@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "User"]),
                                       "content": CONTENT}), min_size=1, max_size=6),
       st.booleans())
def test_no_text_read_from_a_body_is_longer_than_the_body(messages, ascii_only):
    """What the bound above stands on: each character of a message's text, its parts joined too, is at least one
    byte of the JSON body it was read from, escaped or not."""
    raw = json.dumps({"model": "m", "messages": messages}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    history = read_marked(parse_body(raw)["messages"]).history
    assert max((len(m["content"]) for m in history), default=0) <= len(raw)
