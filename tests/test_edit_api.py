"""Issue 27 item 4: the editor's JSON API (docs/editor.md, "The JSON API"), with a real client against `tagengine
serve` on loopback. Each answer carries the same problems (path, code, message, value) as the engine's edit and
the pages; a stale party save is a 409 with the newer sheet; every route that changes anything is a POST."""

from __future__ import annotations

import json
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
from tagengine._internal.commands.sheet_edits import edit_party, edit_sheet
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store
from tagengine._internal.sheet.form import edit_form
from tagengine._internal.state import GameState

SEED = "api-seed"
API = "/tagengine/api/c"


@contextmanager
def serving(tmp_path: Path, **kw: Any) -> Iterator[str]:
    data = tmp_path / "data"
    store = Store(data)
    for name, rs, chars in (("heist", "blades-like", ["Cutter", "Lurk"]), ("roads", "ember-roads", ["Mira"]),
                            ("vault", "gravewatch", ["Mira", "Bram"]), ("five", "fifth-like", ["Vess"])):
        new_campaign(store, name, str(SAMPLES / "rulesets" / f"{rs}.json"), chars, seed=SEED)
    store.close()
    fake = Fake(script={"one": "The night is long."})
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data, **kw))) as srv:
        yield srv.url


def played(url: str, campaign: str) -> list[dict[str, str]]:
    """One turn of the campaign, so that edits wait for the next reply (before it they make the start)."""
    msgs = [{"role": "system", "content": f'GM [tagengine: campaign="{campaign}"]'}, {"role": "user",
                                                                                   "content": "TURN:one"}]
    r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": msgs})
    for _ in range(500):  # the reply is kept once its answer has gone (S-24): bounded wait for it
        if httpx.get(f"{url}{API}/{campaign}").json()["at"]["turn"] is not None:
            break
        time.sleep(0.01)
    return [*msgs, r.json()["choices"][0]["message"]]


def waiting(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "data" / DB_NAME) as db:
        return int(db.execute("SELECT count(*) FROM edits").fetchone()[0])


def start(name: str, chars: list[str]) -> GameState:
    return GameState.new(load_sample(name), chars, seed=SEED)


def test_a_sheet_is_read_with_its_form_and_the_campaign_with_its_point(tmp_path):
    with serving(tmp_path) as url:
        summary = httpx.get(f"{url}{API}/heist").json()
        form = httpx.get(f"{url}{API}/heist/characters/Cutter")
        party = httpx.get(f"{url}{API}/heist/party")
        missing = httpx.get(f"{url}{API}/heist/characters/Nobody")
        nothing = httpx.get(f"{url}{API}/nope/characters/Cutter")
        no_party = httpx.get(f"{url}{API}/vault/party")
    rs = load_sample("blades-like")
    assert summary["characters"] == ["Cutter", "Lurk"] and summary["party"] == {"label": "Crew", "revision": 0}
    assert summary["at"]["start"] is True and summary["at"]["waiting"] == 0
    engine = edit_form(rs, start("blades-like", ["Cutter", "Lurk"]), "Cutter").to_json()
    assert form.status_code == 200 and form.json()["form"] == json.loads(json.dumps(engine))
    assert party.json()["form"]["revision"] == 0 and party.json()["form"]["party"] is True
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "character_not_found")
    assert (nothing.status_code, nothing.json()["error"]["code"]) == (404, "campaign_not_found")
    assert (no_party.status_code, no_party.json()["error"]["code"]) == (404, "party_not_found")


