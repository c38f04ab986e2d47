"""Issue 12: `tagengine serve` with real parts on loopback: the openai client -> the server (uvicorn) -> a
scripted OpenAI-compatible upstream (tests/serve_kit.py) that streams its replies split at random points."""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest
from serve_kit import Fake, Running

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store
from tagengine._internal.state import GameState

CREW = [m["content"] for m in json.loads((SAMPLES / "transcripts" / "crew-night.jsonl").read_text().splitlines()[0])
        ["messages"] if m["role"] == "assistant"]
SCRIPT = {
    "one": CREW[0], "two": CREW[1], "three": CREW[2],
    "alt": 'A quieter entry. [clock: name="Alarm raised" size="8"] [sheet: who="Lurk" op="spend" pool="stress" '
           'amount="1"]',
    "tick": 'More noise. [clock: name="Alarm raised" tick="1"]',
    "grit": 'Mira digs deep. [sheet: who="Mira" op="spend" pool="grit" amount="1"] [clock: name="Dawn" size="4"]',
    "dawn": 'The sky greys. [clock: name="Dawn" tick="1"]',
}
MARK = {"heist": '[tagengine: campaign="heist"]', "vault": '[tagengine: campaign="vault"]'}


def make_campaigns(data: Path) -> None:
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"])
    store.close()


def start_of(campaign):
    rs = load_sample("blades-like" if campaign == "heist" else "gravewatch")
    return rs, GameState.new(rs, ["Cutter", "Lurk"] if campaign == "heist" else ["Mira", "Bram"])


def expected(campaign, replies):
    """What a chat app stores for these raw replies, each applied after the ones before it."""
    rs, state = start_of(campaign)
    out = []
    for r in replies:
        a = apply_reply(rs, state, r)
        state = a.state
        out.append(a.text)
    return out, state


@contextmanager
def serving(tmp_path, fake, **kw):
    data = kw.pop("data", tmp_path / "data")
    if not (data / DB_NAME).exists():
        make_campaigns(data)
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data, **kw))) as srv:
        yield srv


def client(srv, **kw):
    return openai.OpenAI(base_url=f"{srv.url}/v1", api_key="client-key", max_retries=0, timeout=30, **kw)


def history(campaign, turns, stored):
    """The chat app's messages: its system prompt with the marker, then user turns and stored replies."""
    msgs = [{"role": "system", "content": f"You are the GM. {MARK[campaign]}"}]
    for i, t in enumerate(turns):
        msgs.append({"role": "user", "content": f"TURN:{t}"})
        if i < len(stored):
            msgs.append({"role": "assistant", "content": stored[i]})
    return msgs


def ask(c, msgs, stream):
    if not stream:
        return c.chat.completions.create(model="gpt-4o", messages=msgs).choices[0].message.content
    parts = []
    for ch in c.chat.completions.create(model="gpt-4o", messages=msgs, stream=True):
        if ch.choices and ch.choices[0].delta.content:
            parts.append(ch.choices[0].delta.content)
    return "".join(parts)


def snapshots(data):
    """The snapshots in the data folder's file, as another process reads them: a running server may still hold
    some (store.py, PF-55); one that has stopped has written them all."""
    with sqlite3.connect(data / DB_NAME) as db:
        return db.execute("SELECT count(*) FROM snapshots").fetchone()[0]


@pytest.mark.parametrize("stream", [False, True])
def test_turns_regenerate_swipe_delete_and_edit(tmp_path, stream):
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        c = client(srv)
        stored = []
        for n in range(3):  # new turns: each applied to the state after the last
            got = ask(c, history("heist", ["one", "two", "three"][:n + 1], stored), stream)
            stored.append(got)
            assert stored == expected("heist", CREW[:n + 1])[0]
        assert 'now="6/6"' in stored[2]
        # regenerate the last reply: the state from before it, so the same receipts again
        assert ask(c, history("heist", ["one", "two", "three"], stored[:2]), stream) == stored[2]
        # another swipe of reply 1 selected, then a new turn: the state follows the swipe
        alt = expected("heist", [SCRIPT["alt"]])[0][0]
        assert ask(c, history("heist", ["alt"], []), stream) == alt
        got = ask(c, history("heist", ["alt", "tick"], [alt]), stream)
        assert got == expected("heist", [SCRIPT["alt"], SCRIPT["tick"]])[0][1] and 'now="1/8"' in got
        # reply 2 deleted (with its user turn): the next turn replays from reply 1
        got = ask(c, history("heist", ["one", "tick"], [stored[0]]), stream)
        assert got == expected("heist", [CREW[0], SCRIPT["tick"]])[0][1] and 'now="1/6"' in got
        # reply 1 edited by the player to drop its clock: the tick is refused
        edited = stored[0].split("\n")[0]
        got = ask(c, history("heist", ["one", "tick"], [edited]), stream)
        assert got == expected("heist", [edited, SCRIPT["tick"]])[0][1] and 'result="refused"' in got


