"""Issue 28 items 2, 4, 6: the state of the chat on screen (POST /tagengine/api/state, decisions STX-3, STX-4,
STX-7), the campaigns the picker lists, an unknown campaign's model list, the pages' turn, SillyTavern's bridge
to the JSON API (STX-2) and CORS for an allowed origin. A real client against `tagengine serve` on loopback, in
front of the scripted upstream."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.pages.chat_panel import panel_json
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.state import GameState

STATE = "/tagengine/api/state"
MARK = '[tagengine: campaign="heist"]'
SCRIPT = {"one": 'The lock gives. [clock: name="Alarm raised" size="6"]',
          "two": 'A bell rings. [clock: name="Alarm raised" tick="1"]',
          "three": 'Boots on the stair. [clock: name="Alarm raised" tick="2"]'}
SWIPE = 'A dog barks. [clock: name="Alarm raised" tick="3"]'  # another version of turn two
KEY = "state-key"


@contextmanager
def serving(tmp_path: Path, **kw: Any) -> Iterator[tuple[str, Any]]:
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"])
    store.close()
    with Running(Fake(dict(SCRIPT)).app()) as up:
        app = make_app(Options(upstream=f"{up.url}/v1", data=data, **kw))
        with Running(app) as srv:
            yield srv.url, app.state.context


def chat(turns: list[str], replies: list[str], mark: str | None = MARK) -> list[dict[str, str]]:
    msgs = [] if mark is None else [{"role": "system", "content": f"You are the GM. {mark}"}]
    for i, t in enumerate(turns):
        msgs.append({"role": "user", "content": f"TURN:{t}"})
        if i < len(replies):
            msgs.append({"role": "assistant", "content": replies[i]})
    return msgs


def play(url: str, ctx: Any, turns: list[str], headers: dict[str, str] | None = None) -> list[str]:
    """Each turn played through the chat route, each reply kept as a chat app keeps it."""
    replies: list[str] = []
    for n in range(len(turns)):
        got = httpx.post(f"{url}/v1/chat/completions", headers=headers,
                         json={"model": "m", "messages": chat(turns[:n + 1], replies)})
        replies.append(got.json()["choices"][0]["message"]["content"])
        settled(ctx, n + 1)
    return replies


def settled(ctx: Any, turn: int) -> None:
    for _ in range(500):  # bounded: the head is kept once the answer has gone (S-24)
        head = ctx.store.head("heist")
        if head is not None and head[1] == turn:
            return
        time.sleep(0.01)
    raise AssertionError(f"the pages never reached turn {turn}: {ctx.store.head('heist')}")


def replayed(replies: list[str]) -> tuple[GameState, list[dict[str, Any]]]:
    """The state after the raw replies, each applied to the state the ones before left, and the last's receipts."""
    rs = load_sample("blades-like")
    state, receipts = GameState.new(rs, ["Cutter", "Lurk"]), []
    for r in replies:
        a = apply_reply(rs, state, r)
        state, receipts = a.state, [x.to_json() for x in a.receipts]
    return state, receipts


def clocks(doc: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: f'{c["filled"]}/{c["size"]}' for c in doc["sheet"]["clocks"]}


