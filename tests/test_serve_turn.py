"""Issue 25 item 1: the chat turn's steps (server/turn/steps.py) called as functions, without a server or a client:
plain values in, plain values out. The upstream, where a step asks it, is an httpx MockTransport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from test_serve import SCRIPT, expected, history, make_campaigns

from tagengine._internal.commands import apply_reply
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.errors import Refused
from tagengine._internal.server.memory.campaigns import Campaign
from tagengine._internal.server.options import Options
from tagengine._internal.server.turn.mid_reply import CHECKS_HEADER, MID_REPLY
from tagengine._internal.server.turn.request import campaign_choice, read_marked
from tagengine._internal.server.turn.steps import (
    NOT_MID_REPLY,
    Turn,
    answer_whole,
    begin,
    fit,
    open_with_edits,
    plan_mid_reply,
    record_reply,
    whole_reply,
)
from tagengine._internal.state import GameState
from tagengine._internal.tags import narration

ASKED: list[dict] = []


def answer(request: httpx.Request) -> httpx.Response:
    """The upstream: the script's reply to the last `TURN:name`, as a whole chat completion."""
    body = json.loads(request.content)
    ASKED.append(body)
    last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return httpx.Response(200, json={"id": "c1", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": SCRIPT[last.removeprefix("TURN:")]},
         "finish_reason": "stop"}]})


def context(tmp_path, **kw) -> ServerContext:
    data = tmp_path / "data"
    if not data.exists():
        make_campaigns(data)
    return ServerContext(Options(upstream="http://up.invalid/v1", data=data, transport=httpx.MockTransport(answer),
                                 **kw))


@pytest.fixture
def ctx(tmp_path) -> Iterator[ServerContext]:
    c = context(tmp_path)
    yield c
    asyncio.run(c.close())


def started(ctx: ServerContext, turns: list[str], stored: list[str]) -> Turn:
    return asyncio.run(begin(ctx, ctx.campaign("heist"), read_marked(history("heist", turns, stored))))


def test_the_campaign_is_the_body_then_the_marker_then_the_prefix_then_the_default():
    """One rule for every route (S-5): what the JSON API's body asks, else the marker, else the prefix, else
    --campaign; each answer says how it was chosen."""
    marked = read_marked(history("heist", ["one"], []))
    plain = read_marked([{"role": "user", "content": "hi"}])
    assert campaign_choice(marked, "asked", "vault", "other") == ("asked", "asked")
    assert campaign_choice(marked, None, "vault", "other") == ("heist", "marker")
    assert campaign_choice(plain, None, "vault", "other") == ("vault", "url")
    assert campaign_choice(plain, None, None, "other") == ("other", "default")
    assert campaign_choice(plain, None, None, None) is None
    with pytest.raises(Refused):
        campaign_choice(plain, 3, None, None)  # a body's `campaign` that is not a name



def after(c: Campaign, replies: list[str]) -> GameState:
    """The campaign's state after `replies` (its own dice: a campaign is seeded at random, S-13)."""
    state = c.start
    for r in replies:
        state = apply_reply(c.rs, state, r).state
    return state


def test_begin_gives_the_state_before_the_reply(ctx):
    stored = expected("heist", [SCRIPT["one"], SCRIPT["two"]])[0]
    turn = started(ctx, ["one", "two", "three"], stored)
    assert turn.campaign.name == "heist" and turn.prefill is None
    assert turn.before.consistent and turn.before.replayed == 2
    assert turn.before.state == after(turn.campaign, [SCRIPT["one"], SCRIPT["two"]])
    assert [m["content"] for m in turn.history if m["role"] == "assistant"] == stored


def test_begin_splits_off_a_prefill_and_replays_what_came_before_it(ctx):
    stored = expected("heist", [SCRIPT["one"]])[0]
    msgs = [*history("heist", ["one", "two"], stored), {"role": "assistant", "content": "The lamp"}]
    turn = asyncio.run(begin(ctx, ctx.campaign("heist"), read_marked(msgs)))
    assert turn.prefill == "The lamp" and turn.before.replayed == 1
    assert turn.before.state == after(turn.campaign, [SCRIPT["one"]])


def test_a_turns_campaign_look_up_refuses_an_unknown_campaign_naming_only_it(ctx):
    with pytest.raises(Refused) as e:
        ctx.users_campaign("nowhere", {})
    assert e.value.status == 404 and e.value.code == "campaign_not_found" and "heist" not in e.value.message


def test_an_unknown_campaigns_name_is_echoed_cut_to_80_characters(ctx):
    """SEC-11: a name is looked up before anything bounds it; the 404 says its first 80 characters."""
    with pytest.raises(Refused) as e:
        ctx.campaign("n" * 100_000)
    assert e.value.status == 404 and "n" * 80 in e.value.message and "n" * 81 not in e.value.message


def test_fit_sends_the_prompt_fitted_and_says_how_it_was_counted(ctx):
    turn = started(ctx, ["one"], [])
    body = {"model": "gpt-4o", "max_tokens": 300, "temperature": 0.5,
            "messages": history("heist", ["one"], [])}

    async def run():
        return await fit(ctx, turn, body, {})

    fitted = asyncio.run(run())
    sent = fitted.body["messages"]
    assert sent[0]["role"] == "system" and "TURN:one" in [m["content"] for m in sent]
    assert all("[tagengine:" not in m["content"] for m in sent)  # the marker stays with the chat app
    assert fitted.body["temperature"] == 0.5 and fitted.body["max_tokens"] == 300  # fits: as asked
    assert fitted.headers["x-tagengine-campaign"] == "heist"
    assert fitted.headers["x-tagengine-tokens"].split()[1] == "response=300"
    assert body["messages"] is not sent  # the client's body is not changed
    assert ctx.latest.prompts["heist"].prompt.messages == sent  # the prompt page's, once the request left


