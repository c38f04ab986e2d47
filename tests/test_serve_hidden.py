"""Issue 12 item 6: `--hide-tags`. The player gets the narration; the server keeps the tagged reply keyed by
the chain and maps the narration back on the next request (S-14). Real parts: the openai client, uvicorn,
the scripted upstream (tests/serve_kit.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3

from serve_kit import Fake
from test_serve import CREW, SCRIPT, ask, client, expected, history, make_campaigns, serving

from tagengine._internal.commands import apply_reply
from tagengine._internal.server.memory.store import DB_NAME
from tagengine._internal.tags import narration


def pristine(tmp_path, name):
    """A data folder holding only the campaigns (the same start states, dice seeds included)."""
    base = tmp_path / "base"
    if not (base / DB_NAME).exists():
        make_campaigns(base)
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(base / DB_NAME, folder / DB_NAME)
    return folder


def rows(data):
    with sqlite3.connect(data / DB_NAME) as db:
        return sorted(db.execute("SELECT key, state FROM snapshots"))


def sent_replies(fake):
    """The assistant messages of the last request the upstream got."""
    return [m["content"] for m in json.loads(fake.bodies[-1])["messages"] if m["role"] == "assistant"]


def test_hidden_tags_show_narration_and_the_next_turn_has_the_same_state(tmp_path):
    tagged = expected("heist", CREW)[0]
    shown_turns = []
    hidden_fake = Fake(SCRIPT)
    with serving(tmp_path, hidden_fake, data=pristine(tmp_path, "hidden"), hide_tags=True) as srv:
        c = client(srv)
        for n, stream in enumerate([True, False, True]):  # streamed, not streamed, then the next turn
            got = ask(c, history("heist", ["one", "two", "three"][:n + 1], shown_turns), stream)
            assert got == narration(tagged[n]) and "[clock:" not in got and "[sheet:" not in got
            shown_turns.append(got)
            # [S-14] the upstream got the tagged replies (receipts in them), not what the player saw
            assert sent_replies(hidden_fake) == tagged[:n]
        # regenerate the last reply: the same narration, from the state before it
        assert ask(c, history("heist", ["one", "two", "three"], shown_turns[:2]), False) == shown_turns[2]
        raw = c.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history("heist", ["one", "two", "three"], shown_turns[:2]))
        assert "x-tagengine-history" not in raw.headers
    plain = []
    with serving(tmp_path, Fake(SCRIPT), data=pristine(tmp_path, "plain")) as srv:
        c = client(srv)
        for n in range(3):
            plain.append(ask(c, history("heist", ["one", "two", "three"][:n + 1], plain), n % 2 == 0))
    assert plain == tagged
    # the same chain keys and the same states, whether the player saw tags or not
    assert rows(tmp_path / "hidden") == rows(tmp_path / "plain")


def test_a_narration_the_store_does_not_know_is_replayed_as_shown_and_said(tmp_path, caplog):
    shown = []
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, data=pristine(tmp_path, "first"), hide_tags=True) as srv:
        c = client(srv)
        for n in range(2):
            shown.append(ask(c, history("heist", ["one", "two"][:n + 1], shown), n == 0))
    # the database deleted (a fresh one with the same campaign): the mapping is gone
    with serving(tmp_path, fake, data=pristine(tmp_path, "second"), hide_tags=True) as srv:
        c = client(srv)
        msgs = [{"role": "assistant", "content": "Welcome, crew."}, *history("heist", ["one", "two", "three"], shown)]
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
        assert raw.headers["x-tagengine-history"].startswith("unmapped: 2 narrated replies")  # the greeting is not
        assert sent_replies(fake) == ["Welcome, crew.", *shown]  # replayed as shown: no tags to apply
    assert "2 narrated replies the store does not know are replayed without their tags" in caplog.text


def test_after_an_incomplete_history_the_narration_is_still_mapped_back(tmp_path):
    fake = Fake(SCRIPT)
    tagged = expected("heist", CREW)[0]
    with serving(tmp_path, fake, hide_tags=True) as srv:
        c = client(srv)
        msgs = history("heist", ["one", "two", "three"], tagged[:2])  # a chat begun without --hide-tags
        del msgs[1:3]  # and trimmed by the app: its receipts cannot replay from the start
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
        assert raw.headers["x-tagengine-history"].startswith("incomplete")
        shown = raw.parse().choices[0].message.content
        assert "[clock:" not in shown
        msgs += [{"role": "assistant", "content": shown}, {"role": "user", "content": "TURN:tick"}]
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
        assert "unmapped" not in raw.headers["x-tagengine-history"]  # the guessed state is not kept, the map is
        assert '[clock: name="Alarm raised"' in sent_replies(fake)[-1] and 'result="' in sent_replies(fake)[-1]


def test_the_checks_endpoint_maps_narrations_back_as_chat_completions_do(tmp_path):
    """With --hide-tags the chat app holds narrations; `POST /tagengine/api/checks` must read them as the chat
    route does (tagged again from the store), or a check in an earlier reply would not have moved the dice
    and the endpoint would answer another roll than the next [check:] tag gets."""
    import httpx

    from tagengine._internal.server.memory.campaigns import Campaigns
    from tagengine._internal.server.memory.store import Store

    reply = 'Cutter reads the ledger. [check: who="Cutter" skill="Study"]'
    with serving(tmp_path, Fake({"look": reply}), hide_tags=True) as srv:
        shown = ask(client(srv), history("heist", ["look"], []), False)
        assert "[check:" not in shown and shown.strip() == narration(reply).strip()
        body = {"messages": history("heist", ["look", "next"], [shown]), "check": {"who": "Lurk", "skill": "Prowl"}}
        got = httpx.post(f"{srv.url}/tagengine/api/checks", json=body, timeout=30)
    assert got.status_code == 200, got.text
    store = Store(tmp_path / "data")  # the campaign's own start (its dice seed is the campaign's)
    c = Campaigns(store).get("heist")
    store.close()
    after = apply_reply(c.rs, c.start, reply).state  # the first reply's check rolled dice
    rs = c.rs
    assert got.json()["receipt"] == apply_reply(rs, after, '[check: who="Lurk" skill="Prowl"]').text
