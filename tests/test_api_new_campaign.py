"""Starting a campaign through the JSON API (STX-14): `GET /tagengine/api/rulesets` and `POST
/tagengine/api/campaigns`, as the SillyTavern extension calls them (directly and through SillyTavern's bridge),
and as a web page of another origin, a rebound name and a client that means harm would: a huge body, a body of
the wrong shape, names the store refuses, and two clients racing to take one name. A real client against the
app served on loopback (serve_kit.Running); `--rulesets` is the bundled sample rulesets, serve's default."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Running
from test_serve_fuzz import raw_request

from conftest import SAMPLES
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import MAX_START_BODY
from tagengine._internal.server.memory.store import Store

NEW = "/tagengine/api/campaigns"
BRIDGE = "/tagengine/bridge/chat/completions"


@contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    data = tmp_path / "data"
    Store(data).close()
    app = make_app(Options(upstream="demo", data=data, rulesets=SAMPLES / "rulesets"))
    with Running(app) as srv:
        yield srv.url, app.state.context


def made(ctx: Any) -> list[str]:
    return [r.name for r in ctx.store.campaigns()]


def test_the_rulesets_are_listed_and_a_campaign_is_started_with_its_characters_in_order(tmp_path):
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        listed = h.get("/tagengine/api/rulesets").json()["rulesets"]
        assert {"file": "blades-like.json", "name": "Blades-like Crew", "problem": None} in listed
        r = h.post(NEW, json={"name": "vexrook", "ruleset": "blades-like.json", "characters": ["Vex", "Rook"]})
        assert r.status_code == 201, r.text
        assert r.json() == {"campaign": "vexrook", "ruleset": "blades-like.json", "characters": ["Vex", "Rook"]}
        assert made(ctx) == ["vexrook"]
        listed_campaigns = h.get("/tagengine/api/campaigns").json()["campaigns"]
        assert listed_campaigns == [{"name": "vexrook", "characters": ["Vex", "Rook"]}]
        # through SillyTavern's bridge, as the extension calls it by default
        call = {"method": "POST", "path": NEW, "body": {"name": "other", "ruleset": "gravewatch.json",
                                                        "characters": ["Mira"]}}
        got = h.post(BRIDGE, json={"messages": [], "model": "tagengine", "stream": False, "tagengine": call}).json()
        assert got["tagengine"]["status"] == 201 and "other" in made(ctx)


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"name": "bad name", "ruleset": "blades-like.json", "characters": ["Vex"]}, 422, "name"),
    ({"name": "x", "ruleset": "../../etc/passwd", "characters": ["Vex"]}, 422, "ruleset"),
    ({"name": "x", "ruleset": "nope.json", "characters": ["Vex"]}, 422, "ruleset"),
    ({"name": "x", "ruleset": "blades-like.json", "characters": []}, 422, "characters"),
    ({"name": "x", "ruleset": "blades-like.json", "characters": ["Vex", "Vex"]}, 422, "characters"),
    ({"name": "x", "ruleset": "blades-like.json", "characters": [f"C{i}" for i in range(41)]}, 422, "characters"),
    ({"name": "x", "ruleset": "blades-like.json", "characters": ["Vex\nRook"]}, 400, None),
    ({"name": "x", "ruleset": "blades-like.json", "characters": "Vex"}, 400, None),
    ({"name": 1, "ruleset": "blades-like.json", "characters": ["Vex"]}, 400, None),
    ({"name": "x", "ruleset": "blades-like.json", "characters": ["Vex"], "seed": "1"}, 400, None),
    ([1, 2], 400, None),
])
def test_a_bad_start_is_refused_by_field_and_nothing_is_made(tmp_path, body, status, field):
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        r = h.post(NEW, json=body)
        assert r.status_code == status, r.text
        assert r.json()["error"]["message"]
        if field is not None:
            assert r.json()["problems"][0]["field"] == field
        assert made(ctx) == []


def test_a_huge_body_is_refused_before_it_is_read_and_a_body_past_the_bound_while_read(tmp_path):
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        status, _ = raw_request(url, b"POST " + NEW.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Content-Type: application/json\r\nContent-Length: 67108864\r\n")
        assert status == 413
        names = ["N" * 200 + str(i) for i in range(MAX_START_BODY // 200 + 10)]
        big = json.dumps({"name": "big", "ruleset": "blades-like.json", "characters": names})
        r = h.post(NEW, content=big.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
        assert made(ctx) == []


def test_a_page_of_another_origin_and_a_rebound_name_start_nothing(tmp_path):
    body = json.dumps({"name": "evil", "ruleset": "blades-like.json", "characters": ["Vex"]})
    with serving(tmp_path) as (url, ctx), httpx.Client(base_url=url, timeout=30) as h:
        r = h.post(NEW, content=body, headers={"origin": "http://evil.example", "content-type": "text/plain"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
        r = h.post(NEW, content=body, headers={"host": "evil.example:5005", "content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "host_not_allowed"
        r = h.get("/tagengine/api/rulesets", headers={"host": "evil.example:5005"})
        assert r.status_code == 400 and "blades" not in r.text
        assert made(ctx) == []


def test_two_clients_racing_for_one_name_make_one_campaign_and_the_other_is_told(tmp_path):
    with serving(tmp_path) as (url, ctx):
        answers: list[httpx.Response] = []
        go = threading.Barrier(8)

        def start(i: int) -> None:
            with httpx.Client(base_url=url, timeout=30) as h:
                go.wait()
                answers.append(h.post(NEW, json={"name": "same", "ruleset": "blades-like.json",
                                                 "characters": [f"Who{i}"]}))

        threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(r.status_code for r in answers)
        assert statuses == [201] + [409] * 7, [r.text for r in answers]
        assert all(r.json()["error"]["code"] == "campaign_exists" for r in answers if r.status_code == 409)
        assert made(ctx) == ["same"]
