"""What a server that only plays turns holds (PF-46..PF-49): modules a served turn never uses are not imported.

Each check runs the app in a process of its own (a test process has imported everything already): the app
under httpx's ASGI transport, its upstream a MockTransport, one campaign turn played whole and one streamed,
then the names in `sys.modules` are printed. Memory figures are in docs/decisions.md, never asserted here.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tagengine._internal import disk_cache
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import IDLE_TRIM_SECONDS, YOUNG_OBJECTS
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.runtime.heap import IdleTrim, trimmer

ROOT = Path(__file__).resolve().parents[1]
BLADES = ROOT / "samples" / "rulesets" / "blades-like.json"
WATCHED = ("pydantic", "pydantic_core")

TURN = r"""
import asyncio, json, sys
from pathlib import Path

import httpx

from tagengine._internal.server.app import Options, make_app

REPLY = 'The guard turns. [clock: name="Alarm" size="4"]'


def answer(request):
    if b'"stream":true' in request.content.replace(b" ", b""):
        doc = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": REPLY}, "finish_reason": None}]}
        body = b"data: " + json.dumps(doc).encode() + b"\n\ndata: [DONE]\n\n"
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    doc = {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]}
    return httpx.Response(200, json=doc)


app = make_app(Options(upstream="http://upstream.test/v1", data=Path(sys.argv[1]), context=200000,
                       transport=httpx.MockTransport(answer)))
chat = [{"role": "system", "content": 'You are the GM. [tagengine: campaign="heist"]'},
        {"role": "user", "content": "We go in."}]


async def main():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        whole = await c.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": chat})
        streamed = await c.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": chat, "stream": True})
        assert whole.status_code == streamed.status_code == 200, (whole.text, streamed.text)
        assert 'result="ok"' in whole.json()["choices"][0]["message"]["content"], whole.text
        assert 'result=' in streamed.text, streamed.text


asyncio.run(main())
print(json.dumps(sorted(k for k, v in sys.modules.items() if v is not None)))  # None: an import refused
"""


def modules_after_turns(data: Path, cache: str, first: str = "") -> set[str]:
    """The modules of a new process that ran `first`, then made the app and played a turn whole and streamed."""
    env = {**os.environ, disk_cache.VARIABLE: cache}
    done = subprocess.run([sys.executable, "-c", first + TURN, str(data)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.fixture
def campaign(tmp_path, monkeypatch):
    """A data folder with campaign `heist`, made with the cache folder `tmp_path/cache` (which keeps its
    ruleset, as `tagengine campaign new` does)."""
    monkeypatch.setenv(disk_cache.VARIABLE, str(tmp_path / "cache"))
    store = Store(tmp_path / "data")
    try:
        new_campaign(store, "heist", str(BLADES), ["Cutter"], seed="s")
    finally:
        store.close()
    return tmp_path


def test_a_served_turn_reads_a_kept_ruleset_without_pydantic(campaign):
    """PF-46: the campaign's ruleset, kept in the cache folder when the campaign was made, is read back as the
    command line reads it (PF-27): pydantic and its validators (some 9 MB) are not loaded to play a turn."""
    got = modules_after_turns(campaign / "data", str(campaign / "cache"))
    assert not [m for m in got if m.split(".")[0] in WATCHED]


def test_a_ruleset_not_kept_is_validated_and_then_kept(campaign):
    """The other side: with nothing kept (the cache folder off) the server validates the ruleset with pydantic;
    with a new cache folder it validates once, keeps it, and the next server needs no pydantic."""
    off = modules_after_turns(campaign / "data", "")
    assert "pydantic" in off
    fresh = campaign / "fresh"
    assert "pydantic" in modules_after_turns(campaign / "data", str(fresh))
    assert "pydantic" not in modules_after_turns(campaign / "data", str(fresh))


# -- the young collections of the server's process (PF-54) ------------------------------------------------------
@pytest.fixture
def collector():
    """Python's thresholds for the test, and this process's back after it."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_serve_spaces_the_young_collections_and_an_app_alone_leaves_them(collector, monkeypatch, tmp_path):
    """`serve` runs the process as a server: its young passes come after YOUNG_OBJECTS objects, the older
    generations' thresholds as they were. An app made by a program that embeds it (`make_app`) leaves the
    program's collector alone."""
    import uvicorn

    from tagengine._internal.server import main

    make_app(Options(upstream="demo", data=tmp_path / "embedded"))
    assert gc.get_threshold() == (700, 10, 10)
    seen: list[tuple[int, ...]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.append(gc.get_threshold()))
    assert main.serve(Options(upstream="demo", data=tmp_path / "served"), "127.0.0.1", 0, io.StringIO()) == 0
    assert seen == [(YOUNG_OBJECTS, 10, 10)] and YOUNG_OBJECTS > 700


