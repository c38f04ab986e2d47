"""Issue 13 item 6: `tagengine serve --settle-checks` with the openai client -> the server -> the scripted
upstream of tests/serve_kit.py, which continues a prefill (`after_check`). docs/checks-in-serve.md, CK-17..CK-20.

The scripts write `{outcome}` where the narration depends on the dice: the scripted model fills it from the
last check receipt of the prefill it is asked to continue, "unknown" without one. So a reply whose check
was settled mid-reply narrates the receipt's own outcome, and one settled at the end says "unknown"."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import contextmanager

import httpx
import openai
import pytest
from serve_kit import Fake, Running

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.commands.reasons import COMMAND_LIMIT
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.turn.mid_reply import MidReplyChecks
from tagengine._internal.server.upstream.client import Upstream
from tagengine._internal.state import GameState

SEED = "settle-seed"
RS = load_sample("gravewatch")
CHECK = '[check: who="Mira" skill="Ward"]'
WARD = f"Mira lifts the lantern. {CHECK} The ward: {{outcome}}. [clock: name=\"Dawn\" size=\"4\"]"
LORE = 'Mira reads the stones ({outcome}). [check: who="Mira" ability="Lore"]'
SCRIPT = {"ward": WARD, "plain": "No dice tonight. [clock: name=\"Dawn\" size=\"4\"]",
          "many": LORE * (COMMAND_LIMIT + 1) + " The end ({outcome})."}
TAG = re.compile(r"\[check:[^\]]*\]")


def start() -> GameState:
    return GameState.new(RS, ["Mira", "Bram"], seed=SEED)


def outcome_of(text: str) -> str:
    return re.findall(r'outcome="(\w+)"', text)[-1]


def settled(script: str) -> tuple[str, int]:
    """What the client should get: the script cut after each check (up to the limit), each part after a
    check narrated with that check's outcome, applied as one reply; and the number of continuations."""
    ends = [m.end() for m in TAG.finditer(script)][:COMMAND_LIMIT]
    raw, pos, outcome = "", 0, "unknown"
    for end in ends:
        raw += script[pos:end].replace("{outcome}", outcome)
        outcome = outcome_of(apply_reply(RS, start(), raw).text)
        pos = end
    raw += script[pos:].replace("{outcome}", outcome)
    return apply_reply(RS, start(), raw).text, len(ends)


@contextmanager
def serving(tmp_path, fake):
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"], seed=SEED)
    store.close()
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data, campaign="vault",
                                                             settle_checks=True))) as srv:
        yield openai.OpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=30)


def ask(c, turn, stream, model="scripted"):
    """The reply's text and the response's x-tagengine-settle header."""
    msgs = [{"role": "system", "content": "You are the GM."},
            {"role": "user", "content": turn if " " in turn else f"TURN:{turn}"}]
    raw = c.chat.completions.with_raw_response.create(model=model, messages=msgs, stream=stream)
    header = raw.headers.get("x-tagengine-settle")
    if not stream:
        return raw.parse().choices[0].message.content, header
    parts = [ch.choices[0].delta.content for ch in raw.parse() if ch.choices and ch.choices[0].delta.content]
    return "".join(parts), header


@pytest.mark.parametrize("stream", [True, False])
def test_a_check_comes_back_with_its_dice_and_the_prose_after_it_follows_them(tmp_path, stream):
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        text, header = ask(c, "ward", stream)
    want, continuations = settled(WARD)
    assert (text, header, continuations) == (want, "mid-reply", 1)
    assert f"The ward: {outcome_of(text)}." in text and "unknown" not in text
    assert len(fake.probes) == (1 if stream else 0)  # a streamed request is probed first (CK-21)
    # the upstream was asked again with the reply so far, the check's receipt in place, as a prefill
    first, second = (json.loads(b) for b in fake.bodies)
    assert second["messages"][:-1] == first["messages"]
    prefill = second["messages"][-1]
    assert prefill["role"] == "assistant" and prefill["content"] == text[:text.index("]") + 1]
    assert prefill["content"].startswith(f"Mira lifts the lantern. {CHECK[:-1]} result=\"ok\" dice=")


