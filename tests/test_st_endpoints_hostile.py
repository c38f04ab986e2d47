"""Issue 28's routes attacked: the state of the chat on screen (POST /tagengine/api/state, STX-3, STX-4, STX-7),
the campaigns list and SillyTavern's bridge (STX-2), as a web page the player visits and a client that means
harm would call them (TR-1..TR-3, SEC-1, SEC-2, SEC-9); and `tagengine st extension --install DIR` against
what may be in its way (STX-1). A real client against the app served on loopback (serve_kit.Running), in front
of the scripted upstream, which must never be asked by any of them."""

from __future__ import annotations

import gc
import io
import json
import shutil
import threading
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running
from test_serve_chat_state import SCRIPT, STATE, chat, play

from conftest import SAMPLES
from tagengine._internal.cli import run
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import (
    LOOP_CHARS,
    MAX_BODY,
    MAX_MESSAGE,
    MAX_MESSAGES,
    RECEIPTS_CHARS,
    RECEIPTS_HELD,
)
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.routes import chat_state
from tagengine._internal.server.routes.chat_state import ReceiptsMemo
from tagengine._internal.sillytavern.extension import FILES, extension_dir

BRIDGE = "/tagengine/bridge/chat/completions"
TICK = '[clock: name="Alarm raised" tick="1"]'


@contextmanager
def serving(tmp_path: Path, **kw: Any) -> Iterator[tuple[str, Any]]:
    """The server of test_serve_chat_state (campaigns heist and vault); its upstream's record in `ctx.fake`,
    its event loop's thread in `ctx.loop_thread`."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"])
    store.close()
    fake = Fake(dict(SCRIPT))
    with Running(fake.app()) as up:
        app = make_app(Options(upstream=f"{up.url}/v1", data=data, **kw))
        with Running(app) as srv:
            ctx = app.state.context
            ctx.fake, ctx.loop_thread = fake, srv.thread.ident
            yield srv.url, ctx


def moved(ctx: Any) -> tuple[Any, ...]:
    """What a state request must leave as it was: the pages' newest turn and prompt, the campaigns' starts, the
    players' edits waiting."""
    with ctx.store.lock:
        edits = ctx.store.db.execute("SELECT count(*) FROM edits").fetchone()[0]
    return (ctx.store.head("heist"), ctx.latest.prompts.get("heist"), ctx.campaign("heist").start_json,
            ctx.campaign("vault").start_json, edits)


def bridge_body(call: dict[str, Any], messages: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"messages": messages or [], "model": "tagengine", "stream": False, "tagengine": call}


# -- a web page: another origin, a rebound name (TR-1, TR-2)


@pytest.mark.parametrize("headers", [
    {"origin": "http://evil.example", "content-type": "text/plain"},
    {"origin": "null", "content-type": "text/plain"},
    {"sec-fetch-site": "cross-site", "content-type": "text/plain"},
    {"origin": "http://127.0.0.1:8000", "content-type": "application/x-www-form-urlencoded"}])
def test_a_page_of_another_origin_can_neither_ask_the_state_nor_call_through_the_bridge(tmp_path, headers):
    """A `text/plain` post needs no preflight, so the browser sends it: refused before it is read. Without
    --allow-origin no preflight is answered either, so no page reads an answer."""
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        before = moved(ctx)
        msgs = chat(["one"], [TICK])
        bodies = [({"messages": msgs}, STATE), ({"messages": msgs}, "/tagengine/api/c/heist/state"),
                  (bridge_body({"method": "POST", "path": STATE, "messages": True}, msgs), BRIDGE)]
        for body, path in bodies:
            r = h.post(path, content=json.dumps(body), headers=headers)
            assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed", (path, r.text)
            assert "access-control-allow-origin" not in r.headers
            pre = h.options(path, headers={"origin": "http://evil.example", "access-control-request-method": "POST"})
            assert pre.status_code == 405 and "access-control-allow-origin" not in pre.headers
        assert moved(ctx) == before