def test_the_database_deleted_between_turns_changes_no_result(tmp_path):
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        stored = [ask(c, history("heist", ["one"], []), True)]
        stored.append(ask(c, history("heist", ["one", "two"], stored), True))
    other = tmp_path / "fresh"  # a new store: the campaign made again, no snapshot at all
    with serving(tmp_path, fake, data=other) as srv:
        assert snapshots(other) == 0
        got = ask(client(srv), history("heist", ["one", "two", "three"], stored), False)
    assert got == expected("heist", CREW)[0][2]


def test_sixteen_chats_in_two_campaigns_at_once_do_not_cross(tmp_path):
    import asyncio

    plays = {"heist": ["one", "two", "three"], "vault": ["grit", "dawn", "dawn"]}
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        ac = openai.AsyncOpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=60)

        async def play(k):
            campaign = "heist" if k % 2 else "vault"
            turns, stored = plays[campaign], []
            for n in range(len(turns)):
                msgs = history(campaign, turns[:n + 1], stored)
                if k % 4 < 2:
                    r = await ac.chat.completions.create(model="gpt-4o", messages=msgs)
                    stored.append(r.choices[0].message.content)
                else:
                    parts = []
                    async for ch in await ac.chat.completions.create(model="gpt-4o", messages=msgs, stream=True):
                        if ch.choices and ch.choices[0].delta.content:
                            parts.append(ch.choices[0].delta.content)
                    stored.append("".join(parts))
            return campaign, stored

        async def all_chats():
            try:
                return await asyncio.gather(*(play(k) for k in range(16)))
            finally:
                await ac.close()

        results = asyncio.run(all_chats())
    for campaign, stored in results:
        assert stored == expected(campaign, [SCRIPT[t] for t in plays[campaign]])[0]


@pytest.mark.parametrize(("mode", "stream"), [("500", False), ("500", True), ("hang", False), ("hang", True),
                                              ("garbage", True), ("cut", True)])
def test_upstream_faults_are_openai_errors_and_nothing_is_kept(tmp_path, mode, stream):
    with serving(tmp_path, Fake(SCRIPT, mode=mode), timeout=0.3) as srv:
        before = snapshots(tmp_path / "data")
        with pytest.raises(openai.APIError) as e:
            ask(client(srv), history("heist", ["one"], []), stream)
    assert snapshots(tmp_path / "data") == before == 0  # the server stopped: it has written all it held
    if isinstance(e.value, openai.APIStatusError):
        assert e.value.status_code == {"500": 500, "hang": 504}[mode]
        assert e.value.body["code"] in ("upstream_error", "upstream_timeout")


def test_an_unreachable_upstream_is_a_502(tmp_path):
    make_campaigns(tmp_path / "data")
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=tmp_path / "data",
                                  campaign="heist"))) as srv, pytest.raises(openai.APIStatusError) as e:
        ask(client(srv), [{"role": "user", "content": "TURN:one"}], False)
    assert e.value.status_code == 502 and e.value.body["code"] == "upstream_unreachable"


