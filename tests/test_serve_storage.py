"""Issue 35 item 10: what the data folder keeps is bounded, and an operator can take a campaign out of it.

The pages start at most CAMPAIGNS_KEPT campaigns and keep at most RULESETS_KEPT bytes of uploaded rulesets (each
bound tried at both sides: the last that fits is made, the next refused with a page that says why, nothing
kept of it); `tagengine campaign remove NAME` deletes every row of the campaign in one transaction and its
ruleset file when the data folder keeps it for that campaign only."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from serve_kit import Fake, Running

from conftest import SAMPLES
from tagengine._internal.cli import run
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import CAMPAIGNS_KEPT, RULESETS_KEPT
from tagengine._internal.server.memory.campaigns import RULESETS_FOLDER, new_campaign
from tagengine._internal.server.memory.store import DB_NAME, CampaignRow, Store

RULESET = SAMPLES / "rulesets" / "gravewatch.json"
TABLES = ("campaigns", "snapshots", "heads", "edits")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def rows_of(data: Path, name: str) -> dict[str, int]:
    """How many rows of each table are the campaign `name`'s."""
    with sqlite3.connect(data / DB_NAME) as db:
        column = {"campaigns": "name"}
        return {t: db.execute(f"SELECT count(*) FROM {t} WHERE {column.get(t, 'campaign')} = ?",
                              (name,)).fetchone()[0] for t in TABLES}


def kept_ruleset(data: Path, text: bytes) -> Path:
    """A ruleset as the pages keep an upload: `rulesets/<sha256>.json` in the data folder."""
    path = data / RULESETS_FOLDER / f"{hashlib.sha256(text).hexdigest()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return path


def played(store: Store, name: str) -> None:
    """Rows of every table for the campaign: snapshots, its newest turn, an edit waiting."""
    for n in range(3):
        store.put_snapshot(f"{name}-key{n}", "{}", name)
    store.put_head(name, f"{name}-key2", "[]", 2)
    store.add_edit(name, f"{name}-key2", "Mira", '{"pools.stress": 1}', after=0, keys_kept=64)


def test_campaign_remove_deletes_its_rows_and_the_ruleset_kept_for_it_alone(tmp_path):
    data = tmp_path / "data"
    text = RULESET.read_bytes()
    own = kept_ruleset(data, text)
    shared = kept_ruleset(data, text + b"\n")  # another file: two campaigns use it
    store = Store(data)
    for name, ruleset in (("solo", own), ("pair1", shared), ("pair2", shared), ("outside", RULESET)):
        new_campaign(store, name, str(ruleset), ["Mira"], seed="s")
        played(store, name)
    store.close()

    code, out, err = cli("campaign", "remove", "solo", "--data", str(data))
    assert code == 0, err
    assert "campaign solo removed" in out and "removed too" in out
    assert rows_of(data, "solo") == dict.fromkeys(TABLES, 0)
    assert not own.exists()
    assert rows_of(data, "pair1") == {"campaigns": 1, "snapshots": 3, "heads": 1, "edits": 1}  # others untouched

    code, out, _ = cli("campaign", "remove", "pair1", "--data", str(data))
    assert code == 0 and "kept" in out and shared.exists()  # pair2 uses it still
    code, out, _ = cli("campaign", "remove", "pair2", "--data", str(data))
    assert code == 0 and not shared.exists()  # the last campaign using it: gone with it
    code, out, _ = cli("campaign", "remove", "outside", "--data", str(data))
    assert code == 0 and "kept" in out and RULESET.exists()  # a file from outside the data folder: never touched
    assert cli("campaign", "list", "--data", str(data))[1] == ""


def test_removing_an_unknown_campaign_says_so_and_removes_nothing(tmp_path):
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(RULESET), ["Mira"], seed="s")
    played(store, "heist")
    store.close()
    code, out, err = cli("campaign", "remove", "nope", "--data", str(data))
    assert code == 1 and out == ""
    assert err == "tagengine campaign remove: unknown campaign 'nope'; choose one of heist\n"
    assert rows_of(data, "heist") == {"campaigns": 1, "snapshots": 3, "heads": 1, "edits": 1}


@contextmanager
def pages(data: Path) -> Iterator[httpx.Client]:
    fake = Fake(script={})
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data))) as srv, \
            httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


def start(c: httpx.Client, name: str, ruleset: bytes) -> httpx.Response:
    return c.post("/ui/new", data={"name": name, "characters": "Mira"}, files={"file": ("r.json", ruleset)})


def test_the_pages_start_campaigns_up_to_the_bound_and_no_more(tmp_path):
    """CAMPAIGNS_KEPT - 1 campaigns kept: one more is started; the next is refused (422, the page says why and
    how to free one), its upload not kept; a campaign removed makes room again."""
    data = tmp_path / "data"
    store = Store(data)
    for n in range(CAMPAIGNS_KEPT - 1):
        store.add_campaign(CampaignRow(f"c{n}", str(RULESET), "0" * 64, "{}", "Mira"))
    store.close()
    text = RULESET.read_bytes()
    with pages(data) as c:
        made = start(c, "last", text)
        assert made.status_code == 303, made.text[-2000:]
        refused = start(c, "past", text + b" ")
        assert refused.status_code == 422
        assert f"keeps {CAMPAIGNS_KEPT} campaigns at most" in refused.text
        assert "tagengine campaign remove NAME" in refused.text
        assert len(list((data / RULESETS_FOLDER).glob("*.json"))) == 1  # the refused one's upload is not kept
        assert cli("campaign", "remove", "c0", "--data", str(data))[0] == 0
        assert start(c, "past", text + b" ").status_code == 303


def test_the_pages_keep_uploaded_rulesets_up_to_the_bound_and_no_more(tmp_path):
    """The data folder's rulesets at RULESETS_KEPT bytes less an upload: that upload is kept; one byte more is
    refused (422, nothing written). A filler file stands for the rest (sparse: no disk is used)."""
    data = tmp_path / "data"
    folder = data / RULESETS_FOLDER
    folder.mkdir(parents=True)
    text = RULESET.read_bytes()
    with (folder / "filler.json").open("wb") as f:
        f.truncate(RULESETS_KEPT - len(text))
    Store(data).close()
    with pages(data) as c:
        assert start(c, "fits", text).status_code == 303  # exactly RULESETS_KEPT bytes now
        assert start(c, "again", text).status_code == 303  # the same file again: nothing more is kept
        refused = start(c, "past", text + b" ")  # one byte more would pass the bound
        assert refused.status_code == 422 and "MiB of rulesets in its data folder at most" in refused.text
        assert len(list(folder.glob("*.json"))) == 2
        (folder / "filler.json").unlink()
        assert start(c, "past", text + b" ").status_code == 303
