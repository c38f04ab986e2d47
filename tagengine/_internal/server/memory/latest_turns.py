"""What the pages under /ui/ read of the chat turns: each completed reply's chain key and receipts
(kept in the store, so the sheet survives a restart) and the last prompt sent upstream per campaign (kept in
memory). The chat turn calls it at two points (turn.py) and nothing else changes for it."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ...commands import Applied
from ...errors import TagengineError
from ...prompt import Budget
from ...prompt.build import Prompt
from ...records import frozen
from ...state import GameState, from_json
from .campaigns import Campaign
from .snapshots import SnapshotCache
from .store import Store

log = logging.getLogger("tagengine.serve")


def turn_number(history: Sequence[Mapping[str, str]], replies: int) -> int:
    """The turn a chat is at whose chain holds `replies` replies: those after the player's first message, so a
    regenerate or a swipe keeps its number and a greeting that opens the chat is no turn (STX-8)."""
    opening = 0
    for m in history:
        if m["role"] == "user":
            break
        opening += m["role"] == "assistant"
    return max(0, replies - opening)


@frozen
class Sent:
    prompt: Prompt
    budget: Budget


@frozen
class Newest:
    """What the pages show of a campaign: the state after the last reply handled and its chain key (None
    before any turn: the campaign's start), its turn (the replies in its chain) and receipts, and a note when the
    snapshot could not be read (then the state is the start, and `gone` is true)."""

    key: str | None
    state: GameState
    turn: int | None
    receipts: list[dict[str, Any]] | None
    note: str | None
    gone: bool = False


class Latest:
    """The newest chain head per campaign (the store's `heads`) and the last prompt sent (memory)."""

    def __init__(self, store: Store, snapshots: SnapshotCache) -> None:
        self.store = store
        self.snapshots = snapshots
        self.prompts: dict[str, Sent] = {}

    def prompt_sent(self, campaign: str, prompt: Prompt, budget: Budget) -> None:
        self.prompts[campaign] = Sent(prompt, budget)

    def reply_done(self, campaign: str, key: str, applied: Applied, turn: int) -> None:
        """A reply is complete and its snapshot kept under `key`: the sheet page shows it from now on, as `turn`
        (the replies in its chain, STX-8)."""
        # ASCII-escaped: a receipt may quote a lone surrogate (a reply's text that was not UTF-8), which SQLite
        # cannot store as text; made when the head is written (store.py holds it, PF-55)
        receipts = applied.receipts
        self.store.put_head(campaign, key, lambda: json.dumps([r.to_json() for r in receipts]), turn)

    def version(self, campaign: str) -> str:
        head = self.store.head(campaign)
        return "0" if head is None else f"{head[1]}-{head[0][:16]}"

    def newest(self, c: Campaign) -> Newest:
        """The state after the last reply handled, with its chain key (the players' edits wait there,
        server/edits/points.py), turn count and receipts; the campaign's start before any turn, or when the snapshot is
        gone (then `gone`, and a note says so)."""
        head = self.store.head(c.name)
        if head is None:
            return Newest(None, c.start, None, None, "No turn has been played yet: this is the campaign's start.")
        key, turn, receipts = head
        state = self.snapshots.get(key)
        if state is None:
            raw = self.store.snapshot(key)
            try:
                state = None if raw is None else from_json(c.rs, json.loads(raw), "snapshot")
            except (TagengineError, ValueError) as e:
                log.warning("campaign %s: the last snapshot cannot be read: %s", c.name, e)
        if state is None:
            return Newest(key, c.start, turn, None, "The last turn's snapshot is gone from the store: this is the "
                          "start.", gone=True)
        return Newest(key, state, turn, json.loads(receipts), None)