# -- the freed heap handed back when idle (PF-47) --------------------------------------------------------------
def test_the_c_library_trim_is_found_on_linux():
    trim = trimmer()
    if not sys.platform.startswith("linux"):
        assert trim is None
        return
    assert trim is not None and trim() in (0, 1)  # 1: pages were handed back


def test_the_app_counts_every_request_first(tmp_path):
    app = make_app(Options(upstream="http://upstream.test/v1", data=tmp_path / "data"))
    first = app.user_middleware[0]
    assert first.cls is IdleTrim and first.kwargs["seconds"] == IDLE_TRIM_SECONDS > 0


def test_the_heap_is_trimmed_once_after_the_last_request_and_never_during_one():
    """A request in flight holds the trim off however long it runs; when the last one ends and the server has
    been idle `seconds`, the trim runs once, and not again until another request ran."""
    calls: list[str] = []

    async def main() -> None:
        release = asyncio.Event()
        trimmed = asyncio.Event()

        def trim() -> int:
            calls.append("trimmed")
            trimmed.set()
            return 1

        async def slow(scope, receive, send):
            if scope["path"] == "/slow":
                await release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

        mw = IdleTrim(slow, trim, 0.0)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mw), base_url="http://127.0.0.1") as c:
            held = asyncio.create_task(c.get("/slow"))
            for _ in range(1000):  # bounded: until the slow request is in flight
                if mw.busy:
                    break
                await asyncio.sleep(0)
            for _ in range(3):  # a quick request ends while the slow one is in flight: no trim yet
                assert (await c.get("/quick")).status_code == 200
            for _ in range(50):
                await asyncio.sleep(0)
            assert calls == [] and mw.busy == 1
            release.set()
            assert (await held).status_code == 200
            await asyncio.wait_for(trimmed.wait(), 30)  # a bound for a broken build, not a timing
            for _ in range(50):  # idle again with nothing run since: no second trim
                await asyncio.sleep(0)
            assert len(calls) == 1 and mw.timer is None
            trimmed.clear()
            assert (await c.get("/quick")).status_code == 200
            await asyncio.wait_for(trimmed.wait(), 30)
            assert len(calls) == 2

    asyncio.run(main())


def test_no_trim_where_the_c_library_has_none():
    async def main() -> None:
        async def ok(scope, receive, send):
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        mw = IdleTrim(ok, None, 0.0)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mw), base_url="http://127.0.0.1") as c:
            assert (await c.get("/")).status_code == 204
        assert mw.busy == 0 and mw.timer is None

    asyncio.run(main())


# -- httpx's command line left out of `tagengine serve` (PF-48) ------------------------------------------------
SERVE_FIRST = "from tagengine._internal.cli.serve import without_httpx_command_line\nwithout_httpx_command_line()\n"
CLI_ONLY = ("rich", "pygments")  # what httpx's command line alone brings (click comes with uvicorn too)


def test_serve_leaves_httpx_command_line_out(campaign):
    """PF-48: `tagengine serve` blocks `httpx._main` before the server imports httpx, so rich and pygments (where
    installed) are not loaded; httpx works as before, and its `main` says its command line is unavailable."""
    got = modules_after_turns(campaign / "data", str(campaign / "cache"), SERVE_FIRST)
    assert "httpx" in got and "httpx._main" not in got
    assert not [m for m in got if m.split(".")[0] in CLI_ONLY]
    if all(importlib.util.find_spec(m) for m in ("click", "rich", "pygments")):  # the other side, where it can show
        plain = modules_after_turns(campaign / "data", str(campaign / "cache"))
        assert "httpx._main" in plain and "rich" in plain


def test_leaving_it_out_changes_nothing_once_httpx_command_line_is_loaded():
    code = ("import sys\nsys.modules['httpx._main'] = m = type(sys)('httpx._main')\n" + SERVE_FIRST +
            "print(sys.modules['httpx._main'] is m)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["True"]
