"""Issue 12: the store is a cache (deleting it changes no result, only speed), so a store that cannot write
or read (a full disk, an I/O error) costs speed, never a turn: the answer goes out whole, the fault is
logged, and the next turn replays what the chat app kept (S-33)."""

from __future__ import annotations

import logging
import sqlite3

import httpx
import pytest
from serve_kit import Fake
from test_serve import SCRIPT, ask, client, expected, history, serving

from tagengine._internal.server.memory import store as store_module

CACHE = {"snapshots", "replies", "narrations", "heads"}  # the campaigns stay readable: they are not a cache
WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}


def failing(monkeypatch, actions):
    """Every Store the server opens refuses `actions` on the cache's tables, by SQLite's own authorizer (the
    statement fails as a full disk's or a bad sector's would: a sqlite3.DatabaseError)."""
    real = store_module.Store.__init__

    def opened(self, folder, **kw):
        real(self, folder, **kw)
        self.db.set_authorizer(lambda action, table, *_: sqlite3.SQLITE_DENY if action in actions and table in CACHE
                               else sqlite3.SQLITE_OK)

    monkeypatch.setattr(store_module.Store, "__init__", opened)


def play(tmp_path, stream, got):
    """The next turn of the three, on a new server (its memory empty: what it knows comes from the file)."""
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        got.append(ask(client(srv), history("heist", ["one", "two", "three"][:len(got) + 1], got), stream))
    return got


WANT = expected("heist", [SCRIPT["one"], SCRIPT["two"], SCRIPT["three"]])[0]


@pytest.mark.parametrize("stream", [False, True])
def test_s_33_a_store_that_cannot_write_costs_no_turn(tmp_path, monkeypatch, caplog, stream):
    failing(monkeypatch, WRITES)
    with caplog.at_level(logging.WARNING, "tagengine"):
        with serving(tmp_path, Fake(SCRIPT)) as srv:  # one server: the turns after the first come from memory
            got: list[str] = []
            for _ in range(3):
                got.append(ask(client(srv), history("heist", ["one", "two", "three"][:len(got) + 1], got), stream))
        assert got == WANT
        assert play(tmp_path, stream, got[:2]) == WANT  # a new server: nothing was kept, all replayed
    assert any("cannot keep snapshots" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("stream", [False, True])
def test_s_33_a_store_that_cannot_read_costs_no_turn(tmp_path, monkeypatch, caplog, stream):
    got = play(tmp_path, stream, play(tmp_path, stream, []))  # two turns kept in the file
    failing(monkeypatch, WRITES | {sqlite3.SQLITE_READ})
    with caplog.at_level(logging.WARNING, "tagengine"):
        assert play(tmp_path, stream, got) == WANT  # the file unreadable: replayed from the start
    assert any("cannot read snapshots" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("stream", [False, True])
def test_s_33_a_fault_in_the_work_after_an_answer_never_reaches_the_client(tmp_path, monkeypatch, caplog, stream):
    """Whatever fails once the answer has gone (keeping it, counting it ahead),
    the client's answer is already whole: the fault is logged, and the next turn replays."""
    from tagengine._internal.server.turn import steps as turn_module

    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("a bug")

    monkeypatch.setattr(turn_module, "count_ahead", broken)
    with caplog.at_level(logging.WARNING, "tagengine"):
        got = play(tmp_path, stream, play(tmp_path, stream, []))
        assert play(tmp_path, stream, got) == WANT
    assert len(calls) == 3
    assert sum("failed after its answer had gone" in r.getMessage() for r in caplog.records) == 3
    with httpx.Client(timeout=30, trust_env=False) as h, serving(tmp_path, Fake(SCRIPT)) as srv:
        r = h.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "stream": stream,
                                                           "messages": history("heist", ["one"], [])})
    assert r.status_code == 200 and (r.text.endswith("data: [DONE]\n\n") if stream else r.json()["choices"])


def test_s_33_a_fault_sqlite_rolled_back_itself_is_logged_as_itself(tmp_path, caplog):
    """A full disk or an I/O error mid-batch: SQLite has rolled the transaction back already, so the batch
    does not ROLLBACK again ("no transaction is active" would hide the fault in the log), and none stays open."""
    store = store_module.Store(tmp_path)

    def faulty() -> None:
        store.put_snapshot("k", "{}", "heist")
        store.db.execute("ROLLBACK")  # what SQLite does itself on SQLITE_FULL or SQLITE_IOERR
        raise sqlite3.OperationalError("database or disk is full")

    with caplog.at_level(logging.WARNING, "tagengine"):
        store.writing("snapshots", faulty)
    assert [r.getMessage() for r in caplog.records] == [
        "the store cannot keep snapshots (database or disk is full); the turn goes on, and the next one replays"]
    assert not store.db.in_transaction and store.snapshot("k") is None
    store.close()


def test_s_33_a_batch_that_fails_keeps_the_use_marks_and_they_stay_bounded(tmp_path, monkeypatch):
    """A snapshot's use mark waits for the next batch; a batch that cannot be written keeps the marks for the one
    after (they order the pruning), and while none can be written they stay bounded."""
    store = store_module.Store(tmp_path)
    store.put_snapshot("a", "{}", "heist")
    used = store.db.execute("SELECT used FROM snapshots").fetchone()[0]
    store.touch("a")
    store.db.set_authorizer(lambda action, table, *_: sqlite3.SQLITE_DENY if action in WRITES and table in CACHE
                            else sqlite3.SQLITE_OK)
    store.writing("snapshots", lambda: None)  # the marks' UPDATE is refused: logged, kept
    assert "a" in store._touched
    store.db.set_authorizer(None)
    store.writing("snapshots", lambda: None)
    assert store._touched == {} and store.db.execute("SELECT used FROM snapshots").fetchone()[0] > used
    monkeypatch.setattr(store_module, "SNAPSHOT_USES_HELD", 3)
    for k in "bcde":
        store.touch(k)
    assert list(store._touched) == ["c", "d", "e"]
