"""Issue 12, "And the real chat app": SillyTavern's own server (tests/st_kit.py) in front of `tagengine serve`
in front of the scripted upstream (tests/serve_kit.py). The test posts what SillyTavern's page posts to
its server for a Chat Completion with the source "Custom (OpenAI-compatible)"; SillyTavern's server
forwards it to our /v1 as it does for a user. A few turns, streamed and not, then a swipe of the last
reply (its regeneration with another answer), then a turn after the swipe."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running
from st_kit import SillyTavern, generate, generate_stream, sillytavern

from conftest import SAMPLES
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import Campaign, Campaigns, new_campaign
from tagengine._internal.server.memory.chain import Chain
from tagengine._internal.server.memory.store import Store
from tagengine._internal.state import GameState

pytestmark = pytest.mark.slow

CREW = [m["content"] for m in json.loads((SAMPLES / "transcripts" / "crew-night.jsonl").read_text().splitlines()[0])
        ["messages"] if m["role"] == "assistant"]
SWIPE = ('The bells stay silent, for now. [clock: name="Alarm raised" tick="1"]\n'
         '[sheet: who="Lurk" op="spend" pool="stress" amount="2"]')
# "two" ends in blank lines: the page stores replies trimmed (its default "Trim spaces"), so the chat then holds
# another text than the one the server answered and keyed
SCRIPT = {"one": CREW[0], "two": CREW[1] + "\n\n", "three": CREW[2],
          "four": 'More noise. [clock: name="Alarm raised" tick="1"]'}
GREETING = "The counting-house looms over the canal. What does the crew do?"  # the card's first message: no tags
NOTE = '[tagengine: campaign="heist"]'  # the per-chat Author's Note
KEY = "st-e2e-key"  # `tagengine serve --api-key`, stored in SillyTavern as the Custom API key


@pytest.fixture(scope="module")
def st(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SillyTavern]:
    with sillytavern(tmp_path_factory.mktemp("sillytavern")) as s:
        # what the user types into "Custom API Key": SillyTavern keeps it and sends it as the bearer token
        assert s.client.post("/api/secrets/write", json={"key": "api_key_custom", "value": KEY}).status_code == 200
        yield s


def prompt(turns: list[str], stored: list[str]) -> list[dict[str, str]]:
    """The messages SillyTavern's page builds for a one-character chat with the default prompt order: main
    prompt, card, "[Start a new Chat]", the card's greeting, then the chat, with the Author's Note at its
    default place (a system message at depth 4 of the chat history)."""
    chat = [{"role": "assistant", "content": GREETING}]
    for i, t in enumerate(turns):
        chat.append({"role": "user", "content": f"TURN:{t}"})
        if i < len(stored):
            chat.append({"role": "assistant", "content": stored[i]})
    chat.insert(max(0, len(chat) - 4), {"role": "system", "content": NOTE})
    return [{"role": "system", "content": "Write GM's next reply in a fictional chat between GM and User."},
            {"role": "system", "content": "GM runs a heist for the crew in a haunted industrial city."},
            {"role": "system", "content": "[Start a new Chat]"}, *chat]


def body(base: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    """A generate request as SillyTavern 1.19.0's page sends it (public/scripts/openai.js) for the Custom source."""
    return {"type": "normal", "messages": messages, "model": "scripted", "temperature": 1, "frequency_penalty": 0,
            "presence_penalty": 0, "top_p": 1, "max_tokens": 300, "chat_completion_source": "custom",
            "user_name": "User", "char_name": "GM", "group_names": [], "include_reasoning": False,
            "reasoning_effort": "auto", "enable_web_search": False, "custom_prompt_post_processing": "",
            "custom_url": base, "custom_include_body": "", "custom_exclude_body": "", "custom_include_headers": ""}


def ask(st: SillyTavern, base: str, messages: list[dict[str, str]], stream: bool) -> str:
    if stream:
        status, text, items = generate_stream(st, body(base, messages))
        assert status == 200 and items, items
        return text
    status, doc = generate(st, body(base, messages))
    assert status == 200 and "error" not in doc, doc
    content: str = doc["choices"][0]["message"]["content"]
    return content


