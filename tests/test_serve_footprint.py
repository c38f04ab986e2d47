"""What a server that only plays turns holds (PF-46..PF-49): modules a served turn never uses are not imported.

Each check runs the app in a process of its own (a test process has imported everything already): the app
under httpx's ASGI transport, its upstream a MockTransport, one campaign turn played whole and one streamed,
then the names in `sys.modules` are printed. Memory figures are in docs/decisions.md, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tagengine._internal import disk_cache
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store

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
print(json.dumps(sorted(sys.modules)))
"""


def modules_after_turns(data: Path, cache: str) -> set[str]:
    env = {**os.environ, disk_cache.VARIABLE: cache}
    done = subprocess.run([sys.executable, "-c", TURN, str(data)], capture_output=True, text=True, env=env,
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