def test_a_reply_without_a_check_is_asked_once(tmp_path):
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        text, header = ask(c, "plain", True)
    assert text == apply_reply(RS, start(), SCRIPT["plain"]).text and header == "mid-reply"
    assert len(fake.bodies) == 1


@pytest.mark.parametrize("stream", [True, False])
def test_at_most_the_command_limit_of_checks_is_settled_per_reply(tmp_path, stream):
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        text, _ = ask(c, "many", stream)
    want, continuations = settled(SCRIPT["many"])
    assert continuations == COMMAND_LIMIT and len(fake.bodies) == 1 + COMMAND_LIMIT
    assert text == want
    assert text.count('reason="command-limit"') == 1  # the 41st check: refused, not settled (DEC-6)


@pytest.mark.parametrize("mode", ["restart", "reject"])
def test_an_upstream_that_cannot_continue_falls_back_to_settling_at_the_end_not_streamed(tmp_path, mode):
    fake = Fake(SCRIPT, after_check=mode)
    with serving(tmp_path, fake) as c:
        text, header = ask(c, "ward", False)
        again, header2 = ask(c, "ward", False)
    at_end = apply_reply(RS, start(), WARD.replace("{outcome}", "unknown")).text  # the first answer as it came
    assert text == again == at_end
    assert header.startswith("at-end; the upstream cannot continue an assistant message (")
    assert ("400" in header) == (mode == "reject") and ("repeated" in header) == (mode == "restart")
    assert header2 == header
    assert len(fake.bodies) == 3  # the first reply and its one continuation; then no continuation asked


@pytest.mark.parametrize("mode", ["restart", "reject"])
def test_an_upstream_that_cannot_continue_is_probed_before_its_first_stream_which_settles_at_the_end(tmp_path, mode):
    """CK-21: the probe finds it out before the stream's headers go: the first streamed reply already says
    at-end and comes whole, receipts as the stream passes; no continuation is asked."""
    fake = Fake(SCRIPT, after_check=mode)
    with serving(tmp_path, fake) as c:
        text, header = ask(c, "ward", True)
        again, header2 = ask(c, "ward", True)
    assert header.startswith("at-end; the upstream cannot continue an assistant message (")
    assert ("400" in header) == (mode == "reject") and ("repeated" in header) == (mode == "restart")
    assert text == again == apply_reply(RS, start(), WARD.replace("{outcome}", "unknown")).text  # not truncated
    assert header2 == header
    assert len(fake.bodies) == 2 and len(fake.probes) == 1
    probe = json.loads(fake.probes[0])
    assert probe["model"] == "scripted" and probe["stream"] is False and probe["messages"][-1]["role"] == "assistant"
    assert fake.headers[0]["authorization"] == "Bearer k"  # the client's key went to the real request


def test_one_probe_per_model(tmp_path):
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        got = [ask(c, "ward", True) for _ in range(3)] + [ask(c, "ward", False)]
        other = ask(c, "ward", True, model="other")
    want, _ = settled(WARD)
    assert [h for _, h in got] == ["mid-reply"] * 4 and other[1] == "mid-reply"
    assert [t for t, _ in got] == [want] * 4 and other[0] == want
    assert len(fake.probes) == 2 and [json.loads(p)["model"] for p in fake.probes] == ["scripted", "other"]


def test_a_probe_that_fails_decides_nothing(tmp_path):
    """A 5xx to the probe: that request is settled at the end and says why; the next one probes again."""
    fake = Fake(SCRIPT, after_check="continue", probe_status=500)
    with serving(tmp_path, fake) as c:
        text, header = ask(c, "ward", True)
        fake.probe_status = None
        again, header2 = ask(c, "ward", True)
    assert header.startswith("at-end; the upstream could not be asked (") and "500" in header
    assert text == apply_reply(RS, start(), WARD.replace("{outcome}", "unknown")).text
    assert header2 == "mid-reply" and again == settled(WARD)[0]
    assert len(fake.probes) == 2 and len(fake.bodies) == 3  # the at-end reply; the mid-reply one and its continuation


