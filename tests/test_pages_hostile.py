"""Issue 27: hostile input through every form of the editor's pages (and its JSON API's draft): overlong text,
wrong types, `<script>`, a stale revision, a field the ruleset does not have, a form too large, a body that is not
UTF-8. Each is answered with a clear problem in words (the page, never a 500), nothing is kept, and nothing a
player typed comes back as markup. Real HTTP against `tagengine serve` on loopback."""

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

from conftest import SAMPLES
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store

XSS = "<script>window.pwned=1</script>"
FORM = {"content-type": "application/x-www-form-urlencoded"}


@contextmanager
def serving(tmp_path: Path, *, played: bool) -> Iterator[str]:
    """Campaigns "heist" (blades-like) and "vault" (gravewatch); `played`: one reply each, so edits wait for the
    next reply (else they make the start)."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="h")
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"], seed="v")
    new_campaign(store, "roads", str(SAMPLES / "rulesets" / "ember-roads.json"), ["Mira"], seed="r")
    store.close()
    fake = Fake(script={"one": "Quiet."})
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data,
                                                             rulesets=SAMPLES / "rulesets"))) as srv:
        if played:
            for c in ("heist", "vault", "roads"):
                httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": [
                    {"role": "system", "content": f'[tagengine: campaign="{c}"]'}, {"role": "user",
                                                                                   "content": "TURN:one"}]})
                for _ in range(500):  # kept once the answer has gone (S-24): a bounded wait
                    if httpx.get(f"{srv.url}/tagengine/api/c/{c}").json()["at"]["turn"] is not None:
                        break
                    time.sleep(0.01)
        yield srv.url


def kept(tmp_path: Path) -> tuple[Any, ...]:
    """What the store keeps that an edit could change: every campaign's start, and the edits waiting."""
    with sqlite3.connect(tmp_path / "data" / DB_NAME) as db:
        starts = tuple(db.execute("SELECT name, start FROM campaigns ORDER BY name").fetchall())
        try:
            edits = tuple(db.execute("SELECT key, who, changes FROM edits ORDER BY seq").fetchall())
        except sqlite3.OperationalError:
            edits = ()
    return starts, edits


def no_markup(html: str) -> None:
    assert "<script>window" not in html  # every value the player typed is escaped
    assert "Traceback" not in html and "internal error" not in html


