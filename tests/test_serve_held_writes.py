"""A server's store holds its cache writes and writes them together (store.py, PF-55): a full batch, whatever uses
the file next, the server's flush a moment later and its close each write them, in the order made, in one
transaction; a player's edit is never held; a fault drops what was held, logged, and the store goes on (S-33)."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest
from serve_kit import Fake
from test_serve import SCRIPT, ask, client, history, serving

from tagengine._internal.server import app as app_module
from tagengine._internal.server.limits import WRITES_HELD, WRITES_HELD_CHARS, WRITES_HELD_SECONDS
from tagengine._internal.server.memory.store import DB_NAME, CampaignRow, Store


def in_file(path: Path, sql: str = "SELECT key FROM snapshots ORDER BY key") -> list[str]:
    """What another process reads in the file now."""
    with sqlite3.connect(path) as other:
        return [str(r[0]) for r in other.execute(sql)]


def traced(store: Store) -> list[str]:
    """The statements the store runs from now on, their first word each (BEGIN, INSERT, COMMIT...)."""
    seen: list[str] = []
    store.db.set_trace_callback(lambda sql: seen.append(sql.split()[0].upper()))
    return seen


def snapshot(store: Store, key: str, campaign: str = "heist", text: str = "{}") -> None:
    store.writing("snapshots", lambda: store.put_snapshot(key, text, campaign), chars=len(text))


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path, writes_held=3)
    yield s
    s.close()


def test_held_writes_reach_the_file_together_once_the_batch_is_full(store):
    statements = traced(store)
    snapshot(store, "a")
    snapshot(store, "b")
    assert store.held == 2 and in_file(store.path) == [] and statements == []  # one short of the batch
    snapshot(store, "c")
    assert store.held == 0 and in_file(store.path) == ["a", "b", "c"]
    assert statements == ["BEGIN", "INSERT", "INSERT", "INSERT", "COMMIT"]  # one transaction


def test_held_writes_reach_the_file_once_they_hold_more_than_their_characters(store):
    """Two writes, one short of the batch of three: at WRITES_HELD_CHARS characters held they wait, one more and
    both are written, so a batch of large snapshots is never large."""
    half = WRITES_HELD_CHARS // 2
    snapshot(store, "a", text="x" * half)
    snapshot(store, "b", text="x" * half)
    assert store.held == 2 and in_file(store.path) == []
    store.flush()
    snapshot(store, "c", text="x" * half)
    snapshot(store, "d", text="x" * (half + 1))
    assert store.held == 0 and in_file(store.path) == ["a", "b", "c", "d"]


def test_a_store_that_holds_nothing_writes_each_at_once(tmp_path):
    store = Store(tmp_path)  # as a command opens it
    try:
        statements = traced(store)
        snapshot(store, "a")
        assert store.held == 0 and in_file(store.path) == ["a"] and statements == ["BEGIN", "INSERT", "COMMIT"]
    finally:
        store.close()


def test_whatever_uses_the_file_next_sees_the_held_writes(store):
    snapshot(store, "a")
    assert store.snapshot("a") == "{}" and store.held == 0  # a read
    store.put_head("heist", "a", "[]")
    assert store.head("heist") == ("a", 1, "[]")
    assert in_file(store.path, "SELECT key FROM heads") == ["a"]


def test_a_campaign_removed_after_its_snapshots_were_held_takes_them_with_it(store):
    store.add_campaign(CampaignRow("heist", "/r.json", "d", "{}", "Cutter"))
    snapshot(store, "a")
    snapshot(store, "b", campaign="other")
    store.remove_campaign("heist")  # the held writes first, then the removal: no row of it comes back after
    assert in_file(store.path) == ["b"] and store.held == 0


def test_a_players_edit_is_written_at_once_after_what_was_held(store):
    statements = traced(store)
    snapshot(store, "a")
    store.add_edit("heist", "a", "Cutter", '{"pools.stress": 1}', after=0, keys_kept=8)
    assert in_file(store.path, "SELECT key FROM edits") == ["a"] and in_file(store.path) == ["a"]
    first_commit = statements.index("COMMIT")
    assert statements[:first_commit + 1] == ["BEGIN", "INSERT", "COMMIT"]  # the held snapshot, on its own
    assert statements[first_commit + 1] == "BEGIN" and statements[-1] == "COMMIT"  # then the edit's


def test_a_held_head_is_replaced_by_the_campaigns_newer_one(store):
    statements = traced(store)
    store.put_head("heist", "k1", "[]", 1)
    store.put_head("vault", "v1", "[]", 1)
    store.put_head("heist", "k2", "[]", 2)
    assert store.held == 2  # one head a campaign
    store.flush()
    assert statements.count("INSERT") == 2
    assert in_file(store.path, "SELECT campaign || ' ' || key FROM heads ORDER BY campaign") == ["heist k2", "vault v1"]


def test_close_writes_what_is_held(tmp_path):
    store = Store(tmp_path, writes_held=WRITES_HELD)
    snapshot(store, "a")
    assert in_file(store.path) == []
    store.close()
    assert in_file(tmp_path / DB_NAME) == ["a"]


def test_a_fault_drops_the_held_writes_logged_and_the_store_goes_on(store, caplog):
    def refused() -> None:
        raise sqlite3.OperationalError("database or disk is full")

    snapshot(store, "a")
    store.writing("snapshots", refused)
    with caplog.at_level(logging.WARNING, logger="tagengine.serve"):
        store.flush()
    assert "the store cannot keep snapshots (database or disk is full)" in caplog.text
    assert store.held == 0 and in_file(store.path) == []  # one transaction: nothing of it is half kept
    snapshot(store, "b")
    store.flush()
    assert in_file(store.path) == ["b"]


def test_a_write_held_inside_a_transaction_waits_for_its_end(store):
    with store.batch():
        snapshot(store, "a")
        store.flush()  # not inside another transaction
        assert store.held == 1
    assert store.snapshot("a") == "{}"


def served_snapshots(tmp_path: Path, wait: float) -> tuple[list[str], list[str]]:
    """A turn played on a served app: the snapshots in the file while it still runs (after waiting up to `wait`
    seconds for one), and once it has stopped."""
    data = tmp_path / "data"
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        ask(client(srv), history("heist", ["one"], []), False)
        deadline = time.monotonic() + wait
        while not (running := in_file(data / DB_NAME)) and time.monotonic() < deadline:
            time.sleep(0.05)
    return running, in_file(data / DB_NAME)


def test_a_served_turns_snapshot_reaches_the_file_while_the_server_runs(tmp_path):
    running, stopped = served_snapshots(tmp_path, 10 * WRITES_HELD_SECONDS)
    assert len(running) == 1 and stopped == running and WRITES_HELD_SECONDS <= 1


def test_a_server_that_stops_writes_what_it_held(tmp_path, monkeypatch):
    monkeypatch.setattr(app_module, "WRITES_HELD_SECONDS", 3600)  # its flush never comes while it runs
    running, stopped = served_snapshots(tmp_path, 3 * WRITES_HELD_SECONDS)
    assert running == [] and len(stopped) == 1