def test_a_whole_reply_is_its_receipts_or_with_hide_tags_its_narration(ctx, tmp_path):
    turn = started(ctx, ["one"], [])
    shown, applied, filt, raw = whole_reply(turn, SCRIPT["one"])
    assert shown == applied.text == expected("heist", [SCRIPT["one"]])[0][0]
    assert filt is None and raw == SCRIPT["one"]
    hidden = context(tmp_path, hide_tags=True)
    turn = started(hidden, ["one"], [])
    assert whole_reply(turn, SCRIPT["one"])[0] == narration(SCRIPT["one"])
    asyncio.run(hidden.close())


def test_a_recorded_reply_is_where_the_next_turn_starts(ctx):
    turn = started(ctx, ["one"], [])
    _, applied, filt, raw = whole_reply(turn, SCRIPT["one"])
    assert record_reply(ctx, turn, applied, filt, raw)
    nxt = started(ctx, ["one", "two"], [applied.text])
    assert nxt.before.replayed == 0 and nxt.before.state is applied.state  # the very object: views stay warm
    assert ctx.latest.version("heist").startswith("1-")  # the sheet page shows it


def test_nothing_is_recorded_after_a_history_that_lost_its_start(ctx):
    stored, _ = expected("heist", [SCRIPT["one"], SCRIPT["two"]])
    msgs = history("heist", ["one", "two", "three"], stored)
    del msgs[1:3]  # the chat app dropped the oldest turn
    turn = asyncio.run(begin(ctx, ctx.campaign("heist"), read_marked(msgs)))
    assert not turn.before.consistent
    _, applied, filt, raw = whole_reply(turn, SCRIPT["three"])
    assert not record_reply(ctx, turn, applied, filt, raw)
    assert ctx.latest.version("heist") == "0"


def test_the_mid_reply_plan_says_when_checks_are_rolled_mid_reply(tmp_path):
    ctx = context(tmp_path, settle_checks=True)
    body = {"model": "m", "messages": history("heist", ["one"], [])}

    async def plan(turn: Turn, n: int | None = None) -> tuple[dict | None, str]:
        fitted = await fit(ctx, turn, {**body, "n": n} if n else body, {})
        return await plan_mid_reply(ctx, turn, fitted, False, {}), fitted.headers[CHECKS_HEADER]

    resend, header = asyncio.run(plan(started(ctx, ["one"], [])))
    assert header == MID_REPLY and resend is not None and resend["messages"][0]["role"] == "system"
    assert asyncio.run(plan(started(ctx, ["one"], []), n=2)) == (None, MID_REPLY)  # several choices: at the end
    prefilled = asyncio.run(begin(ctx, ctx.campaign("heist"), read_marked([*body["messages"],
                                                             {"role": "assistant", "content": "The"}])))
    assert asyncio.run(plan(prefilled)) == (None, NOT_MID_REPLY)
    asyncio.run(ctx.close())


def test_a_whole_answer_is_the_upstream_s_reply_applied_and_recorded_after_it_has_gone(ctx):
    ASKED.clear()
    turn = started(ctx, ["one"], [])
    body = {"model": "m", "messages": history("heist", ["one"], [])}

    async def run():
        fitted = await fit(ctx, turn, body, {})
        response = await answer_whole(ctx, turn, fitted, None, {})
        version = ctx.latest.version("heist")
        assert response.background is not None
        await response.background()  # what Starlette runs once the answer has gone (S-24)
        return response, version

    response, before = asyncio.run(run())
    doc = json.loads(response.body)
    assert doc["choices"][0]["message"]["content"] == expected("heist", [SCRIPT["one"]])[0][0]
    assert doc["id"] == "c1" and response.headers["x-tagengine-campaign"] == "heist"
    assert len(ASKED) == 1 and ASKED[0]["messages"][0]["role"] == "system"
    assert before == "0" and ctx.latest.version("heist").startswith("1-")  # recorded only after the answer


def test_a_turn_with_no_edit_waiting_does_no_edit_work(ctx, monkeypatch):
    """The edits' steps of a turn (its opening, the edits carried past its reply) cost a turn with none waiting
    set look-ups: the store's edits are never read or written, none is made (the keys with edits are held in
    memory, `PendingEdits.has`)."""
    def never(*args, **kw):
        raise AssertionError("edit work on a turn with no edit waiting")

    for name in ("edits_at", "edits_after", "add_edit"):
        monkeypatch.setattr(ctx.store, name, never)
    monkeypatch.setattr(ctx.edits, "made", never)
    turn = started(ctx, ["one"], [])
    open_with_edits(ctx, turn)
    assert turn.opening is None and turn.seen is not None and turn.seen.last == 0

    async def run():
        fitted = await fit(ctx, turn, {"model": "m", "messages": history("heist", ["one"], [])}, {})
        response = await answer_whole(ctx, turn, fitted, None, {})
        await response.background()

    asyncio.run(run())
    assert ctx.latest.version("heist").startswith("1-")