def test_the_state_is_the_chat_on_screen_and_a_swipe_shows_its_own(tmp_path):
    """The panel's sheet is the state after the chat's own messages: the swipe selected, not the newest reply
    the server saw; asking moves nothing the pages show."""
    with serving(tmp_path) as (url, ctx):
        replies = play(url, ctx, ["one", "two", "three"])
        head, prompt = ctx.store.head("heist"), ctx.latest.prompts["heist"]
        whole = httpx.post(f"{url}{STATE}", json={"messages": chat(["one", "two", "three"], replies)})
        # the player swiped turn two to another version and deleted turn three: that chat's state, never sent
        swiped = httpx.post(f"{url}{STATE}", json={"messages": chat(["one", "two"], [replies[0], SWIPE])})
        back = httpx.post(f"{url}{STATE}", json={"messages": chat(["one", "two"], replies[:2])})
        empty = httpx.post(f"{url}{STATE}", json={"messages": chat(["one"], [])})
        assert ctx.store.head("heist") == head and ctx.latest.prompts["heist"] is prompt
    doc = whole.json()
    assert whole.status_code == 200 and doc["campaign"] == {"name": "heist", "by": "marker", "warning": None,
                                                            "ruleset": "Blades-like Crew"}
    assert doc["turn"] == 3 and clocks(doc) == {"Alarm raised": "3/6"} and doc["history"] == []
    state, receipts = replayed([SCRIPT["one"], SCRIPT["two"], SCRIPT["three"]])
    assert doc["sheet"] == json.loads(json.dumps(panel_json(load_sample("blades-like"), state, receipts))) and receipts
    assert (swiped.json()["turn"], clocks(swiped.json())) == (2, {"Alarm raised": "3/6"})
    swiped_state, swiped_receipts = replayed([SCRIPT["one"], SWIPE])
    assert swiped.json()["sheet"] == json.loads(json.dumps(panel_json(load_sample("blades-like"), swiped_state,
                                                                      swiped_receipts)))
    assert (back.json()["turn"], clocks(back.json())) == (2, {"Alarm raised": "1/6"})
    assert (empty.json()["turn"], clocks(empty.json()), empty.json()["sheet"]["receipts"]) == (0, {}, [])


def test_the_campaign_is_said_with_how_it_was_chosen(tmp_path):
    """STX-3: the body's campaign, else the chat's marker, else the /c/NAME prefix, else --campaign; a chat
    with none is said plainly (no sheet), an unknown one is a 404 that still says the campaign and how."""
    with serving(tmp_path, campaign="vault") as (url, _):
        def state(path: str, messages: list[dict[str, str]], **extra: Any) -> httpx.Response:
            return httpx.post(f"{url}{path}", json={"messages": messages, **extra})

        marker = state("/tagengine/api/c/vault/state", chat(["one"], []))
        prefix = state("/tagengine/api/c/heist/state", chat(["one"], [], mark=None))
        default = state(STATE, chat(["one"], [], mark=None))
        asked = state(STATE, chat(["one"], []), campaign="vault")
        unknown = state(STATE, chat(["one"], [], mark='[tagengine: campaign="heits"]'))
        unknown_url = state("/tagengine/api/c/nosuch/state", chat(["one"], [], mark=None))
    with serving(tmp_path / "2") as (url, _):
        none = httpx.post(f"{url}{STATE}", json={"messages": chat(["one"], [], mark=None)})
    said = [(r.json()["campaign"]["name"], r.json()["campaign"]["by"]) for r in (marker, prefix, default, asked)]
    assert said == [("heist", "marker"), ("heist", "url"), ("vault", "default"), ("vault", "asked")]
    # in the order the campaign was started with (STX-16), not the start state's sorted keys
    assert [c["name"] for c in default.json()["sheet"]["characters"]] == ["Mira", "Bram"]
    assert none.status_code == 200 and none.json() == {"campaign": {"name": None, "by": None, "warning": None},
                                                        "turn": None, "sheet": None}
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "campaign_not_found"
    assert unknown.json()["campaign"]["name"] == "heits" and unknown.json()["campaign"]["by"] == "marker"
    assert unknown_url.status_code == 404 and unknown_url.json()["campaign"]["by"] == "url"


def test_the_campaigns_the_picker_lists(tmp_path):
    with serving(tmp_path, campaign="heist") as (url, _):
        got = httpx.get(f"{url}/tagengine/api/campaigns").json()
    assert got == {"campaigns": [{"name": "heist", "characters": ["Cutter", "Lurk"]},
                                 {"name": "vault", "characters": ["Mira", "Bram"]}], "default": "heist"}


