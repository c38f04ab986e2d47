"""Issue 28 item 7 (decision STX-9): `--upstream demo` plays a longer, valid game (samples/transcripts/
demo-game.json): every tag of every reply is judged ok whichever version of each reply a player's regenerates
and swipes chose, a regenerate or a swipe gets the other version, and after the script the demo says so."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from serve_kit import Running

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import Campaigns, new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.upstream.demo import DemoGame, player_turn
from tagengine._internal.state import GameState

GAME = json.loads((SAMPLES / "transcripts" / "demo-game.json").read_text(encoding="utf-8"))
GM_CARD = json.loads((SAMPLES / "sillytavern" / "game-master.json").read_text(encoding="utf-8"))


def test_every_path_through_the_demo_game_is_judged_ok():
    """Each reply in each of its versions, applied to every state the versions before it can leave: no receipt
    refused or partial (the first receipt a new user sees is never a refusal), and each turn changes the game."""
    rs = load_sample(GAME["ruleset"])
    assert len(GAME["replies"]) >= 10 and all(len(v) == 2 for v in GAME["replies"])
    states = {"": GameState.new(rs, GAME["characters"])}
    paths = 0
    for turn, versions in enumerate(GAME["replies"], 1):
        after: dict[str, GameState] = {}
        for state in states.values():
            for v, reply in enumerate(versions):
                applied = apply_reply(rs, state, reply)
                results = [r.result for r in applied.receipts]
                assert results and set(results) == {"ok"}, (turn, v, applied.text)
                assert applied.state.to_json() != state.to_json(), (turn, v)
                after.setdefault(json.dumps(applied.state.to_json(), sort_keys=True), applied.state)
                paths += 1
        states = after
    assert paths > 2 * len(GAME["replies"])  # the versions lead to states of their own, each tried onwards


def test_the_demo_answers_the_players_turn_and_a_second_asking_with_the_other_version():
    game = DemoGame.load(None)
    assert game.reply(1, 0) == GAME["replies"][0][0] and game.reply(1, 1) == GAME["replies"][0][1]
    assert game.reply(1, 2) == GAME["replies"][0][0]
    last = len(GAME["replies"])
    assert game.reply(last + 1, 0) == GAME["end"].format(last=last, turn=last + 1)
    system = {"role": "system", "content": "rules"}
    assert player_turn([system, {"role": "assistant", "content": "greeting"}, {"role": "user", "content": "go"}]) == 1


def serve_demo(tmp_path: Any) -> tuple[Running, GameState]:
    """The demo server with the campaign `heist`, and the campaign's start (its dice seed too)."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), GAME["characters"])
    start = Campaigns(store).get("heist").start
    store.close()
    return Running(make_app(Options(upstream="demo", data=data, campaign="heist"))), start


def ask(url: str, msgs: list[dict[str, str]], stream: bool = False) -> str:
    body = {"model": "m", "messages": msgs, "stream": stream}
    if not stream:
        return str(httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30).json()
                   ["choices"][0]["message"]["content"])
    text = []
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    text.append(choice["delta"].get("content") or "")
    return "".join(text)


def test_a_chat_plays_the_demo_game_through_the_server_and_a_regenerate_gets_the_other_version(tmp_path):
    """As SillyTavern plays it: the GM card's greeting, then the player's turns; every receipt ok, and a
    regenerate of a turn (the same messages again) answers with the reply's other version."""
    rs = load_sample("blades-like")
    running, state = serve_demo(tmp_path)
    msgs = [{"role": "system", "content": "You are the GM."},
            {"role": "assistant", "content": GM_CARD["data"]["first_mes"]}]
    with running as srv:
        for turn in range(1, 5):
            msgs.append({"role": "user", "content": f"we do thing {turn}"})
            got = ask(srv.url, msgs, stream=turn % 2 == 0)
            applied = apply_reply(rs, state, GAME["replies"][turn - 1][0])
            assert got == applied.text and 'result="refused"' not in got
            if turn == 2:  # the player regenerates turn two: the other version, from the same state
                again = ask(srv.url, msgs)
                assert again == apply_reply(rs, state, GAME["replies"][1][1]).text != got
            state = applied.state
            msgs.append({"role": "assistant", "content": got})
    assert [(c.name, c.filled) for c in state.clocks] == [("Alarm raised", 1), ("Patrol returns", 1)]


def test_the_gm_card_greets_any_campaign_and_the_demo_one_second():
    """samples/sillytavern/game-master.json: a SillyTavern character card (v2) whose greeting fits any campaign
    (it names no character), and whose second greeting opens the demo game's campaign; no tag in either (a
    greeting's tags would be judged before any turn) and no campaign marker (a card's marker would name the
    campaign for every chat with the card)."""
    data = GM_CARD["data"]
    assert GM_CARD["spec"] == "chara_card_v2" and data["name"] and data["first_mes"]
    greetings = [data["first_mes"], *data["alternate_greetings"]]
    assert all("[" not in g for g in greetings) and "[tagengine:" not in json.dumps(GM_CARD)
    assert not any(name in data["first_mes"] for name in GAME["characters"])
    assert all(name in data["alternate_greetings"][0] for name in GAME["characters"])


def serve_any(tmp_path: Any, ruleset: str, names: list[str]) -> tuple[Running, GameState]:
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "mine", str(SAMPLES / "rulesets" / f"{ruleset}.json"), names)
    start = Campaigns(store).get("mine").start
    store.close()
    return Running(make_app(Options(upstream="demo", data=data, campaign="mine"))), start


@pytest.mark.parametrize("ruleset", ["blades-like", "fifth-like", "gravewatch", "ember-roads"])
def test_the_demo_plays_a_campaign_of_the_players_own_characters(tmp_path, ruleset):
    """A campaign of Vex and Rook (not the script's Cutter and Lurk), on each sample ruleset: from the first reply
    every receipt is ok and names them (the demo reads them, and the tags taught, from the server's reminder);
    a reply names each character in turn, a clock runs where the rules have clocks, and "I roll" gets a check."""
    rs = load_sample(ruleset)
    running, state = serve_any(tmp_path, ruleset, ["Vex", "Rook"])
    msgs = [{"role": "system", "content": "You are the GM."},
            {"role": "assistant", "content": GM_CARD["data"]["first_mes"]}]
    named: set[str] = set()
    with running as srv:
        for turn in range(1, 7):
            msgs.append({"role": "user", "content": "I roll for it" if turn == 5 else f"we do thing {turn}"})
            got = ask(srv.url, msgs, stream=turn % 2 == 0)
            applied = apply_reply(rs, state, got)  # the receipts as the server wrote them, judged again
            results = [r.result for r in applied.receipts]
            assert results and set(results) == {"ok"}, (turn, got)
            assert 'result="refused"' not in got and "Cutter" not in got and "Lurk" not in got
            named |= {n for n in ("Vex", "Rook") if f'who="{n}"' in got}
            if turn == 5:
                assert "[check:" in got
            msgs.append({"role": "assistant", "content": got})
            state = applied.state
    assert named == {"Vex", "Rook"}
