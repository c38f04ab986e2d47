"""A player's edit is never lost, never applied twice, never in another chat (docs/editor.md, decisions ED-7,
ED-25..ED-27, PARTY-37): edits made while a reply streams reach the next reply; a save whose body arrives slowly
is checked against the sheet as it is when it arrives; two chats with the same greeting keep their edits apart by
their ids; a change to what a value already is keeps nothing; an edited reply moves the pages. Real clients against
`tagengine serve` on loopback (raw sockets for the slow bodies), before the scripted upstream of tests/serve_kit.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
from serve_kit import Fake, Running
from test_serve_edits import MARK, RS, SCRIPT, SEED, Player, replayed

from conftest import SAMPLES
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store
from tagengine._internal.sheet import view_character

API = "/tagengine/api/c/vault"


@contextmanager
def serving(tmp_path: Path, fake: Fake | None = None, ruleset: str = "gravewatch",
            characters: tuple[str, ...] = ("Mira", "Bram")) -> Iterator[tuple[str, Fake]]:
    data = tmp_path / "data"
    if not (data / DB_NAME).exists():
        store = Store(data)
        new_campaign(store, "vault", str(SAMPLES / "rulesets" / f"{ruleset}.json"), list(characters), seed=SEED)
        store.close()
    fake = fake or Fake(script=dict(SCRIPT))
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data))) as srv:
        yield srv.url, fake


def stream_in_background(p: Player, turn: str) -> tuple[threading.Thread, list[str]]:
    got: list[str] = []
    thread = threading.Thread(target=lambda: got.append(p.ask(turn, stream=True)), daemon=True)
    thread.start()
    return thread, got


def test_edits_made_while_a_reply_streams_open_the_next_reply_once(tmp_path):
    """ED-26: an API edit and a hand edit on the game sheet, both acknowledged while turn two streams (so turn two
    did not open with them), are made by turn three's reply: the sheet shows them after turn two, turn three opens
    with them, and the chat alone replays them once. A regenerate of turn two still meets them (they wait where
    they were made too), and a regenerate of turn three makes them again, not twice."""
    fake = Fake(script=dict(SCRIPT), gate=threading.Event())
    fake.gate.set()  # turn one streams through
    with serving(tmp_path, fake) as (url, _):
        p = Player(url)
        p.turn("one")
        fake.gate.clear()
        thread, got = stream_in_background(p, "two")
        assert fake.paused.wait(30), "the stream did not start"
        api = p.edit("Mira", {"fields.oath": "Hold the line"}, messages=p.messages)
        hand = httpx.post(f"{url}/ui/c/vault/play/Bram", data={"pools.resolve": "1"}, follow_redirects=False)
        assert api.status_code == 200 and api.json()["at"]["waiting"] == 1, api.text
        assert hand.status_code == 303, hand.text
        fake.gate.set()
        thread.join(30)
        two = got[0]
        assert "[edit:" not in two  # opened before the edits were made
        p.messages += [{"role": "user", "content": "TURN:two"}, {"role": "assistant", "content": two}]
        for _ in range(500):  # the reply is kept once its answer has gone (S-24)
            if httpx.get(f"{url}{API}").json()["at"]["waiting"] == 2:
                break
            time.sleep(0.01)
        at = httpx.get(f"{url}{API}").json()["at"]
        assert at["waiting"] == 2, at  # the sheet after turn two shows both, waiting for the next reply
        redo_two = p.ask("two")  # a regenerate of turn two, from where the edits were made, meets them there
        three = p.turn("three")
        regenerate = [*p.messages[:-1]]  # turn three asked again: its reply replaced
        again = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": regenerate},
                           timeout=30).json()["choices"][0]["message"]["content"]
    opened = [line for line in three.split("\n") if line.startswith("[edit:")]
    assert len(opened) == 2 and 'who="Mira"' in opened[0] and 'who="Bram"' in opened[1], three
    assert redo_two.count("[edit:") == 2 and again.count("[edit:") == 2
    chat = replayed(p.messages)
    assert chat.cards["Mira"]["fields"]["oath"] == "Hold the line"
    assert pool(chat, "Bram", "resolve") == 1
    assert sum(m["content"].count("[edit:") for m in p.messages if m["role"] == "assistant") == 2  # once each


def pool(state: Any, who: str, pid: str) -> int:
    return next(x.cur for x in view_character(RS, state, who).pools if x.id == pid)


def slow_post(url: str, path: str, fields: dict[str, str]) -> tuple[socket.socket, bytes]:
    """A form post whose head and first byte are sent now and the rest later (`finish`)."""
    body = urlencode(fields).encode()
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=30)
    head = (f"POST {path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sock.sendall(head + body[:1])
    time.sleep(0.2)  # the server has read the head and the first byte: the handler waits for the rest
    return sock, body[1:]


def finish(sock: socket.socket, rest: bytes) -> int:
    sock.sendall(rest)
    answer = b""
    while b"\r\n" not in answer:
        piece = sock.recv(65536)
        if not piece:
            break
        answer += piece
    sock.close()
    return int(answer.split(b" ", 2)[1])


def heist_sheet(url: str, path: str) -> dict[str, Any]:
    return httpx.get(f"{url}{API}/{path}").json()


def values(form: dict[str, Any]) -> dict[str, Any]:
    return {i["path"]: i["value"] for s in form["form"]["sections"] for i in s["inputs"]}


def test_a_slow_party_save_racing_a_fast_one_is_stale_before_and_after_the_first_reply(tmp_path):
    """PARTY-37 on the pages as on the API: client A sends the head of its party save (opened at revision 0), B
    saves the same revision, then A's body arrives: A is a 409 showing the newer sheet, B's heat is kept. Before
    the first reply (the campaign's start) and after it (an edit waiting)."""
    with serving(tmp_path, ruleset="blades-like", characters=("Cutter", "Lurk")) as (url, _):
        p = Player(url)
        for when, mine, theirs in (("before", "1", "7"), ("after", "2", "5")):
            if when == "after":
                p.turn("three")
            revision = heist_sheet(url, "party")["at"]["revision"]
            sock, rest = slow_post(url, "/ui/c/vault/party", {"revision": str(revision), "fields.heat": mine})
            fast = httpx.post(f"{url}/ui/c/vault/party", data={"revision": str(revision), "fields.heat": theirs},
                              follow_redirects=False)
            slow = finish(sock, rest)
            assert (fast.status_code, slow) == (303, 409), when
            assert values(heist_sheet(url, "party"))["fields.heat"] == int(theirs), when


def test_a_slow_character_save_keeps_the_save_made_meanwhile(tmp_path):
    """Before the first reply a character save makes the campaign's start: A's late save of Lurk's vice is made on
    the start as it is when A's body arrives, so B's stash, saved meanwhile, is kept (both were told "saved")."""
    with serving(tmp_path, ruleset="blades-like", characters=("Cutter", "Lurk")) as (url, _):
        sock, rest = slow_post(url, "/ui/c/vault/edit/Lurk", {"fields.vice": "Gambling"})
        fast = httpx.post(f"{url}/ui/c/vault/edit/Lurk", data={"fields.stash": "33"}, follow_redirects=False)
        slow = finish(sock, rest)
        form = values(heist_sheet(url, "characters/Lurk"))
    assert (fast.status_code, slow) == (303, 303)
    assert form["fields.stash"] == 33 and form["fields.vice"] == "Gambling"


def greeting_chat() -> list[dict[str, str]]:
    return [{"role": "system", "content": f"You are the GM. {MARK}"},
            {"role": "assistant", "content": "The crypt waits. Who goes first?"}]


def test_two_new_chats_from_one_card_keep_their_edits_apart_by_their_ids(tmp_path):
    """ED-25: chats A and B hold the same greeting, so the same chain key. An edit made in A (its id given) waits
    for A only: B's panel shows none waiting, B's first reply opens with nothing, A's opens with it. An edit made
    without an id waits for any chat at its key (a chat app that names no chat: the history alone tells chats
    apart)."""
    with serving(tmp_path) as (url, _):
        chat = greeting_chat()
        made = httpx.post(f"{url}{API}/characters/Mira", json={"changes": {"fields.oath": "Only A"}, "messages": chat,
                                                                "chat": "A"})
        assert made.status_code == 200 and made.json()["at"]["waiting"] == 1, made.text
        seen = {c: httpx.post(f"{url}/tagengine/api/state", json={"messages": chat, "chat": c}).json()["at"]
                for c in ("A", "B")}
        assert (seen["A"]["waiting"], seen["B"]["waiting"]) == (1, 0)
        turn = [*chat, {"role": "user", "content": "TURN:three"}]
        replies = {}
        for c in ("B", "A"):
            r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": turn},
                           headers={"x-tagengine-chat": c}, timeout=30)
            replies[c] = r.json()["choices"][0]["message"]["content"]
        assert "[edit:" not in replies["B"] and replies["A"].startswith("[edit:")
        anyone = httpx.post(f"{url}{API}/characters/Bram", json={"changes": {"fields.oath": "Shared"},
                                                                  "messages": chat})
        assert anyone.json()["at"]["waiting"] == 2  # a request naming no chat sees every edit at its key
        assert httpx.post(f"{url}/tagengine/api/state", json={"messages": chat, "chat": "B"}).json()["at"][
            "waiting"] == 1
        bad = httpx.post(f"{url}/tagengine/api/state", json={"messages": chat, "chat": "x" * 257})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_chat"