def test_a_client_gone_mid_stream_cancels_the_upstream_and_keeps_nothing(tmp_path):
    fake = Fake(SCRIPT, hold=True)
    with serving(tmp_path, fake) as srv:
        body = {"model": "gpt-4o", "stream": True, "messages": history("heist", ["one"], [])}
        with httpx.Client(timeout=30) as h, h.stream("POST", f"{srv.url}/v1/chat/completions", json=body) as r:
            assert r.status_code == 200
            first = next(r.iter_raw())
            assert first.startswith(b"data: ")
        assert fake.cancelled.wait(10), "the upstream stream was not cancelled"
    assert snapshots(tmp_path / "data") == 0  # the server stopped: it has written all it held


def test_a_request_with_no_campaign_passes_byte_for_byte(tmp_path):
    answer = (b'{"id":"x",  "choices":[{"index":0,"message":{"role":"assistant",'
              b'"content":"[clock: name=\\"A\\" size=4]"}}]}')
    fake = Fake(SCRIPT, raw_answer=answer)
    raw = b'{"model": "m",\n "messages": [{"role": "user", "content": "hi [clock: name=\\"A\\" tick=1]"}], "x": [1,2]}'
    with serving(tmp_path, fake) as srv, httpx.Client(timeout=30) as h:
        r = h.post(f"{srv.url}/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert fake.bodies == [raw]
    assert r.content == answer and "x-tagengine-campaign" not in r.headers


def test_marker_is_stripped_fields_pass_and_the_prompt_is_fitted(tmp_path):
    fake = Fake(SCRIPT, reasoning=True)
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        raw = c.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=history("heist", ["one"], []), temperature=0.25, max_tokens=300,
            extra_body={"top_k": 7, "custom": {"a": 1}})
        assert raw.headers["x-tagengine-campaign"] == "heist"
        total, rest = raw.headers["x-tagengine-tokens"].split("/")
        assert int(total) > 0 and rest.startswith("128000 response=300")  # S-16: gpt-4o's window
        sent = json.loads(fake.bodies[-1])
        assert sent["temperature"] == 0.25 and sent["top_k"] == 7 and sent["custom"] == {"a": 1}
        assert sent["max_tokens"] == 300
        assert "tagengine:" not in json.dumps(sent["messages"])
        roles = [m["role"] for m in sent["messages"]]
        assert roles == ["system", "system", "user", "system"]  # engine, the app's own, the turn, the reminder
        assert sent["messages"][1]["content"] == "You are the GM. "
        assert raw.parse().usage.total_tokens == 3
        # streamed: reasoning deltas and usage pass through untouched
        chunks = list(c.chat.completions.create(model="gpt-4o", messages=history("heist", ["one"], []),
                                                stream=True))
        assert chunks[0].choices[0].delta.model_extra["reasoning_content"] == "thinking…"
        assert chunks[-1].usage.total_tokens == 3


def test_the_url_prefix_and_the_default_name_the_campaign(tmp_path):
    with serving(tmp_path, Fake(SCRIPT), campaign="vault") as srv:
        plain = [{"role": "user", "content": "TURN:grit"}]
        assert ask(client(srv), plain, False) == expected("vault", [SCRIPT["grit"]])[0][0]
        c = openai.OpenAI(base_url=f"{srv.url}/c/heist/v1", api_key="k", max_retries=0, timeout=30)
        assert ask(c, [{"role": "user", "content": "TURN:one"}], True) == expected("heist", CREW[:1])[0][0]
        with pytest.raises(openai.NotFoundError) as e:
            ask(client(srv), [{"role": "user", "content": '[tagengine: campaign="nope"] TURN:one'}], False)
        assert "unknown campaign 'nope'" in e.value.body["message"]


def test_an_incomplete_history_is_said_in_a_header(tmp_path):
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        c = client(srv)
        stored = expected("heist", CREW[:2])[0]
        msgs = history("heist", ["one", "two", "three"], stored)
        del msgs[1:3]  # the chat app dropped the oldest turn
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
        assert raw.headers["x-tagengine-history"].startswith("incomplete")
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o",
                                                           messages=history("heist", ["one", "two", "three"], stored))
        assert "x-tagengine-history" not in raw.headers