def test_an_unknown_campaigns_model_list_is_a_404(tmp_path):
    """A misspelled campaign in a chat app's URL does not connect as valid (SillyTavern's Connect)."""
    with serving(tmp_path) as (url, _):
        good = httpx.get(f"{url}/c/heist/v1/models")
        plain = httpx.get(f"{url}/v1/models")
        bad = httpx.get(f"{url}/c/heits/v1/models")
    assert good.status_code == plain.status_code == 200 and good.json()["data"][0]["id"] == "scripted"
    assert bad.status_code == 404 and bad.json()["error"]["code"] == "campaign_not_found"
    assert "heits" in bad.json()["error"]["message"]


def test_an_edited_reply_is_written_again_with_the_replies_after_it(tmp_path):
    """STX-7: a reply the player edited (a tick of 1 made 4) replays to other receipts; `rewrite_from` gives
    each reply from there on as the replay writes it, and the state follows the edit."""
    with serving(tmp_path) as (url, ctx):
        replies = play(url, ctx, ["one", "two", "three"])
        edited = [replies[0], replies[1].replace('tick="1"', 'tick="4"'), replies[2]]
        msgs = chat(["one", "two", "three"], edited)
        got = httpx.post(f"{url}{STATE}", json={"messages": msgs, "rewrite_from": 3}).json()
        again = httpx.post(f"{url}{STATE}", json={"messages": msgs[:3] + [
            {**m, "content": next((r["text"] for r in got["rewrites"] if r["index"] == i), m["content"])}
            for i, m in enumerate(msgs) if i >= 3], "rewrite_from": 3}).json()
        unedited = httpx.post(f"{url}{STATE}", json={"messages": chat(["one", "two", "three"], replies),
                                                     "rewrite_from": 0}).json()
    assert [r["index"] for r in got["rewrites"]] == [4, 6]
    assert 'tick="4" result="ok" now="4/6"' in got["rewrites"][0]["text"]
    assert 'tick="2" result="ok" now="6/6"' in got["rewrites"][1]["text"]
    assert clocks(got) == {"Alarm raised": "6/6"} and got["history"]  # the chat no longer reads as it was kept
    assert again["rewrites"] == [] and clocks(again) == {"Alarm raised": "6/6"}
    assert unedited["rewrites"] == [] and clocks(unedited) == {"Alarm raised": "3/6"}


@pytest.mark.parametrize(("body", "code"), [
    ([], "invalid_request"), ({"messages": [], "turn": 1}, "invalid_request"),
    ({"messages": "hi"}, "invalid_messages"), ({"messages": [], "campaign": 3}, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": -1}, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": "1"}, "invalid_request")])
def test_a_bad_state_request_is_a_400_naming_why(tmp_path, body, code):
    with serving(tmp_path) as (url, _):
        got = httpx.post(f"{url}{STATE}", json=body)
        raw = httpx.post(f"{url}{STATE}", content=b"{", headers={"content-type": "application/json"})
    assert got.status_code == 400 and got.json()["error"]["code"] == code
    assert raw.status_code == 400 and raw.json()["error"]["code"] == "invalid_json"


def test_the_pages_turn_counts_the_replies_of_the_chain(tmp_path):
    """STX-8: a regenerate of turn two is turn two again on the pages, not turn three."""
    with serving(tmp_path) as (url, ctx):
        replies = play(url, ctx, ["one", "two"])
        httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": chat(["one", "two"], replies[:1])})
        time.sleep(0.3)  # bounded: the regenerated reply's head is kept once its answer has gone
        head = ctx.store.head("heist")
        page = httpx.get(f"{url}/ui/c/heist").text
    assert head is not None and head[1] == 2
    assert "turn 2" in page.lower() and "turn 3" not in page.lower()


def bridged(url: str, call: dict[str, Any], messages: list[dict[str, str]],
            key: str | None = None) -> httpx.Response:
    """What SillyTavern's server posts for the extension: the chat's messages, the call in `tagengine`
    (the Custom endpoint's `custom_include_body`), the Custom key as the bearer token."""
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    return httpx.post(f"{url}/tagengine/bridge/chat/completions", headers=headers,
                      json={"messages": messages, "model": "tagengine", "stream": False, "tagengine": call})


