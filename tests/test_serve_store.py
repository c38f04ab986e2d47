"""Issue 12: long replays off the event loop, and snapshots pruned per campaign (S-19, S-20)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_kit import Fake, heist_store
from test_serve import SCRIPT, ask, client, expected, serving

from conftest import examples
from tagengine._internal.server.limits import THREAD_MIN
from tagengine._internal.server.memory import chain
from tagengine._internal.server.memory import store as store_module
from tagengine._internal.server.memory.chain import Chain
from tagengine._internal.server.memory.snapshots import SnapshotCache
from tagengine._internal.server.memory.store import DB_NAME, Store

TICK = 'The guards stir. [clock: name="Watch" size="100"]'


def long_history(n):
    msgs = [{"role": "system", "content": '[tagengine: campaign="heist"]'}]
    for k in range(n):
        msgs += [{"role": "user", "content": f"go {k}"},
                 {"role": "assistant", "content": f"Step {k}. [clock: name=\"Watch\" tick=\"1\"]"}]
    return [*msgs, {"role": "user", "content": "TURN:tick"}]


def test_a_long_replay_runs_in_a_worker_thread_and_a_short_one_on_the_loop(tmp_path, monkeypatch):
    threads = []
    real = chain.apply_reply

    def spy(rs, state, text):
        threads.append(threading.get_ident())
        return real(rs, state, text)

    monkeypatch.setattr(chain, "apply_reply", spy)
    with serving(tmp_path, Fake({**SCRIPT, "tick": TICK})) as srv:
        c = client(srv)
        ask(c, long_history(THREAD_MIN + 4), False)  # cold store: every reply replayed
        loop = srv.thread.ident
        assert len(threads) == THREAD_MIN + 4 and loop not in threads
        threads.clear()
        ask(c, long_history(THREAD_MIN + 6), False)  # two replies past the known key: on the loop
        assert threads == [loop, loop]


@pytest.fixture
def heist(tmp_path):
    yield from heist_store(tmp_path)


def rows(store, campaign="heist"):
    return {r[0] for r in store.db.execute("SELECT key FROM snapshots WHERE campaign = ?", (campaign,))}


def test_pruning_keeps_the_most_recently_used_snapshots_of_a_campaign(heist):
    store, c = heist
    snapshots = SnapshotCache()
    store.pruned = snapshots.drop_gone  # as the server's context joins them
    ch = Chain(store, snapshots)
    msgs = [{"role": "assistant", "content": f'Step {k}. [clock: name="Watch" size="4"]'} for k in range(30)]
    done = ch.state_of(c, msgs)
    assert isinstance(done, chain.Replayed)
    keys = ch.keys(c, [m["content"] for m in msgs])
    assert rows(store) == set(keys[1:])
    store.put_snapshot("other-campaign-key", "{}", "vault")  # another campaign's are not counted
    assert store.snapshot(keys[1]) is not None  # used again: now the most recent
    assert keys[-1] in snapshots
    store.per_campaign = 10
    assert store.prune("heist") == 20
    assert rows(store) == {keys[1], *keys[-9:]}
    assert rows(store, "vault") == {"other-campaign-key"}
    assert snapshots.keys() and not set(snapshots.keys()) - rows(store)  # memory follows the file
    # a pruned snapshot costs a replay, never a result
    again = ch.state_of(c, msgs[:15])
    assert isinstance(again, chain.Replayed) and again.replayed == 14 and again.state == Chain(
        Store(store.folder / "fresh")).state_of(c, msgs[:15]).state


def test_pruning_runs_as_snapshots_are_written(heist, monkeypatch):
    store, c = heist
    monkeypatch.setattr(store_module, "PRUNE_EVERY", 8)
    store.per_campaign = 12
    Chain(store).state_of(c, [{"role": "assistant", "content": f"Step {k}."} for k in range(100)])
    assert len(rows(store)) <= 12 + 8


def test_a_database_from_before_gets_the_new_columns(tmp_path):
    (tmp_path / "old").mkdir()
    with sqlite3.connect(tmp_path / "old" / DB_NAME) as db:
        db.execute("CREATE TABLE snapshots (key TEXT PRIMARY KEY, state TEXT NOT NULL)")
        db.execute("INSERT INTO snapshots VALUES ('k', '{}')")
    store = Store(tmp_path / "old")
    assert store.snapshot("k") == "{}"
    store.put_snapshot("k2", "{}", "heist")
    assert rows(store) == {"k2"}
    store.close()


def test_long_replays_in_threads_beside_turns_on_the_loop_do_not_cross(tmp_path):
    with serving(tmp_path, Fake({**SCRIPT, "tick": TICK})) as srv:
        ac = openai.AsyncOpenAI(base_url=f"{srv.url}/v1", api_key="k", max_retries=0, timeout=60)

        async def long(n):
            r = await ac.chat.completions.create(model="gpt-4o", messages=long_history(THREAD_MIN + n))
            return r.choices[0].message.content

        async def short():
            r = await ac.chat.completions.create(model="gpt-4o", messages=history_one())
            return r.choices[0].message.content

        async def all_at_once():
            try:
                return await asyncio.gather(*(long(n) for n in range(1, 7)), *(short() for _ in range(6)))
            finally:
                await ac.close()

        got = asyncio.run(all_at_once())
    want_long = [expected("heist", [m["content"] for m in long_history(THREAD_MIN + n) if m["role"] == "assistant"]
                          + [TICK])[0][-1] for n in range(1, 7)]
    assert got[:6] == want_long and got[6:] == [expected("heist", [TICK])[0][0]] * 6


def history_one():
    return [{"role": "system", "content": '[tagengine: campaign="heist"]'}, {"role": "user", "content": "TURN:tick"}]


def test_the_snapshot_cache_holds_the_most_recently_used_within_its_size(heist):
    """SV-4: the states in memory, by chain key: `newest` finds the last key held (never key 0, the start) and
    marks it used; past its size the least recently used goes; `drop_gone` follows the file."""
    _, c = heist
    cache = SnapshotCache(size=3)
    for k in "abc":
        cache.put(k, c.start)
    assert cache.newest(["a", "b", "x"]) == (1, c.start)  # b: now the most recently used
    assert cache.newest(["c", "x"]) is None  # keys[0] is a campaign's start, never looked up
    cache.put("d", c.start)  # a goes: the least recently used
    assert cache.keys() == ["c", "b", "d"] and cache.get("a") is None
    assert cache.get("c") is c.start and cache.keys() == ["c", "b", "d"]  # a page's look moves nothing
    cache.drop_gone(lambda keys: {"b"})
    assert cache.keys() == ["b"]


def test_a_snapshots_text_is_the_canonical_json_of_its_document_whatever_it_holds(heist):
    """The snapshot's text is made of its members' texts, the cards' and the party sheet's kept by their objects:
    byte for byte what `canonical_json(state.to_json())` writes, over turns that change live values only and over
    cards and a party sheet changed in between (text that is not ASCII, quotes and escapes, floats)."""
    from tagengine import apply_reply
    from tagengine._internal.server.memory.campaigns import canonical_json, snapshot_text
    from tagengine._internal.state import from_json

    _, c = heist
    state, seen = c.start, []
    replies = ['[clock: name="Alarm" size="6"]', '[sheet: who="Cutter" op="spend" pool="stress" amount="2"]',
               '[clock: name="Alarm" tick="1"] [check: who="Lurk" skill="prowl"]']
    for n in range(12):
        if n % 4 == 3:  # a player's edit: new card and party objects, the same for the turns after it
            doc = state.to_json()
            doc["gameCharacterCards"]["Cutter"]["fields"]["vice"] = f"Ünïcödé {n} \"q\" \\ \n"
            doc["gamePartySheet"]["fields"]["upgrades"] = f"{n / 3} [x] 1e16 {1e16}"
            state = from_json(c.rs, doc, "test")
        state = apply_reply(c.rs, state, replies[n % 3]).state
        seen.append(snapshot_text(state))
        assert seen[-1] == canonical_json(state.to_json())
    assert sum(f"Ünïcödé {n} " in t for t in seen for n in (3, 7, 11)) == 9  # each edit from its turn on
    assert snapshot_text(state) == seen[-1]  # and again from what was kept


JSON_WITHOUT_FLOATS = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(st.characters(), max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(st.characters(), max_size=6), inner,
                                                                 max_size=4),
    max_leaves=20)


@settings(max_examples=examples(400))
@given(JSON_WITHOUT_FLOATS)
def test_a_snapshots_live_members_are_written_as_canonical_json_writes_them(value):
    """PF-59: the members a turn changes are written by orjson, byte for byte what `canonical_json` writes for
    whatever they can hold: whole numbers (past 64 bits too, which orjson cannot write), text (lone surrogates too,
    which orjson refuses), lists and objects, their keys sorted; no floats, which the state reader refuses."""
    from tagengine._internal.server.memory.campaigns import _live_text, canonical_json

    assert _live_text(value) == canonical_json(value)