def test_bad_requests_are_400s_in_openai_format(tmp_path, monkeypatch):
    from tagengine._internal.server.wire import body

    monkeypatch.setattr(body, "MAX_BODY", 4096)
    with serving(tmp_path, Fake(SCRIPT)) as srv, httpx.Client(base_url=srv.url, timeout=30) as h:
        for body, code in [(b"{nope", "invalid_json"), (b"[1]", "invalid_request"),
                           (b'{"messages": "hi"}', "invalid_messages"), (b'{"messages": [3]}', "invalid_messages"),
                           (b'{"messages": [{"role": "user", "content": "' + b"x" * 5000 + b'"}]}',
                            "request_too_large")]:
            r = h.post("/v1/chat/completions", content=body)
            status = 413 if code == "request_too_large" else 400  # a limit past: 413 (SEC-1)
            assert r.status_code == status and r.json()["error"]["code"] == code, body[:40]
            assert set(r.json()["error"]) == {"message", "type", "code"}
        r = h.post("/v1/completions", json={"prompt": "x"})
        assert r.status_code == 400 and "chat completions only" in r.json()["error"]["message"]
        r = h.get("/v2/nothing")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert h.get("/healthz").json() == {"ok": True}
        assert h.get("/v1/models").json()["data"][0]["id"] == "scripted"


def test_the_api_key_is_required_when_given_and_the_upstream_key_comes_from_the_environment(tmp_path, monkeypatch):
    fake = Fake(SCRIPT)
    seen = []
    monkeypatch.setenv("TAGENGINE_UPSTREAM_KEY", "upstream-secret")
    with serving(tmp_path, fake, api_key="server-key", campaign="heist") as srv:
        with pytest.raises(openai.AuthenticationError):
            ask(client(srv), [{"role": "user", "content": "TURN:one"}], False)
        c = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="server-key", max_retries=0, timeout=30)
        assert ask(c, [{"role": "user", "content": "TURN:one"}], False)
        with httpx.Client() as h:
            assert h.get(f"{srv.url}/healthz").status_code == 200
    seen = fake.bodies
    assert len(seen) == 1
    db = (tmp_path / "data" / DB_NAME).read_bytes()
    assert b"upstream-secret" not in db and b"server-key" not in db


def test_the_demo_upstream_lists_its_model(tmp_path):
    """The demo game itself: tests/test_demo_game.py."""
    make_campaigns(tmp_path / "data")
    with Running(make_app(Options(upstream="demo", data=tmp_path / "data", campaign="heist"))) as srv:
        assert client(srv).models.list().data[0].id == "tagengine-demo"


def test_tagengine_serve_runs_from_the_command_line(tmp_path):
    import subprocess
    import sys

    make_campaigns(tmp_path / "data")
    exe = Path(sys.executable).parent / "tagengine"
    proc = subprocess.Popen([str(exe), "serve", "--upstream", "demo", "--port", "0", "--data", str(tmp_path / "data"),
                             "--campaign", "heist"], stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for _ in range(200):  # bounded: uvicorn says where it listens within its first lines
            line = proc.stderr.readline()
            if "Uvicorn running on" in line:
                url = line.split("running on ")[1].split()[0]
                break
        assert url and url.startswith("http://127.0.0.1:")
        got = ask(openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=30),
                  [{"role": "user", "content": "go"}], True)
        first = json.loads((SAMPLES / "transcripts" / "demo-game.json").read_text())["replies"][0][0]
        assert got == expected("heist", [first])[0][0]  # the demo game's first reply (tests/test_demo_game.py)
    finally:
        proc.terminate()
        _, rest = proc.communicate(timeout=10)  # bounded: the server has stopped, its stderr is closed
    # S-25: the access line, written once the answer has gone, in the server's own log format
    access = [line for line in rest.splitlines() if " tagengine.access " in line]
    assert len(access) == 1 and ' INFO 127.0.0.1:' in access[0], rest
    assert access[0].endswith(' - "POST /v1/chat/completions HTTP/1.1" 200'), access


def test_a_bug_is_a_500_in_openai_format_not_a_traceback(tmp_path, monkeypatch):
    from tagengine._internal.server.memory.chain import Chain

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(Chain, "state_of", broken)
    with serving(tmp_path, Fake(SCRIPT), campaign="heist") as srv, httpx.Client(timeout=30) as h:
        r = h.post(f"{srv.url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "TURN:one"}]})
    assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
    assert "Traceback" not in r.text
