"""Issue 27 item 3: a player's edit is part of the game (docs/editor.md, decisions ED-6, ED-14..ED-18).

An edit made through the server (the JSON API here; the pages in test_pages_editor.py) waits at the chain key it
was made at; the next reply from that key opens with its receipts, whole or streamed, continued, with
--hide-tags or --settle-checks; regenerating keeps them; a history that went back past the key never meets them;
and the chat alone (the data folder deleted) replays to the same state. Real clients against `tagengine serve`
on loopback, before the scripted upstream of tests/serve_kit.py; the turn's step is also called without HTTP."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running

from conftest import SAMPLES, load_sample
from tagengine._internal.chat import Chat
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.edits.points import history_point, newest_point, save_edit
from tagengine._internal.server.limits import EDIT_KEYS, EDITS_WAITING
from tagengine._internal.server.memory.campaigns import Campaigns, new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store
from tagengine._internal.server.turn.request import read_marked
from tagengine._internal.server.turn.steps import begin, fit, open_with_edits
from tagengine._internal.sheet import view_character
from tagengine._internal.state import GameState
from tagengine._internal.tags import narration

RS = load_sample("gravewatch")
SEED = "edits-seed"
SCRIPT = {
    "one": 'The hound circles. [sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"]',
    "two": 'Dawn greys the stones. [sheet: who="Mira" op="spend" pool="resolve" amount="1"]',
    "three": "The wardens rest.",
    "ward": 'Mira lifts the lantern. [check: who="Mira" skill="Ward"] The ward: {outcome}.',
}
MARK = '[tagengine: campaign="vault"]'
EDIT = {"fields.oath": "Never again <script>x</script>", "marks.harm.2": "knock"}


@contextmanager
def serving(tmp_path: Path, **kw: Any) -> Iterator[str]:
    data = tmp_path / "data"
    if not (data / DB_NAME).exists():
        store = Store(data)
        new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"], seed=SEED)
        store.close()
    fake = Fake(script={**SCRIPT, **kw.pop("extra", {})}, after_check=kw.pop("after_check", None))
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data, **kw))) as srv:
        yield srv.url


def start() -> GameState:
    return GameState.new(RS, ["Mira", "Bram"], seed=SEED)


def served_state(tmp_path: Path, messages: list[dict[str, str]]) -> GameState:
    """The state a server gives for the chat's messages (its chain over a data folder made afresh when the old one
    is gone: the campaign again, as `campaign new` with the same seed makes it)."""
    data = tmp_path / "data"
    if not (data / DB_NAME).exists():
        store = Store(data)
        new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"], seed=SEED)
        store.close()
    ctx = ServerContext(Options(upstream="demo", data=data))
    try:
        c = ctx.campaign("vault")
        return asyncio.run(ctx.replayed(c, [m for m in messages if m["role"] != "system"])).state
    finally:
        asyncio.run(ctx.close())


class Player:
    """A chat app's side: its messages, and the server it talks to."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.messages: list[dict[str, str]] = [{"role": "system", "content": f"You are the GM. {MARK}"}]
        self.bodies: list[dict[str, Any]] = []

    def ask(self, turn: str | None, *, stream: bool = False, prefill: str | None = None) -> str:
        msgs = list(self.messages)
        if turn is not None:
            msgs.append({"role": "user", "content": f"TURN:{turn}"})
        if prefill is not None:
            msgs.append({"role": "assistant", "content": prefill})
        body = {"model": "m", "messages": msgs, "stream": stream}
        with httpx.Client(timeout=30) as h:
            if not stream:
                r = h.post(f"{self.url}/v1/chat/completions", json=body)
                assert r.status_code == 200, r.text
                return str(r.json()["choices"][0]["message"]["content"])
            text = ""
            with h.stream("POST", f"{self.url}/v1/chat/completions", json=body) as r:
                assert r.status_code == 200
                for line in r.iter_lines():
                    if line.startswith("data: {"):
                        for ch in json.loads(line[6:])["choices"]:
                            text += ch["delta"].get("content") or ""
            return text

    def turn(self, name: str, **kw: Any) -> str:
        """A turn, and its reply kept: the server records it once the answer has gone (S-24), so the pages' and
        the API's newest reply is waited for (bounded) before the player edits again."""
        before = self.newest()
        text = self.ask(name, **kw)
        self.messages += [{"role": "user", "content": f"TURN:{name}"}, {"role": "assistant", "content": text}]
        for _ in range(500):
            if self.newest() != before:
                break
            time.sleep(0.01)
        return text

    def newest(self) -> Any:
        """The newest reply's key: a turn's number may stay as it was (a reply from an older point of the chat
        takes that point's number, STX-8), its key does not."""
        return httpx.get(f"{self.url}/tagengine/api/c/vault").json()["at"]["key"]

    def edit(self, who: str, changes: dict[str, Any], **body: Any) -> httpx.Response:
        return httpx.post(f"{self.url}/tagengine/api/c/vault/characters/{who}", json={"changes": changes, **body})