def test_a_rebound_name_reads_neither_the_campaigns_nor_the_state(tmp_path):
    with serving(tmp_path) as (url, _), httpx.Client(base_url=url, timeout=30) as h:
        rebound = {"host": "evil.example:5005"}
        answers = [h.get("/tagengine/api/campaigns", headers=rebound),
                   h.post(STATE, json={"messages": chat(["one"], [])}, headers=rebound),
                   h.post(BRIDGE, json=bridge_body({"method": "GET", "path": "/tagengine/api/campaigns"}),
                          headers=rebound)]
        assert h.get("/healthz", headers=rebound).status_code == 200
    for r in answers:
        assert r.status_code == 400 and r.json()["error"]["code"] == "host_not_allowed", r.text
        assert "heist" not in r.text


# -- bad bodies: every field, every bound (SEC-1): an error naming it, never a 500


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"messages": [1]}, 400, "invalid_messages"),
    ({"messages": [{"role": 1, "content": "x"}]}, 400, "invalid_messages"),
    ({"messages": [{"role": ["user"], "content": "x"}]}, 400, "invalid_messages"),
    ({"messages": [{"role": "user", "content": 5}], "campaign": "heist"}, 400, "invalid_messages"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}], "campaign": "heist"}, 400,
     "invalid_messages"),
    ({"messages": None}, 400, "invalid_messages"),
    ({"messages": {"role": "user", "content": "x"}}, 400, "invalid_messages"),
    ({"messages": [], "campaign": {"name": "heist"}}, 400, "invalid_request"),
    ({"messages": [], "campaign": 1}, 400, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": True}, 400, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": 1.5}, 400, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": None}, 400, "invalid_request"),
    ({"messages": chat(["one"], []), "rewrite_from": 10 ** 30}, 200, None),  # past every message: no rewrite
    ({"messages": [{"role": "user", "content": "x"}] * (MAX_MESSAGES + 1)}, 413, "too_many_messages"),
    ({"messages": [*chat(["one"], []), {"role": "user", "content": "x" * (MAX_MESSAGE + 1)}]}, 413,
     "message_too_large")])
def test_each_field_of_a_bad_state_request_is_refused_naming_it(tmp_path, body, status, code):
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=60) as h:
        before = moved(ctx)
        r = h.post(STATE, content=json.dumps(body))
        assert moved(ctx) == before
    assert r.status_code == status, r.text[:300]
    if code is not None:
        assert r.json()["error"]["code"] == code
    if code == "message_too_large":
        assert "messages[2]" in r.json()["error"]["message"]


@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
                                 b'{"messages": [], "rewrite_from": 1e400, "campaign": "heist"}',
                                 b"\xff\xfe{}", b"", b" " * (MAX_BODY + 1)])
def test_a_body_that_is_not_a_state_request_is_refused(tmp_path, raw):
    with serving(tmp_path) as (url, _), httpx.Client(base_url=url, timeout=60) as h:
        r = h.post(STATE, content=raw)
    assert r.status_code in (400, 413), r.text[:300]
    assert r.json()["error"]["code"] in ("invalid_json", "invalid_request", "request_too_large")


@pytest.mark.parametrize("name", ["../../etc/passwd", "heist\x00", "/tmp", "heist/../vault", "x" * 5000])
def test_an_unknown_campaign_is_a_404_naming_only_it(tmp_path, name):
    """A name is looked up, never opened as a path; the answer names no file of the server's."""
    with serving(tmp_path) as (url, _), httpx.Client(base_url=url, timeout=30) as h:
        r = h.post(STATE, json={"messages": chat(["one"], []), "campaign": name})
    assert r.status_code == 404 and r.json()["error"]["code"] == "campaign_not_found"
    assert r.json()["campaign"] == {"name": name, "by": "asked", "warning": None}
    assert str(tmp_path) not in r.text


def test_a_campaign_whose_ruleset_is_gone_names_no_file(tmp_path):
    """SEC-9: the reason names the server's own files, so it goes to the log and the answer says none. The
    ruleset is a copy of the sample's, removed: the sample itself is read by tests running beside this one."""
    rulesets = tmp_path / "rulesets"
    rulesets.mkdir()
    copy = rulesets / "gravewatch.json"
    copy.write_bytes((SAMPLES / "rulesets" / "gravewatch.json").read_bytes())
    with serving(tmp_path) as (url, ctx):
        new_campaign(ctx.store, "lost", str(copy), ["Mira", "Bram"])
        copy.unlink()
        r = httpx.post(f"{url}{STATE}", json={"messages": chat(["one"], []), "campaign": "lost"})
    assert r.status_code == 500 and r.json()["error"]["code"] == "campaign_broken", r.text
    assert str(rulesets) not in r.text and "gravewatch" not in r.text