def test_an_edit_answers_the_engine_s_own_problems_and_keeps_nothing(tmp_path):
    """A refused edit: 422 with every problem as the engine reports it (path, code, message, value), the form they
    sit on showing what was typed; nothing kept. The same edit made right: 200, the changes as applied."""
    bad = {"abilities.insight": "nine", "fields.stash": 99, "fields.vice": "x" * 401, "fields.nope": "?",
           "skills.hunt": "Four dots"}
    with serving(tmp_path) as url:
        played(url, "heist")
        r = httpx.post(f"{url}{API}/heist/characters/Cutter", json={"changes": bad})
        kept = waiting(tmp_path)
        ok = httpx.post(f"{url}{API}/heist/characters/Cutter", json={"changes": [
            {"path": "abilities.insight", "value": 2}, "fields.vice=Gambling", {"op": "set", "path": "skills.hunt",
                                                                                "value": "Two dots"}]})
    engine = edit_sheet(load_sample("blades-like"), start("blades-like", ["Cutter", "Lurk"]), "Cutter", bad)
    assert r.status_code == 422 and r.json()["ok"] is False and r.json()["error"]["code"] == "invalid_edit"
    assert r.json()["problems"] == [p.to_json() for p in engine.problems]
    assert {p["code"] for p in r.json()["problems"]} == {"wrong-type", "out-of-range", "too-long", "unknown-path",
                                                         "unknown-value"}
    inputs = {i["path"]: i for s in r.json()["form"]["sections"] for i in s["inputs"]}
    assert inputs["fields.stash"]["value"] == 99 and inputs["fields.stash"]["problems"][0]["code"] == "out-of-range"
    assert kept == 0
    assert ok.status_code == 200 and ok.json()["changes"] == [
        {"op": "set", "path": "abilities.insight", "value": 2},
        {"op": "set", "path": "fields.vice", "value": "Gambling"}, {"op": "set", "path": "skills.hunt", "value": "2"}]
    assert ok.json()["at"]["waiting"] == 1


def test_a_stale_party_save_is_a_409_with_the_newer_sheet(tmp_path):
    """PARTY-35, PARTY-36, PARTY-37: a save names the revision it was opened at; one opened before a newer save is
    refused 409 with the newer sheet's form; saving again at the newer revision lands. A save naming none: 422."""
    with serving(tmp_path) as url:
        played(url, "heist")
        first = httpx.post(f"{url}{API}/heist/party", json={"changes": {"fields.heat": 3}, "revision": 0})
        stale = httpx.post(f"{url}{API}/heist/party", json={"changes": {"fields.tier": 2}, "revision": 0})
        unnamed = httpx.post(f"{url}{API}/heist/party", json={"changes": {"fields.tier": 2}})
        again = httpx.post(f"{url}{API}/heist/party", json={"changes": {"fields.tier": 2}, "revision": 1})
    assert first.status_code == 200 and first.json()["form"]["revision"] == 1
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_revision"
    assert stale.json()["problems"][0]["code"] == "stale-revision" and stale.json()["form"]["revision"] == 1
    heat = next(i for s in stale.json()["form"]["sections"] for i in s["inputs"] if i["path"] == "fields.heat")
    assert heat["value"] == 3  # the newer sheet
    assert unnamed.status_code == 422 and unnamed.json()["problems"][0]["path"] == "revision"
    assert again.status_code == 200 and again.json()["form"]["revision"] == 2


def test_the_play_controls_are_edits_by_path(tmp_path):
    """The game sheet's controls through the API: a box marked (WOUND-31, WOUND-51), a state picked (STATE-15), a
    pool, a condition, a note; the form's `play` shows them."""
    with serving(tmp_path) as url:
        played(url, "roads")
        r = httpx.post(f"{url}{API}/roads/characters/Mira", json={"changes": {
            "pools.grit": 2, "states.stance": "Guarded", "conditions.soaked": True,
            "text.heading": "North, to the pass", "tracks.weariness": 1}})
        played(url, "vault")
        box = httpx.post(f"{url}{API}/vault/characters/Bram", json={"changes": {"marks.strain.3": "strain"}})
    play = r.json()["form"]["play"]
    assert r.status_code == 200, r.text
    shown = {i["path"]: i["value"] for i in (*play["pools"], *play["states"], *play["conditions"], *play["notes"],
                                             *play["tracks"])}
    assert shown.items() >= {"pools.grit": 2, "states.stance": "guarded", "conditions.soaked": True,
                             "text.heading": "North, to the pass", "tracks.weariness": 1}.items()
    strain = next(w for w in box.json()["form"]["play"]["wounds"] if w["path"] == "marks.strain")
    assert [b["mark"] for b in strain["boxes"]] == [None, None, "strain", None]  # the box clicked (WOUND-51)
    assert strain["boxes"][2]["action"] == "clear"