def replayed(messages: list[dict[str, str]], begin_with: GameState | None = None) -> GameState:
    """The state the chat alone gives: a replay from the campaign's start, no server and no store."""
    return Chat.from_history(RS, begin_with or start(), [m for m in messages if m["role"] != "system"]).state


def server_state(url: str) -> dict[str, Any]:
    """The server's state at its newest reply, with the edits waiting there, as the API's forms show it."""
    got = httpx.get(f"{url}/tagengine/api/c/vault/characters/Mira").json()["form"]
    return got


@pytest.mark.parametrize("stream", [False, True])
def test_an_edit_opens_the_next_reply_and_the_chat_alone_replays_it(tmp_path, stream):
    """ED-6: after one reply, an edit waits at its key (the pages and the API show it at once), the next reply
    opens with its receipt (whole or streamed), and the chat's text alone gives the same state: the data folder
    deleted, a replay from the start makes the edit at the same point. WOUND-31: a box marked by hand."""
    with serving(tmp_path) as url:
        p = Player(url)
        p.turn("one", stream=stream)
        r = p.edit("Mira", EDIT)
        assert r.status_code == 200 and r.json()["at"]["waiting"] == 1, r.text
        form = r.json()["form"]
        oath = next(i for s in form["sections"] for i in s["inputs"] if i["path"] == "fields.oath")
        assert oath["value"] == EDIT["fields.oath"]
        two = p.turn("two", stream=stream)
        first, rest = two.split("\n", 1)
        assert first.startswith('[edit: by="player" who="Mira" changes="fields.oath=Never again <script>x</script>'
                                '&marks.harm.2=knock" mac="') and first.endswith('result="ok" now="2 changes"]')
        assert rest.startswith("Dawn greys the stones. [sheet: who=\"Mira\" op=\"spend\"")
        assert apply_reply(RS, replayed(p.messages[:3]), two).text == two  # the MAC verifies: it replays as written
        assert httpx.get(f"{url}/tagengine/api/c/vault").json()["at"]["waiting"] == 0  # the new key has none
        shown = httpx.get(f"{url}/tagengine/api/c/vault/characters/Mira").json()["form"]
    shutil.rmtree(tmp_path / "data")
    chat = replayed(p.messages)
    assert chat.cards["Mira"]["fields"]["oath"] == EDIT["fields.oath"]
    harm = next(w for w in view_character(RS, chat, "Mira").wounds if w.id == "harm")
    box = next(b for w in shown["play"]["wounds"] for b in w["boxes"] if b["path"] == "marks.harm.1")
    assert harm.cells[0] == "knock" and box["mark"] == "knock"  # a track of levels: the mark fills the first
    assert chat.to_json() == served_state(tmp_path, p.messages).to_json()
    assert commands_replay(tmp_path, p.messages) == (chat.to_json(), chat.to_json())