def test_sillytavern_reaches_the_json_api_through_its_bridge(tmp_path):
    """STX-2: the same answer as a direct call, in an envelope that is always a 200; the key is checked as for
    any request; only the JSON API's paths may be named."""
    with serving(tmp_path, api_key=KEY) as (url, ctx):
        replies = play(url, ctx, ["one", "two"], headers={"authorization": f"Bearer {KEY}"})
        msgs = chat(["one", "two"], replies)
        direct = httpx.post(f"{url}{STATE}", json={"messages": msgs}, headers={"authorization": f"Bearer {KEY}"})
        via = bridged(url, {"method": "POST", "path": STATE, "messages": True}, msgs, KEY)
        listed = bridged(url, {"method": "GET", "path": "/tagengine/api/campaigns"}, [], KEY)
        keyless = bridged(url, {"method": "POST", "path": STATE, "messages": True}, msgs)
        outside = bridged(url, {"method": "POST", "path": "/v1/chat/completions", "messages": True}, msgs, KEY)
        sneaky = bridged(url, {"method": "GET", "path": "/tagengine/api/%2e%2e/../ui/"}, [], KEY)
        nothing = httpx.post(f"{url}/tagengine/bridge/chat/completions", json={"messages": msgs},
                             headers={"authorization": f"Bearer {KEY}"})
    assert direct.status_code == 200 and via.status_code == 200
    assert via.json()["tagengine"] == {"status": 200, "body": direct.json()}
    assert listed.json()["tagengine"]["body"]["campaigns"][0]["name"] == "heist"
    assert keyless.status_code == 401  # the bridge request itself: SillyTavern then says "Unauthorized"
    for r in (outside, sneaky, nothing):
        assert r.status_code == 200 and r.json()["tagengine"]["status"] == 400, r.text
        assert r.json()["tagengine"]["body"]["error"]["code"] == "invalid_request"


def test_an_allowed_origins_page_calls_the_state_endpoint(tmp_path):
    """The direct address (STX-2): CORS for the SillyTavern origin given to --allow-origin, and no other."""
    st = "http://127.0.0.1:8000"
    with serving(tmp_path, allow_origin=(st,)) as (url, _):
        pre = httpx.options(f"{url}{STATE}", headers={"origin": st, "access-control-request-method": "POST",
                                                      "access-control-request-headers": "content-type"})
        post = httpx.post(f"{url}{STATE}", json={"messages": chat(["one"], [])}, headers={"origin": st})
        other = httpx.post(f"{url}{STATE}", json={"messages": chat(["one"], [])},
                           headers={"origin": "http://127.0.0.1:9999"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == st
    assert post.status_code == 200 and post.headers["access-control-allow-origin"] == st
    assert post.json()["campaign"]["name"] == "heist"
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


def test_a_campaigns_state_has_one_path_and_the_older_one_answers_for_one_release(tmp_path):
    """`/tagengine/api/c/NAME/state` names the campaign as every JSON API path does; `/c/NAME/tagengine/api/state`
    (the path before the API had one scheme) answers the same, marked `Deprecation` with a `Link` to it."""
    with serving(tmp_path) as (url, _):
        body = {"messages": chat(["one"], [], mark=None)}
        now = httpx.post(f"{url}/tagengine/api/c/vault/state", json=body, timeout=30)
        was = httpx.post(f"{url}/c/vault/tagengine/api/state", json=body, timeout=30)
    assert now.status_code == was.status_code == 200 and now.json() == was.json()
    assert now.json()["campaign"]["name"] == "vault" and now.json()["campaign"]["by"] == "url"
    assert was.headers["deprecation"] == "true" and "deprecation" not in now.headers
    assert was.headers["link"] == '</tagengine/api/c/{campaign}/state>; rel="successor-version"'