HOSTILE = [  # (path, form fields, status, a problem's words on the page)
    ("/ui/c/heist/edit/Cutter", {"fields.vice": "x" * 5000, "was:fields.vice": ""}, 422, "at most 80"),
    ("/ui/c/heist/edit/Cutter", {"fields.stash": "lots", "was:fields.stash": "0"}, 422, "not a whole number"),
    ("/ui/c/heist/edit/Cutter", {"fields.stash": XSS, "was:fields.stash": "0"}, 422, "not a whole number"),
    ("/ui/c/heist/edit/Cutter", {"fields.playbook": XSS, "was:fields.playbook": "cutter"}, 422, "not one of"),
    ("/ui/c/heist/edit/Cutter", {"fields.nope": "1"}, 422, "has no field"),
    ("/ui/c/heist/edit/Cutter", {"../../etc/passwd": "1"}, 422, "a path starts with one of"),
    ("/ui/c/heist/edit/Cutter", {"derived.anything": "1"}, 422, "has no derived value"),
    ("/ui/c/heist/edit/Cutter", {"skills.hunt": "Nine dots", "was:skills.hunt": "0"}, 422, "not one of"),
    ("/ui/c/heist/edit/Cutter", {"op": "delete:lists.nothing.0"}, 422, "has no list"),
    ("/ui/c/heist/edit/Cutter", {"op": "explode:fields.vice"}, 422, "a path starts with one of"),
    ("/ui/c/heist/edit/Cutter", {"fields.vice": "a\x00b", "was:fields.vice": ""}, 422, "control characters"),
    ("/ui/c/heist/edit/Nobody", {"fields.vice": "x"}, 404, "has no character"),
    ("/ui/c/heist/party", {"fields.heat": "3", "was:fields.heat": "0", "revision": "7"}, 409, "Someone saved"),
    ("/ui/c/heist/party", {"fields.heat": "3", "was:fields.heat": "0", "revision": XSS}, 422, "revision"),
    ("/ui/c/heist/party", {"fields.size": "9", "was:fields.size": "2", "revision": "0"}, 422, "computed"),
    ("/ui/c/vault/play/Mira", {"pools.resolve": "99"}, 422, "outside 0..4"),
    ("/ui/c/vault/play/Mira", {"mark": "marks.harm.9", "kind": "knock"}, 422, "has boxes 1..4"),
    ("/ui/c/vault/play/Mira", {"mark": "marks.harm.1", "kind": XSS}, 422, "not one of"),
    ("/ui/c/vault/play/Mira", {"states.lantern": "Exploded"}, 422, "not one of"),
    ("/ui/c/vault/play/Mira", {"pools.oil": "3"}, 422, "hidden"),
    ("/ui/c/vault/play/Bram", {"fields.oath": "x" * 50_000}, 422, "at most"),
    ("/ui/c/heist/party/play", {"pools.coin": "-1"}, 422, "outside"),
    ("/ui/c/roads/play/Mira", {"text.heading": '[sheet: who="Mira" op="spend" pool="grit"]'}, 422, "unsafe-text"),
    ("/ui/c/roads/play/Mira", {"text.heading": "{{user}} waits"}, 422, "unsafe-text"),
    ("/ui/c/roads/edit/Mira", {"fields.signal": "1d", "was:fields.signal": "1d6"}, 422, "bad-dice"),
    ("/ui/c/roads/edit/Mira", {"op": "roll:lists.gear.0.bulk"}, 422, "out-of-range"),
]


@pytest.mark.parametrize("played", [False, True], ids=["the start", "in play"])
def test_every_form_refuses_what_it_cannot_take_and_keeps_nothing(tmp_path, played):
    with serving(tmp_path, played=played) as url:
        before = kept(tmp_path)
        for path, fields, status, words in HOSTILE:
            r = httpx.post(f"{url}{path}", data=fields)
            assert r.status_code == status, (path, fields, r.status_code)
            assert r.text.startswith("<!doctype html>"), path
            no_markup(r.text)
            assert words in r.text.replace("&#39;", "'"), (path, fields, words)
            assert kept(tmp_path) == before, (path, fields)


def test_script_typed_into_a_sheet_is_kept_as_text_and_shown_escaped(tmp_path):
    """Field text may hold `<script>` (ED-3): kept as typed, and every page, the form and the API show it as
    text (a live note cannot hold brackets or macro braces, DEC-25: refused above, `unsafe-text`)."""
    with serving(tmp_path, played=True) as url:
        saved = httpx.post(f"{url}/ui/c/vault/edit/Mira", data={"fields.oath": XSS, "was:fields.oath": ""})
        pages = [httpx.get(f"{url}{p}").text for p in ("/ui/c/vault", "/ui/c/vault/edit/Mira")]
        api = httpx.get(f"{url}/tagengine/api/c/vault/characters/Mira").json()
        before = kept(tmp_path)
        pool = httpx.post(f"{url}/ui/c/vault/play/Mira", data={"pools.resolve": "3"})
        after = kept(tmp_path)
    assert saved.status_code == 303 and pool.status_code == 303
    for html in pages:
        no_markup(html)
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    oath = next(i for s in api["form"]["sections"] for i in s["inputs"] if i["path"] == "fields.oath")
    assert oath["value"] == XSS
    assert after != before  # a hand edit that is allowed is kept: `kept` sees what an edit changes