def commands_replay(tmp_path: Path, messages: list[dict[str, str]]) -> tuple[Any, Any]:
    """The state `tagengine replay` gives for the chat as a transcript line, and the one `tagengine st export`
    writes into the chat as a SillyTavern chat file: the commands a player runs on the chat alone (ED-6)."""
    from tagengine._internal.cli import run

    ruleset = str(SAMPLES / "rulesets" / "gravewatch.json")
    state_file = tmp_path / "start.json"
    state_file.write_text(json.dumps(start().to_json()))
    plain = [m for m in messages if m["role"] != "system"]
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(json.dumps({"id": "vault", "state": start().to_json(), "messages": plain}) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert run(["replay", ruleset, str(transcript), "-o", str(tmp_path / "replayed.jsonl")], out, err) == 0, \
        err.getvalue()
    replayed_state = json.loads((tmp_path / "replayed.jsonl").read_text())["state"]
    st_chat = tmp_path / "st" / "vault.jsonl"
    st_chat.parent.mkdir()
    head = {"user_name": "Player", "character_name": "GM", "create_date": "2026-12-01@10h00m00s",
            "chat_metadata": {}}
    rows = [{"name": "GM" if m["role"] == "assistant" else "Player", "is_user": m["role"] == "user",
             "is_system": False, "send_date": "December 1, 2026 10:00am", "mes": m["content"]} for m in plain]
    st_chat.write_text("\n".join(json.dumps(x) for x in (head, *rows)) + "\n")
    assert run(["st", "export", ruleset, str(st_chat), "--start", str(state_file), "-o",
                str(tmp_path / "exported.jsonl")], out, err) == 0, err.getvalue()
    last = json.loads((tmp_path / "exported.jsonl").read_text().splitlines()[-1])
    return replayed_state, last["extra"]["tagengine"]


def test_the_turn_step_opens_the_reply_with_the_edits_and_fits_the_prompt_to_them(tmp_path):
    """The named step `open_with_edits`, called without HTTP: the prompt is built from the state the waiting
    edits make; the opening is their receipts, made on the state at the turn's key."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"], seed=SEED)
    store.close()
    ctx = ServerContext(Options(upstream="http://up.invalid/v1", data=data,
                                transport=httpx.MockTransport(lambda r: httpx.Response(500))))
    try:
        c = ctx.campaign("vault")
        history = [{"role": "system", "content": MARK}, {"role": "user", "content": "TURN:one"}]
        turn = asyncio.run(begin(ctx, ctx.campaign("vault"), read_marked(history)))
        open_with_edits(ctx, turn)
        assert turn.opening is None  # nothing waits
        ctx.store.put_head("vault", turn.before.key, "[]")  # a reply was kept here: edits now wait at this key
        point = newest_point(ctx, c)
        assert not point.start
        edited = save_edit(ctx, c, point, "Mira", {"abilities.lore": "5"})
        assert edited.ok, edited.problems
        turn = asyncio.run(begin(ctx, ctx.campaign("vault"), read_marked(history)))
        open_with_edits(ctx, turn)
        assert turn.opening is not None and turn.opening.text.startswith('[edit: by="player" who="Mira"')
        assert turn.opening.state.cards["Mira"]["abilities"]["lore"] == 5
        fitted = asyncio.run(fit(ctx, turn, {"model": "m", "messages": history}, {}))
        reminder = fitted.body["messages"][-1]["content"]
        assert "Checks: Sinew 2 dice; Nerve 2 dice; Lore 5 dice" in reminder.split("## Mira")[1]
        assert apply_reply(RS, turn.before.state, turn.opening.text).state.to_json() == turn.opening.state.to_json()
    finally:
        asyncio.run(ctx.close())


@pytest.mark.parametrize("stream", [False, True])
def test_regenerate_keeps_the_edits_and_going_back_past_their_key_drops_them(tmp_path, stream):
    """ED-6: a regenerate (the same history again) opens with the same receipts; a history that went back past
    the key the edit was made at (the reply it followed deleted) never meets it, and the page follows the chat."""
    with serving(tmp_path) as url:
        p = Player(url)
        p.turn("one", stream=stream)
        assert p.edit("Mira", {"fields.oath": "Hold"}).status_code == 200
        first = p.ask("two", stream=stream)
        again = p.ask("two", stream=stream)  # the chat app's regenerate: the same history, the reply asked again
        assert first == again and first.startswith('[edit: by="player" who="Mira" changes="fields.oath=Hold"')
        back = Player(url)  # the chat deleted the first reply: it is back before the key the edit was made at
        back.messages = p.messages[:2]  # the system message and "one": its reply deleted (a chat, TR-5)
        text = back.turn("two", stream=stream)
        assert "[edit:" not in text
        assert "Hold" not in json.dumps(server_state(url))  # the newest reply is the one without the edit


def test_hide_tags_the_player_sees_no_receipt_and_the_next_turn_still_holds_the_edit(tmp_path):
    """--hide-tags: the receipts go into the tagged reply the server keeps, the player gets the narration only
    (the edit's line hidden, as every tag's is), and the next turn maps the narration back to it (S-14)."""
    with serving(tmp_path, hide_tags=True) as url:
        p = Player(url)
        p.turn("one")
        assert p.edit("Mira", {"abilities.lore": 5}).status_code == 200
        two = p.turn("two", stream=True)
        assert two == narration(SCRIPT["two"]) and "[edit:" not in two
        p.turn("three")
        form = server_state(url)
        lore = next(i for s in form["sections"] for i in s["inputs"] if i["path"] == "abilities.lore")
        assert lore["value"] == 5


@pytest.mark.parametrize("stream", [False, True])
def test_settle_checks_rolls_the_check_on_the_edited_sheet(tmp_path, stream):
    """--settle-checks: the reply opens with the edit's receipt, and the check rolled mid-reply rolls on the sheet
    the edit made (the same number a replay of the chat gives)."""
    with serving(tmp_path, settle_checks=True, after_check="continue") as url:
        p = Player(url)
        p.turn("one")
        assert p.edit("Mira", {"skills.ward": "master"}).status_code == 200
        text = p.turn("ward", stream=stream)
        assert text.startswith('[edit: by="player" who="Mira" changes="skills.ward=master"')
        assert "unknown" not in text  # settled mid-reply
    whole = replayed(p.messages[:-1])
    again = apply_reply(RS, whole, text)
    assert again.text == text  # every receipt, the edit's and the check's, replays as written


def test_a_continued_reply_writes_the_edits_made_after_its_first_part_on_a_line_of_their_own(tmp_path):
    """ED-17: the first part of a reply is a reply of its own to the server (kept; the pages' newest); an edit made
    then waits at its key; the chat app's Continue sends that part as a prefill, and the continuation opens, on a
    line of its own, with the edit's receipt, made on the state after the first part. The whole reply replays."""
    part = "Dawn greys the stones."
    SCRIPT_CUT = {"cut": part}
    with serving(tmp_path, extra=SCRIPT_CUT) as url:
        p = Player(url)
        p.turn("one")
        assert p.ask("cut") == part
        assert p.edit("Bram", {"fields.oath": "Stand"}).json()["at"]["waiting"] == 1
        p.messages.append({"role": "user", "content": "TURN:two"})  # the script goes on from the part as "two"
        cont = p.ask(None, prefill=part)
        assert cont.startswith('\n[edit: by="player" who="Bram" changes="fields.oath=Stand"')
        assert cont.endswith(']\n [sheet: who="Mira" op="spend" pool="resolve" amount="1" result="ok" now="3/4"]')
        p.messages.append({"role": "assistant", "content": part + cont})
        p.turn("three")
    whole = replayed(p.messages)
    assert whole.cards["Bram"]["fields"]["oath"] == "Stand"
    assert whole.to_json() == served_state(tmp_path, p.messages).to_json()


def test_the_edits_wait_in_the_store_across_a_restart_and_are_bounded(tmp_path):
    """The `edits` table: an edit survives a restart of the server; at most EDITS_WAITING edits wait at one key
    (then `too-many-edits`, nothing kept); a campaign keeps edits at EDIT_KEYS keys, the oldest dropped."""
    with serving(tmp_path) as url:
        p = Player(url)
        p.turn("one")
        assert p.edit("Mira", {"fields.oath": "Kept"}).status_code == 200
    with serving(tmp_path) as url:
        assert httpx.get(f"{url}/tagengine/api/c/vault").json()["at"]["waiting"] == 1
        p.url = url
        assert p.turn("two").startswith('[edit: by="player" who="Mira" changes="fields.oath=Kept"')
    ctx = ServerContext(Options(upstream="demo", data=tmp_path / "data"))
    try:
        c = ctx.campaign("vault")
        point = newest_point(ctx, c)
        assert save_edit(ctx, c, point, "Bram", {"fields.oath": "the first"}).ok
        made = newest_point(ctx, c).waiting.edits[0]
        for _ in range(EDITS_WAITING - 1):
            ctx.edits.add("vault", point.key, made)
        full = save_edit(ctx, c, newest_point(ctx, c), "Bram", {"fields.oath": "one more"})
        assert [pr.code for pr in full.problems] == ["too-many-edits"]
        assert len(ctx.edits.waiting(point.key).edits) == EDITS_WAITING  # nothing kept
        for k in range(EDIT_KEYS + 3):
            ctx.edits.add("vault", f"key-{k}", made)
        with sqlite3.connect(tmp_path / "data" / DB_NAME) as db:
            keys = db.execute("SELECT count(DISTINCT key) FROM edits WHERE campaign = 'vault'").fetchone()[0]
        assert keys == EDIT_KEYS and not ctx.edits.has(point.key) and ctx.edits.has(f"key-{EDIT_KEYS + 2}")
    finally:
        asyncio.run(ctx.close())


def test_before_the_first_reply_an_edit_makes_the_campaign_s_start(tmp_path):
    """ED-14: with no reply kept yet, the sheets a player fills in are the campaign's start (no receipt: the chat
    holds nothing yet); once a reply is kept, the start is the chat's and an edit waits for the next reply."""
    with serving(tmp_path) as url:
        r = Player(url).edit("Mira", {"fields.oath": "First light", "abilities.lore": 4})
        assert r.status_code == 200 and r.json()["at"]["start"] is True
        store = Store(tmp_path / "data")
        new = Campaigns(store).get("vault").start
        assert new.cards["Mira"]["fields"]["oath"] == "First light"
        p = Player(url)
        one = p.turn("one")
        assert "[edit:" not in one
        assert store.set_start("vault", "{}", "") is False  # a reply is kept: the start is the chat's now
        store.close()
        assert p.edit("Mira", {"fields.oath": "Later"}).json()["at"]["start"] is False
    assert replayed(p.messages, new).cards["Mira"]["fields"]["oath"] == "First light"


def test_a_history_names_its_own_point(tmp_path):
    """The API's `messages` (issue 28's SillyTavern extension sends the chat on screen): the form at that point,
    and an edit kept at its key, which a reply from that very history opens with."""
    with serving(tmp_path) as url:
        p = Player(url)
        p.turn("one")
        p.turn("two")
        older = p.messages[:3]  # the chat before the second reply
        r = httpx.post(f"{url}/tagengine/api/c/vault/read/characters/Mira", json={"messages": older})
        assert r.status_code == 200 and r.json()["at"]["key"] != httpx.get(f"{url}/tagengine/api/c/vault").json()[
            "at"]["key"]
        assert p.edit("Mira", {"fields.oath": "Back then"}, messages=older).json()["at"]["waiting"] == 1
        back = Player(url)
        back.messages = list(older)
        assert back.turn("three").startswith('[edit: by="player" who="Mira" changes="fields.oath=Back then"')
        ctx = ServerContext(Options(upstream="demo", data=tmp_path / "data"))
        try:
            c = ctx.campaign("vault")
            point = asyncio.run(history_point(ctx, c, older))
            assert point.waiting.edits and not point.start
        finally:
            asyncio.run(ctx.close())
