"""ED-23: a server's long-lived objects (its imports, each loaded ruleset) are frozen out of the collector's full
passes, and what an earlier freeze kept is still collected when a campaign is loaded again."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from conftest import SAMPLES
from tagengine._internal.server.limits import RULESET_LOOK_SECONDS
from tagengine._internal.server.memory import campaigns as campaigns_module
from tagengine._internal.server.memory.campaigns import Campaigns, new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.runtime.heap import freeze_long_lived


class Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    freed = 0

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        Cycle.freed += 1


def test_freezing_keeps_out_what_lives_and_collects_what_died_since():
    try:
        Cycle.freed = 0
        Cycle()  # garbage already: collected before the freeze
        freeze_long_lived()
        assert Cycle.freed == 1 and gc.get_freeze_count() > 0
        kept = [Cycle()]
        freeze_long_lived()  # `kept` lives: frozen with the rest
        assert Cycle.freed == 1
        kept.clear()  # now it is garbage, frozen: a full pass does not see it...
        gc.collect()
        assert Cycle.freed == 1
        freeze_long_lived()  # ...nor a freeze that replaced nothing (ED-24: no pass over the frozen heap)...
        assert Cycle.freed == 1
        freeze_long_lived(replaced=True)  # ...the freeze after a replacement puts the frozen back, collects first
        assert Cycle.freed == 2
    finally:
        gc.unfreeze()


@pytest.fixture
def heist_file(tmp_path, monkeypatch):
    """A store with the campaign `heist` of a ruleset file of its own, and the clock its campaigns look at the file by
    (`clock[0]`, seconds)."""
    clock = [1000.0]
    monkeypatch.setattr(campaigns_module, "monotonic", lambda: clock[0])
    ruleset = tmp_path / "r.json"
    ruleset.write_text((SAMPLES / "rulesets" / "blades-like.json").read_text())
    store = Store(tmp_path / "data")
    try:
        new_campaign(store, "heist", str(ruleset), ["Cutter"])
        yield store, ruleset, clock
    finally:
        store.close()


def edit_name(ruleset: Path) -> None:
    """The ruleset file changed on disk: its name."""
    doc = json.loads(ruleset.read_text())
    doc["manifest"]["name"] += " (edited)"
    ruleset.write_text(json.dumps(doc))


def test_loading_a_campaign_freezes_the_heap_with_its_ruleset(heist_file):
    store, ruleset, clock = heist_file
    calls: list[bool] = []
    campaigns = Campaigns(store, loaded=calls.append)
    c = campaigns.get("heist")
    assert campaigns.get("heist") is c and calls == [False]  # loaded once, kept; nothing replaced
    edit_name(ruleset)  # the file changed: loaded again, the old one let go (ED-24)
    clock[0] += RULESET_LOOK_SECONDS
    c2 = campaigns.get("heist")
    assert c2 is not c and calls == [False, True]
    assert campaigns.set_start("heist", c2.start)  # its start made again: read again, the old one let go
    assert campaigns.get("heist") is not c2 and calls == [False, True, True]


def test_the_server_freezes_once_started(tmp_path):
    import asyncio

    from tagengine._internal.server.app import Options, make_app

    app = make_app(Options(upstream="demo", data=tmp_path / "data"))

    async def start_and_stop() -> int:
        async with app.router.lifespan_context(app):
            return gc.get_freeze_count()

    try:
        gc.unfreeze()
        assert asyncio.run(start_and_stop()) > 0
    finally:
        gc.unfreeze()


def test_pf_61_a_changed_ruleset_file_is_seen_once_ruleset_look_seconds_have_passed(heist_file):
    """PF-61: a campaign's ruleset file is looked at (a stat) once per RULESET_LOOK_SECONDS, not on every request: a
    file changed on disk is loaded again at the first request after that, not before (both sides of it)."""
    store, ruleset, clock = heist_file
    campaigns = Campaigns(store)
    c = campaigns.get("heist")
    edit_name(ruleset)
    clock[0] += RULESET_LOOK_SECONDS - 0.001
    assert campaigns.get("heist") is c  # looked at too recently
    clock[0] += 0.001
    edited = campaigns.get("heist")
    assert edited is not c and edited.rs.name.endswith(" (edited)")
    clock[0] += RULESET_LOOK_SECONDS
    assert campaigns.get("heist") is edited  # looked at again, unchanged: kept