# -- the bridge: only this app's JSON API, never elsewhere (STX-2)


@pytest.mark.parametrize("path", [
    "http://127.0.0.1:1/tagengine/api/campaigns", "//evil.example/tagengine/api/campaigns",
    "/tagengine/api/../../v1/chat/completions", "/tagengine/api/%2e%2e/%2e%2e/v1/chat/completions",
    "/tagengine/api/c/heist/characters/..%2f..%2f..%2fui", "/c/..%2F/tagengine/api/state",
    "/tagengine/api/c/heist/characters/\udcff",  # a lone surrogate: no path HTTP can send
    "/tagengine/api/c/h\u00e9ist", "/tagengine/api/c/heist\n", "/tagengine/api/state?x=1",
    "/tagengine/bridge/chat/completions", "/v1/models", "/ui/", "/healthz", "tagengine/api/campaigns"])
def test_the_bridge_calls_nothing_but_this_apps_json_api(tmp_path, path):
    """A path the bridge cannot call is its 400 in the envelope (always a 200, STX-2), and the upstream is never
    asked: the bridge reaches no other address and relays no key."""
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        r = h.post(BRIDGE, content=json.dumps(bridge_body({"method": "GET", "path": path})).encode())
        again = h.get("/healthz")  # the connection and the server are fine after it
        assert ctx.fake.bodies == [] and ctx.fake.headers == []
    assert r.status_code == 200, r.text[:300]
    assert r.json()["tagengine"]["status"] == 400 and r.json()["tagengine"]["body"]["error"]["code"] == \
        "invalid_request"
    assert again.status_code == 200


@pytest.mark.parametrize("call", [None, [], "GET /tagengine/api/campaigns", {"method": "get", "path": STATE},
                                  {"method": "PUT", "path": STATE}, {"method": "POST"},
                                  {"method": "POST", "path": STATE, "body": "{}"},
                                  {"method": "POST", "path": STATE, "body": [1]}, {"method": "POST", "path": 1}])
def test_a_bridge_call_that_is_not_one_is_a_400_in_its_envelope(tmp_path, call):
    with serving(tmp_path) as (url, _):
        r = httpx.post(f"{url}{BRIDGE}", json=bridge_body(call))
    assert r.status_code == 200 and r.json()["tagengine"]["status"] == 400, r.text[:300]


# -- asking moves nothing (STX-4): the pages, the store's heads, the starts, the edits, the dice


def test_no_state_request_moves_the_pages_the_heads_or_the_dice(tmp_path):
    """Every kind of chat asked about, directly and through the bridge: the pages' turn and prompt, the
    campaigns' starts and the edits stay as they were, and the next check rolls the very same dice."""
    check = {"who": "Cutter", "skill": "Prowl"}
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=60) as h:
        replies = play(url, ctx, ["one", "two"])
        msgs = chat(["one", "two", "three"], replies)
        roll = h.post("/tagengine/api/checks", json={"messages": msgs, "check": check})
        before = moved(ctx)
        assert roll.status_code == 200 and before[0] is not None and before[1] is not None
        asked = [chat(["one", "two"], replies), chat(["one", "two"], [replies[0], TICK * 3]),
                 chat(["one", "two", "three", "four"], [*replies, TICK, TICK]),
                 chat(["one", "two"], [replies[0].replace('size="6"', 'size="8"'), replies[1]]),
                 chat(["one"], [], mark='[tagengine: campaign="vault"]'), chat(["one"], [TICK])]
        for messages in asked:
            assert h.post(STATE, json={"messages": messages, "rewrite_from": 0}).status_code == 200
            assert h.post(BRIDGE, json=bridge_body({"method": "POST", "path": STATE, "messages": True},
                                                   messages)).json()["tagengine"]["status"] == 200
        assert moved(ctx) == before
        assert h.post("/tagengine/api/checks", json={"messages": msgs, "check": check}).json() == roll.json()