def test_a_draft_is_answered_with_what_it_re_computes_and_nothing_is_kept(tmp_path):
    """The page's live values: a draft's derived values (SHEET-19), check numbers (none for a refused untrained
    check, UNTR-13), what `hideWhen` hides (HIDE-5), the chips' count against `pick` (SHEET-16, SHEET-17), typed
    words never refused (SHEET-18) and problems; nothing kept."""
    with serving(tmp_path) as url:
        r = httpx.post(f"{url}{API}/roads/draft/characters/Mira", json={"changes": {
            "fields.level": "5", "fields.roads": "coast, hills", "skills.dig": "trained", "abilities.wits": "9"}})
        before = httpx.post(f"{url}{API}/roads/draft/characters/Mira", json={"changes": {}}).json()
        five = httpx.post(f"{url}{API}/five/draft/characters/Vess", json={"changes": {"fields.casting": "full"}})
        five_before = httpx.post(f"{url}{API}/five/draft/characters/Vess", json={"changes": {}})
        after = httpx.get(f"{url}{API}/roads/characters/Mira").json()["at"]
    d = r.json()
    assert d["derived"]["derived.roads_known"] == "2" and before["derived"]["derived.roads_known"] == "1"
    assert d["checks"]["skills.dig"]["refused"] is False and before["checks"]["skills.dig"]["refused"] is True
    assert d["chips"]["fields.roads"] == {"chosen": ["coast"], "pick": 2, "offer": True}
    assert [(p["path"], p["code"]) for p in d["problems"]] == [("abilities.wits", "out-of-range")]
    assert "derived.spell_dc" not in five.json()["hidden"] and "derived.spell_dc" in five_before.json()["hidden"]
    assert after["start"] is True and waiting(tmp_path) == 0


def test_the_api_needs_the_key_and_changes_state_by_post_only(tmp_path):
    """With --api-key the API needs `Authorization: Bearer KEY` like the chat routes (the pages' cookie does not
    open it); every route that changes anything is a POST: a GET of it changes nothing (405)."""
    with serving(tmp_path, api_key="sekrit") as url:
        bare = httpx.get(f"{url}{API}/heist/characters/Cutter")
        keyed = httpx.get(f"{url}{API}/heist/characters/Cutter", headers={"authorization": "Bearer sekrit"})
        cookie = httpx.get(f"{url}{API}/heist", cookies={"tagengine_ui": "x"})
    assert bare.status_code == 401 and keyed.status_code == 200 and cookie.status_code == 401
    with serving(tmp_path / "2") as url:
        app_routes = make_app(Options(upstream="demo", data=tmp_path / "3")).routes
        for route in app_routes:
            path = getattr(route, "path", "")
            methods = getattr(route, "methods", None) or set()
            if path.startswith(("/tagengine/api", "/ui/c/{campaign}/play", "/ui/c/{campaign}/party/play")) and \
                    "GET" in methods:
                handler = getattr(route.endpoint, "func", route.endpoint)  # a handler bound to the context
                assert handler.__name__ in ("api_campaign", "api_sheet", "campaign_list", "api_rulesets"), path  # reads
        for path in ("/draft/characters/Cutter", "/draft/party", "/read/characters/Cutter"):
            assert httpx.get(f"{url}{API}/heist{path}").status_code == 405
        assert httpx.get(f"{url}/ui/c/heist/play/Cutter", params={"pools.stress": "3"}).status_code == 405
        assert httpx.get(f"{url}{API}/heist").json()["at"]["start"] is True


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", json.dumps({"changes": {}, "extra": 1}).encode(),
                                  json.dumps({"messages": "not a list"}).encode(), b"\xff\xfe"])