@pytest.mark.parametrize("mode", ["restart", "reject"])
def test_a_model_that_passed_the_probe_but_cannot_continue_ends_at_the_receipt_then_settles_at_the_end(
        tmp_path, mode):
    """The second line of defence (CK-19): the stream's headers are gone before the continuation fails: that
    reply ends at the check's receipt (nothing written without the dice), and every later response says
    at-end in its header."""
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        ask(c, "plain", True)  # the probe passes
        fake.after_check = mode
        text, header = ask(c, "ward", True)
        again, header2 = ask(c, "ward", True)
    assert header == "mid-reply"
    assert text == apply_reply(RS, start(), WARD[:WARD.index("]") + 1]).text
    assert header2.startswith("at-end; the upstream cannot continue an assistant message (")
    assert again == apply_reply(RS, start(), WARD.replace("{outcome}", "unknown")).text
    assert len(fake.bodies) == 4 and len(fake.probes) == 1


def test_concurrent_first_requests_share_one_probe():
    calls: list[bytes] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.content)
        await asyncio.sleep(0)  # the others arrive while this one is asked
        return httpx.Response(200, json={"choices": [{"index": 0, "message": {"content": " four five six"}}]})

    async def run() -> list[str | None]:
        s = MidReplyChecks(Upstream("http://up/v1", httpx.MockTransport(handler), forward_client_key=True))
        got = await asyncio.gather(*(s.probe({"model": "m"}, {}) for _ in range(5)))
        assert s.header({"model": "m"}) == "mid-reply"
        await s.upstream.close()
        return list(got)

    assert asyncio.run(run()) == [None] * 5 and len(calls) == 1


@pytest.mark.parametrize(("stream", "settle"), [(True, True), (False, True), (True, False)])
def test_the_demo_upstream_continues_its_check_reply_after_the_dice(tmp_path, stream, settle):
    """Tried as a new user: `serve --upstream demo --settle-checks` and a turn that says roll."""
    demo = json.loads((SAMPLES / "transcripts" / "demo-check.json").read_text())
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed=SEED)
    store.close()
    with Running(make_app(Options(upstream="demo", data=data, campaign="heist", settle_checks=settle))) as srv:
        c = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=30)
        text, header = ask(c, "Lurk sneaks up on the clerk. Roll for it.", stream)
    rs = load_sample("blades-like")
    state = GameState.new(rs, ["Cutter", "Lurk"], seed=SEED)
    receipt = apply_reply(rs, state, demo["reply"]).text
    after = demo["after"][outcome_of(receipt)] if settle else demo["unsettled"]
    assert text == apply_reply(rs, state, demo["reply"] + after).text
    assert text.startswith(receipt) and header == ("mid-reply" if settle else None)


def test_a_settled_reply_is_kept_and_the_next_turn_replays_it_exactly(tmp_path):
    """The stored reply is the client's text (receipts and continuation): the chain replays it to the same
    state (DEC-5), so the next turn sees no broken history and starts from the dice after the check."""
    fake = Fake(SCRIPT, after_check="continue")
    with serving(tmp_path, fake) as c:
        text, _ = ask(c, "ward", True)
        msgs = [{"role": "system", "content": "You are the GM."}, {"role": "user", "content": "TURN:ward"},
                {"role": "assistant", "content": text}, {"role": "user", "content": "TURN:plain"}]
        raw = c.chat.completions.with_raw_response.create(model="scripted", messages=msgs)
    after = apply_reply(RS, start(), text).state
    assert "x-tagengine-history" not in raw.headers
    assert raw.parse().choices[0].message.content == apply_reply(RS, after, SCRIPT["plain"]).text
    assert after.dice.rolls > 0
