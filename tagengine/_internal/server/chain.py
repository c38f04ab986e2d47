"""State from the history the chat app sends: a hash chain over the replies, the store as a cache.

Key 0 hashes the campaign, the ruleset's digest and the start state; each assistant message extends the
key with its text as stored. The newest key the store knows gives a snapshot; the replies after it are
replayed with apply_reply (exact, DEC-5). Regenerate, swipes, deletes and edits need no chat id: the
history they leave is the game. A replay whose receipts come out different from the stored ones (in
a reply that has receipts) means the history does not start where the campaign starts (the chat app
dropped messages, or a reply was edited): the state is still the one the history gives, and
`Replayed.consistent` says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..commands import apply_reply
from ..state import GameState, from_json
from .campaigns import Campaign, canonical
from .store import Store

log = logging.getLogger("tagengine.serve")
RECENT_MAX = 4096  # snapshots a store keeps in memory as GameState objects, the least recently used dropped
_RECEIPT = re.compile(r'\bresult\s*=\s*"')


def first_key(c: Campaign) -> str:
    return _hash(f"tagengine.chain/1\0{c.name}\0{c.digest}\0{c.start_json}")


def next_key(key: str, reply: str) -> str:
    return _hash(f"{key}\0{reply}")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Replayed:
    state: GameState  # after the last assistant message of the history
    key: str  # its chain key: the next reply's key is next_key(key, reply)
    replayed: int  # replies applied (the rest came from the store)
    consistent: bool  # every replayed reply's receipts came out as stored


def state_of(c: Campaign, store: Store, messages: Sequence[Mapping[str, str]]) -> Replayed:
    """The state after `messages` (role/content dicts). Writes the snapshots it computes."""
    keys = [first_key(c)]
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    for text in replies:
        keys.append(next_key(keys[-1], text))
    state, start = c.start, 0
    mem = store.recent
    recent = next((i for i in range(len(keys) - 1, 0, -1) if keys[i] in mem), None)
    if recent is not None:  # the same state object as last time: the sheet views' caches stay warm
        state, start = mem[keys[recent]], recent
        mem.move_to_end(keys[recent])
    else:
        hit = store.known(keys[1:])
        raw = store.snapshot(hit) if hit is not None else None
        if hit is not None and raw is not None:
            state, start = from_json(c.rs, json.loads(raw), "snapshot"), keys.index(hit)
    consistent = True
    for i in range(start, len(replies)):
        applied = apply_reply(c.rs, state, replies[i])
        if applied.text != replies[i] and _RECEIPT.search(replies[i]):  # a reply without receipts says nothing
            consistent = False
        state = applied.state
        store.put_snapshot(keys[i + 1], canonical(state.to_json()))
    _keep(store, keys[-1], state)
    if not consistent:
        log.warning("campaign %s: the history's receipts do not match a replay from the campaign's start "
                    "(messages dropped by the chat app, or an edited reply); the state is the replay's", c.name)
    return Replayed(state, keys[-1], len(replies) - start, consistent)


def remember(c: Campaign, store: Store, key: str, reply: str, state: GameState) -> str:
    """Keep the snapshot after a new reply (its text as the chat app will store it); its key."""
    new = next_key(key, reply)
    store.put_snapshot(new, canonical(state.to_json()))
    _keep(store, new, state)
    return new


def _keep(store: Store, key: str, state: GameState) -> None:
    store.recent[key] = state
    store.recent.move_to_end(key)
    while len(store.recent) > RECENT_MAX:
        store.recent.popitem(last=False)