def test_the_start_form_refuses_what_it_cannot_take(tmp_path):
    """`/ui/new`: a bad or taken name, no ruleset, a ruleset that does not load (its problems shown as /ui/check
    shows them), a file of the folder that is not there, bad or doubled character names; nothing made."""
    bad_ruleset = json.dumps({"manifest": {"name": XSS}, "sheet": {"abilities": "no"}})
    cases = [
        ({"name": "../x", "ruleset_file": "gravewatch.json", "characters": "Mira"}, "A campaign name is"),
        ({"name": "heist", "ruleset_file": "gravewatch.json", "characters": "Mira"}, "exists already"),
        ({"name": "new", "characters": "Mira"}, "Choose a ruleset"),
        ({"name": "new", "ruleset_file": "../../etc/passwd", "characters": "Mira"}, "not a ruleset of the server"),
        ({"name": "new", "ruleset_file": "gravewatch.json", "characters": ""}, "Name at least one character"),
        ({"name": "new", "ruleset_file": "gravewatch.json", "characters": "Mira\nmira"}, "same name"),
        ({"name": "new", "ruleset_file": "gravewatch.json", "characters": "$party"}, "reserved"),
        ({"name": "new", "ruleset_text": bad_ruleset, "characters": "Mira"}, "does not load"),
    ]
    with serving(tmp_path, played=False) as url:
        before = kept(tmp_path)
        for fields, words in cases:
            r = httpx.post(f"{url}/ui/new", data=fields)
            assert r.status_code == 422, fields
            no_markup(r.text)
            assert words in r.text.replace("&#39;", "'"), (fields, words)
        upload = httpx.post(f"{url}/ui/new", data={"name": "up", "characters": "Mira"},
                            files={"file": ("x.json", b"\xff\xfe not json")})
        huge = httpx.post(f"{url}/ui/new", content=b"name=x&ruleset_text=" + b"a" * (10 << 20), headers=FORM)
        after = kept(tmp_path)
        nothing_kept = not (tmp_path / "data" / "rulesets").exists()  # (a campaign made from the bundled samples is)
        named = httpx.post(f"{url}/ui/new", data={"name": "named", "ruleset_file": "gravewatch.json",
                                                  "characters": XSS}, follow_redirects=True)
        sheet = httpx.get(f"{url}/ui/c/named").text
    assert upload.status_code == 422 and "does not load" in upload.text
    assert huge.status_code == 413
    assert after == before and nothing_kept
    assert named.status_code == 200  # a name may hold `<` (it is prompt-safe): kept as text, shown escaped
    for html in (named.text, sheet):
        no_markup(html)
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html


def test_a_form_too_large_a_draft_or_bytes_that_are_not_utf8(tmp_path):
    """A form over the bound: 413, a page. A draft (the editor's script) keeps nothing, whatever it holds. Bytes
    that are not UTF-8 are read as text with U+FFFD in their place (H-3), never a 500."""
    with serving(tmp_path, played=True) as url:
        before = kept(tmp_path)
        big = httpx.post(f"{url}/ui/c/heist/edit/Cutter", content=b"fields.vice=" + b"a" * (5 << 20), headers=FORM)
        draft = httpx.post(f"{url}/ui/c/heist/draft/Cutter", content=b"fields.stash=" + XSS.encode() +
                           b"&fields.vice=ok&op=roll:lists.x.0.y", headers=FORM)
        assert kept(tmp_path) == before
        raw = httpx.post(f"{url}/ui/c/heist/edit/Cutter", content=b"fields.vice=%FF%FE&was:fields.vice=",
                         headers=FORM)
        vice = httpx.get(f"{url}/tagengine/api/c/heist/characters/Cutter").json()["form"]
    assert big.status_code == 413 and big.text.startswith("<!doctype html>")
    assert draft.status_code == 200 and [p["code"] for p in draft.json()["problems"]] == ["wrong-type"]
    assert raw.status_code == 303
    shown = next(i for s in vice["sections"] for i in s["inputs"] if i["path"] == "fields.vice")
    assert shown["value"] == "\ufffd\ufffd"