def test_a_change_to_what_a_value_already_is_keeps_nothing_at_a_greeting_only_point(tmp_path):
    """ED-7: `pools.resolve` set to what it reads (its start, not yet stored) is no edit: nothing waits and the next
    reply opens with nothing, at a point with only a greeting as after a reply."""
    with serving(tmp_path) as (url, _):
        chat = greeting_chat()
        resolve = next(w for w in heist_sheet(url, "characters/Mira")["form"]["play"]["pools"]
                       if w["path"] == "pools.resolve")["value"]
        same = httpx.post(f"{url}{API}/characters/Mira", json={"changes": {"pools.resolve": resolve},
                                                                "messages": chat})
        assert same.status_code == 200 and same.json()["at"]["waiting"] == 0, same.text
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [
            *chat, {"role": "user", "content": "TURN:three"}]}, timeout=30)
    assert "[edit:" not in r.json()["choices"][0]["message"]["content"]


def test_an_edited_reply_moves_the_pages_without_the_extension(tmp_path):
    """ED-27: the player edits a GM reply in the chat app (a tag's amount, its receipt left as it was) and plays on;
    the history still starts at the campaign's start, so it is the game as the chat reads: the next turn is played
    from the replay of the edited reply, and the pages and the JSON API follow (the turn, the sheet)."""
    with serving(tmp_path) as (url, _):
        p = Player(url)
        one = p.turn("one")
        two = p.turn("two")
        assert 'amount="1"' in two
        p.messages[-1]["content"] = two.replace('amount="1"', 'amount="2"')  # Mira spends 2, the receipt says 1
        before = httpx.get(f"{url}{API}").json()["at"]["key"]
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [
            *p.messages, {"role": "user", "content": "TURN:three"}]}, timeout=30)
        assert r.headers["x-tagengine-history"].startswith("edited"), r.headers.get("x-tagengine-history")
        for _ in range(500):
            if httpx.get(f"{url}{API}").json()["at"]["key"] != before:
                break
            time.sleep(0.01)
        api = httpx.get(f"{url}{API}").json()
        page = httpx.get(f"{url}/ui/c/vault").text
        shown = next(w for w in httpx.get(f"{url}{API}/characters/Mira").json()["form"]["play"]["pools"]
                     if w["path"] == "pools.resolve")["value"]
    assert one and api["at"]["key"] != before and api["at"]["turn"] == 3
    assert "turn 3" in page.lower()
    three = r.json()["choices"][0]["message"]["content"]
    edited = replayed([*p.messages, {"role": "user", "content": "TURN:three"}, {"role": "assistant", "content": three}])
    assert shown == pool(edited, "Mira", "resolve") == pool(replayed(p.messages[:3]), "Mira", "resolve") - 2