def replayed(c: Campaign, replies: list[str]) -> tuple[list[str], GameState]:
    """What a chat app stores for these raw replies (the greeting first), and the state after them."""
    state, out = c.start, []
    for r in [GREETING, *replies]:
        a = apply_reply(c.rs, state, r)
        state = a.state
        out.append(a.text)
    return out[1:], state


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_sillytavern_plays_turns_and_a_swipe_through_tagengine_serve(st: SillyTavern, tmp_path: Path,
                                                                     stream: bool) -> None:
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    campaign = Campaigns(store).get("heist")
    store.close()
    fake = Fake(dict(SCRIPT))
    with Running(fake.app()) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=data, api_key=KEY))) as srv:
        base = f"{srv.url}/v1"
        turns = ["one", "two", "three"]
        stored: list[str] = []
        for n in range(3):  # three turns, each applied to the state the ones before left
            got = ask(st, base, prompt(turns[:n + 1], stored), stream)
            assert got == replayed(campaign, [SCRIPT[t] for t in turns[:n + 1]])[0][n]
            stored.append(got.strip())  # what the page keeps
        assert 'size="6" result="ok" now="0/6"' in stored[0] and 'now="6/6"' in stored[2]
        # a swipe on the last reply: SillyTavern sends the chat without it, and the model answers otherwise
        fake.script["three"] = SWIPE
        swiped = ask(st, base, prompt(turns, stored[:2]), stream)
        assert swiped == replayed(campaign, [CREW[0], CREW[1], SWIPE])[0][2] != stored[2]
        assert 'tick="1" result="ok" now="3/6"' in swiped  # from the state before the discarded reply (2/6)
        # the next turn follows the swipe the chat now holds, not the reply it replaced
        fourth = ask(st, base, prompt([*turns, "four"], [*stored[:2], swiped]), stream)
        assert fourth == replayed(campaign, [CREW[0], CREW[1], SWIPE, SCRIPT["four"]])[0][3]
        assert 'now="4/6"' in fourth
    # every request reached the model through both servers, the campaign marker stripped on the way
    assert len(fake.bodies) == 5
    assert all(NOTE not in raw.decode() and "TURN:" in raw.decode() for raw in fake.bodies)
    # the state right after the swipe is the one the server keeps for that history: a snapshot, nothing replayed
    store = Store(data)
    try:
        after = Chain(store).state_of(Campaigns(store).get("heist"),
                                      [{"role": "assistant", "content": t} for t in [GREETING, *stored[:2], swiped]])
    finally:
        store.close()
    assert after.replayed == 0 and after.consistent
    want = replayed(campaign, [CREW[0], CREW[1], SWIPE])[1]
    assert after.state.to_json() == want.to_json()
    assert want.to_json() != replayed(campaign, CREW)[1].to_json()  # the discarded reply left another state


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_error_from_tagengine_serve_through_sillytavern(st: SillyTavern, tmp_path: Path, stream: bool) -> None:
    """An unknown campaign is our 404 in the OpenAI format. SillyTavern passes a streamed request's error
    through (status and body); for a whole one it answers 200 with only the status text, as
    `{"error": {"message": "Not Found"}}` (its page shows that), and logs our body in its console."""
    Store(tmp_path / "data").close()
    with Running(Fake(dict(SCRIPT)).app()) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=tmp_path / "data", api_key=KEY))) as srv:
        messages = [{"role": "system", "content": '[tagengine: campaign="nowhere"]'},
                    {"role": "user", "content": "TURN:one"}]
        if stream:
            got = st.client.post("/api/backends/chat-completions/generate",
                                 json={**body(f"{srv.url}/v1", messages), "stream": True})
            assert got.status_code == 404
            assert got.json()["error"]["code"] == "campaign_not_found" and "nowhere" in got.json()["error"]["message"]
        else:
            status, doc = generate(st, body(f"{srv.url}/v1", messages))
            assert status == 200 and doc["error"]["message"] == "Not Found"
            assert "campaign_not_found" in st.log.read_text(errors="replace")


def test_the_kit_stops_sillytavern_when_a_test_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="a failing test"), sillytavern(tmp_path) as s:
        url = s.url
        assert s.client.get("/csrf-token").status_code == 200
        raise RuntimeError("a failing test")
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/csrf-token", timeout=5)


def test_sillytavern_quiet_requests_move_nothing(st: SillyTavern, tmp_path: Path) -> None:
    """Issue 26 item 11 (TR-5), through SillyTavern's own server, with `--campaign heist` as the docs start it:
    its Test Message (`[{"role": "user", "content": "Hi"}]`, not streamed), an Impersonate with its default
    prompt, and an Impersonate whose prompt the user edited, told by the header the docs have the user add in
    *Additional Parameters* (`X-Tagengine-Type: "{{lastGenerationType}}"`, which the page expands): none is
    taught the game, none moves what the pages show. Before, the Test Message reset the sheet to 0/6."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    store.close()
    hello = 'Hello. [clock: name="Alarm raised" tick="-6"]'
    fake = Fake({**SCRIPT, "Hi": hello})
    with Running(fake.app()) as up:
        app = make_app(Options(upstream=f"{up.url}/v1", data=data, api_key=KEY, campaign="heist"))
        ctx = app.state.context
        with Running(app) as srv:
            base = f"{srv.url}/v1"
            stored: list[str] = []
            for n in range(3):
                stored.append(ask(st, base, prompt(["one", "two", "three"][:n + 1], stored), n == 1).strip())
            assert 'now="6/6"' in stored[2]
            for _ in range(500):  # bounded: the third turn's head is kept once its answer has gone
                if (ctx.store.head("heist") or ("", 0))[1] == 3:
                    break
                time.sleep(0.01)
            head, shown = ctx.store.head("heist"), ctx.latest.prompts["heist"]
            assert head is not None and head[1] == 3
            status, doc = generate(st, body(base, [{"role": "user", "content": "Hi"}]))  # Test Message
            assert status == 200 and doc["choices"][0]["message"]["content"] == hello  # as the model wrote it
            impersonate = {"role": "system", "content": "[Write your next reply from the point of view of User, using "
                           "the chat history so far as a guideline for the writing style of User. Don't write as GM "
                           "or system. Don't describe actions of GM.]"}
            assert ask(st, base, [*prompt(["one", "two", "three"], stored), impersonate], True) == SCRIPT["three"]
            edited = {**body(base, [*prompt(["one", "two", "three"], stored),
                                    {"role": "system", "content": "Now write as the player."}]),
                      "custom_include_headers": 'X-Tagengine-Type: "impersonate"'}
            status, items = generate(st, edited)
            assert status == 200 and items["choices"][0]["message"]["content"] == SCRIPT["three"]
            time.sleep(0.3)  # bounded: what a turn keeps after its answer would have been kept by now
            assert ctx.store.head("heist") == head and ctx.latest.prompts["heist"] is shown
    quiet = [json.loads(raw) for raw in fake.bodies[3:]]
    assert len(quiet) == 3 and all(NOTE not in json.dumps(q) for q in quiet)
    assert quiet[0]["messages"] == [{"role": "user", "content": "Hi"}]  # as SillyTavern sent it: not taught
    assert fake.headers[-1]["x-tagengine-type"] == "impersonate"  # SillyTavern passed the header on