# -- heavy work off the loop, memory bounded (SEC-2)


def test_a_long_replys_sheet_is_drawn_in_a_worker_thread_and_a_short_ones_on_the_loop(tmp_path, monkeypatch):
    """A reply of many tags has as many receipts, and the panel's sheet draws each: a megabyte of short tags
    held the event loop for 0.1 to 1 s a request. Past LOOP_CHARS, like applying the reply, it is a worker's."""
    threads: list[int] = []
    real = chat_state.panel_json

    def spy(*args: Any) -> Any:
        threads.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(chat_state, "panel_json", spy)
    long = TICK * (LOOP_CHARS // len(TICK) + 1)
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=60) as h:
        assert h.post(STATE, json={"messages": chat(["one"], [long])}).status_code == 200
        assert h.post(STATE, json={"messages": chat(["one"], [TICK])}).status_code == 200
    assert len(threads) == 2 and threads[0] != ctx.loop_thread and threads[1] == ctx.loop_thread


def test_the_receipts_kept_for_a_panels_next_ask_are_bounded_by_their_replies_text():
    """The memo of the last reply's receipts held 256 entries whatever their size: 30 chats ending in a megabyte of
    short tags each grew the server by 580 MB. Now it holds at most RECEIPTS_CHARS characters of replies."""
    memo = ReceiptsMemo()
    for n in range(RECEIPTS_HELD * 2):
        memo.put(f"k{n}", "x" * 4096, [{"n": n}])
        assert memo.held_chars <= RECEIPTS_CHARS and len(memo) <= RECEIPTS_HELD
    newest = RECEIPTS_HELD * 2 - 1
    assert memo.get(f"k{newest}") == [{"n": newest}] and memo.get("k0") is None
    memo.put("huge", "x" * (RECEIPTS_CHARS + 1), [{"n": -1}])
    assert memo.get("huge") is None and memo.get(f"k{newest}") is not None
    small = ReceiptsMemo()
    for n in range(RECEIPTS_HELD + 10):
        small.put(f"k{n}", "x", [])
    assert len(small) == RECEIPTS_HELD and small.held_chars == RECEIPTS_HELD