def test_a_malformed_body_is_a_400_naming_why(tmp_path, body):
    with serving(tmp_path) as url:
        r = httpx.post(f"{url}{API}/heist/characters/Cutter", content=body,
                       headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["message"]
    assert waiting(tmp_path) == 0


def test_changes_of_any_shape_are_refused_by_name(tmp_path):
    """Wrong types inside the changes: each refused as the engine refuses it, with its path; nothing kept."""
    with serving(tmp_path) as url:
        played(url, "heist")
        r = httpx.post(f"{url}{API}/heist/characters/Cutter", json={"changes": [
            {"path": "fields.stash", "value": [1, 2]}, {"path": "fields.vice", "value": {"a": 1}}, 7, None,
            {"op": "explode", "path": "fields.vice"}, {"path": "fields.stash", "value": 1.5}]})
        single = httpx.post(f"{url}{API}/heist/characters/Cutter", json={"changes": "fields.stash=3"})
    codes = [(p["path"], p["code"]) for p in r.json()["problems"]]
    assert r.status_code == 422 and ("fields.stash", "wrong-type") in codes and ("fields.vice", "wrong-type") in codes
    assert ("changes", "wrong-type") in codes and ("fields.vice", "unknown-op") in codes
    assert single.status_code == 422 and waiting(tmp_path) == 0


def test_a_party_edit_before_the_first_reply_makes_the_start(tmp_path):
    """ED-14: before any reply the party sheet's Edit makes the campaign's start, revision and all."""
    with serving(tmp_path) as url:
        r = httpx.post(f"{url}{API}/heist/party", json={"changes": {"add:lists.cohorts": None,
                                                                    "lists.cohorts.0.name": "Vultures"},
                                                        "revision": 0})
        again = httpx.get(f"{url}{API}/heist").json()
    engine = edit_party(load_sample("blades-like"), start("blades-like", ["Cutter", "Lurk"]),
                        {"add:lists.cohorts": None, "lists.cohorts.0.name": "Vultures"}, opened_at=0)
    assert r.status_code == 200 and again["party"]["revision"] == 1 == engine.state.party_revision
    store = Store(tmp_path / "data")
    try:
        kept = json.loads(store.campaign_row("heist").start)
        assert kept["gamePartySheet"] == engine.state.to_json()["gamePartySheet"]
    finally:
        store.close()


def test_wound_60_a_row_deleted_while_its_levels_are_marked_leaves_overflow(tmp_path):
    """WOUND-60 in play: a scar row adds a level to Harm; every level marked by hand, then the row deleted: the
    mark that no longer fits stays as overflow (editing the sheet does not undo damage)."""
    with serving(tmp_path) as url:
        played(url, "vault")
        api = f"{url}{API}/vault/characters/Bram"
        assert httpx.post(api, json={"changes": {"add:lists.scars": None, "lists.scars.0.name": "Bite",
                                                 "lists.scars.0.levels": 1}}).status_code == 200
        marked = httpx.post(api, json={"changes": {f"marks.harm.{n}": "knock" for n in range(1, 6)}})
        deleted = httpx.post(api, json={"changes": ["delete:lists.scars.0"]})
    harm = next(w for w in marked.json()["form"]["play"]["wounds"] if w["path"] == "marks.harm")
    assert [b["mark"] for b in harm["boxes"]] == ["knock"] * 5
    after = next(w for w in deleted.json()["form"]["play"]["wounds"] if w["path"] == "marks.harm")
    assert len(after["boxes"]) == 4 and after["overflow"] == 1