@pytest.mark.slow  # forty 100 KiB replies of tags applied under tracemalloc: some 6 s of CPU
def test_chats_ending_in_long_replies_do_not_grow_the_server(tmp_path):
    """The same, through the server: forty chats, each ending in 100 KiB of short tags (some 70 MB of receipts
    held before), leave the server's memory within a few megabytes of where it was (traced allocations)."""
    tags = [(f'[clock: name="A{n}" tick="1"]') * (100 * 1024 // 28) for n in range(40)]
    with serving(tmp_path) as (url, _), httpx.Client(base_url=url, timeout=60) as h:
        h.post(STATE, json={"messages": chat(["warm"], [TICK])})
        gc.collect()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            for n, reply in enumerate(tags):
                assert h.post(STATE, json={"messages": chat([f"go {n}"], [reply])}).status_code == 200
            gc.collect()
            grown = (tracemalloc.get_traced_memory()[0] - start) / 1e6
        finally:
            tracemalloc.stop()
    assert grown < 30, f"the server holds {grown:.0f} MB more after 40 state requests"


# -- tagengine st extension --install DIR: nothing outside DIR/extensions/tagengine is written or removed (STX-1)


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return run(list(argv), out, err), out.getvalue(), err.getvalue()


def user_folder(tmp_path: Path) -> Path:
    user = tmp_path / "st" / "default-user"
    (user / "extensions").mkdir(parents=True)
    return user


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_install_over_a_link_to_a_copy_elsewhere_replaces_the_link_and_leaves_the_copy(tmp_path):
    """`extensions/tagengine` a link to a folder of ours elsewhere (a developer's): the link is replaced by a
    copy, and the folder it pointed to is neither written nor removed."""
    user = user_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(extension_dir(), elsewhere)
    (elsewhere / "index.js").write_text("// the developer's own")
    (elsewhere / "notes.txt").write_text("keep me")
    kept = tree(elsewhere)
    (user / "extensions" / "tagengine").symlink_to(elsewhere, target_is_directory=True)
    code, _, err = call("st", "extension", "--install", str(user))
    target = user / "extensions" / "tagengine"
    assert code == 0, err
    assert not target.is_symlink() and sorted(p.name for p in target.iterdir()) == sorted(FILES)
    assert tree(elsewhere) == kept
    assert sorted(p.name for p in (user / "extensions").iterdir()) == ["tagengine"]


@pytest.mark.parametrize("case", ["someone-elses", "dangling"])
def test_install_over_a_link_it_may_not_replace_writes_nowhere(tmp_path, case):
    user = user_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    if case == "someone-elses":
        elsewhere.mkdir()
        (elsewhere / "manifest.json").write_text('{"display_name": "Other"}')
    kept = tree(elsewhere) if elsewhere.exists() else None
    (user / "extensions" / "tagengine").symlink_to(elsewhere, target_is_directory=True)
    code, _, err = call("st", "extension", "--install", str(user))
    assert code == 1 and "tagengine" in err
    assert (tree(elsewhere) if elsewhere.exists() else None) == kept
    assert sorted(p.name for p in (user / "extensions").iterdir()) == ["tagengine"]  # no copy left beside it
    assert (user / "extensions" / "tagengine").is_symlink()



# -- rewrites (STX-7) land on the message they were made from


RECEIPTED = ['The lock gives. [clock: name="Alarm raised" size="6" result="ok" now="0/6"]',
             'A bell rings. [clock: name="Alarm raised" tick="4" result="ok" now="9/6"]',
             'Boots. [clock: name="Alarm raised" tick="1" result="ok" now="9/6"]']  # the last two's receipts wrong


@pytest.mark.parametrize("case", ["a reply that is only a marker", "a reply as content parts"])
def test_each_rewrite_names_the_message_it_rewrites(tmp_path, case):
    """The extension writes each rewrite into the message at its index and saves the chat: an index off by one
    overwrote another reply. The plain history drops an assistant message a marker left empty and reads content
    parts as text; the indices follow the same reading."""
    one, two, three = RECEIPTED
    if case == "a reply that is only a marker":
        msgs = chat(["one", "two", "three", "four"], [one, '[tagengine: campaign="heist"]', two, three])
        expected = [6, 8]
    else:
        msgs = chat(["one", "two", "three"], [one, two, three])
        msgs[2] = {"role": "assistant", "content": [{"type": "text", "text": one}]}
        expected = [4, 6]
    with serving(tmp_path) as (url, _):
        got = httpx.post(f"{url}{STATE}", json={"messages": msgs, "rewrite_from": 0}).json()
    assert [r["index"] for r in got["rewrites"]] == expected, got["rewrites"]
    for r in got["rewrites"]:
        written = msgs[r["index"]]["content"]
        assert r["text"].split("[")[0] == written.split("[")[0]  # the same reply's prose, its receipts made again
    assert [r["text"][r["text"].index("now="):] for r in got["rewrites"]] == ['now="4/6"]', 'now="5/6"]']


def test_a_long_invented_chat_does_not_prune_what_the_pages_show(tmp_path):
    """A state request replays what it is sent, and keeps its snapshots as a turn's replay does (S-20 prunes the
    least recently used past --keep). One request of more replies than --keep pruned the pages' newest turn too:
    they showed the campaign's start ("gone from the store") and refused every edit until a turn was played. A
    head's snapshot is what the pages read, with no history to replay it from: it is never pruned."""
    with serving(tmp_path, keep=20) as (url, ctx), httpx.Client(base_url=url, timeout=60) as h:
        play(url, ctx, ["one", "two"])
        c = ctx.campaign("heist")
        shown = ctx.latest.newest(c)
        invented = [{"role": "system", "content": '[tagengine: campaign="heist"]'}] + [
            {"role": "assistant", "content": f"Step {k}."} for k in range(150)]
        assert h.post(STATE, json={"messages": invented}).status_code == 200
        after = ctx.latest.newest(c)
        page = h.get("/ui/c/heist").text
    assert not after.gone and after.key == shown.key and after.state.to_json() == shown.state.to_json()
    assert "gone from the store" not in page
