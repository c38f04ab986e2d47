"""The players' edits waiting for the next reply, by chain key (decisions ED-6, ED-14..ED-18).

An edit checked at a point of the game (`points.py`) waits in the store at that point's chain key, in the order
made, kept across a restart and bounded per campaign. The next reply from that key opens with its receipts
(`opening.py`), so from then on the chat holds the edit and any replay of the chat makes it. A regenerated reply
or a swipe starts from the same key and opens with the same receipts; a history that no longer reaches the key
never meets them, and they are dropped from the store with the oldest keys.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...commands.edit import PlayerEdit, Receipted, decode_changes, edit_receipts, encode_changes
from ...ruleset import Ruleset
from ...state import GameState
from ..limits import EDIT_KEYS, EDIT_STATES_HELD
from ..memory.store import Store

log = logging.getLogger("tagengine.serve")


@dataclass(frozen=True, slots=True)
class Waiting:
    """The edits waiting at one chain key, in the order made; `last` numbers the newest (0: none), which the
    pages' version and the memo follow."""

    edits: tuple[PlayerEdit, ...] = ()
    last: int = 0


class PendingEdits:
    """The edits waiting for the next reply, by chain key, in the store. Unlike the snapshots (a cache), they are
    the players' own: a write that fails raises (the player is told), and every write is one transaction. Which
    keys have edits is also held in memory, so a turn at a key with none reads nothing."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._keys, self._seq = store.edit_keys()
        self._memo: dict[tuple[str, int], tuple[GameState, Receipted]] = {}

    def has(self, key: str) -> bool:
        return key in self._keys

    def waiting(self, key: str) -> Waiting:
        """The edits waiting at `key` (none when the store cannot be read: logged, S-33)."""
        if key not in self._keys:
            return Waiting()
        rows = self.store.edits_at(key)
        edits = []
        for _, who, text in rows:
            try:
                edits.append(PlayerEdit(who, tuple(decode_changes(text))))
            except UnicodeDecodeError:  # written by encode_changes: never; a file edited by hand is skipped
                log.warning("an edit waiting at %s cannot be read; it is left out", key[:16])
        return Waiting(tuple(edits), rows[-1][0] if rows else 0)

    def add(self, campaign: str, key: str, edit: PlayerEdit) -> None:
        """Keep `edit` waiting at `key`, after those there; the campaign's oldest keys past EDIT_KEYS are dropped
        (a history that went back past them will not reach them). Raises sqlite3.Error when the store cannot
        keep it."""
        seq, old = self.store.add_edit(campaign, key, edit.who, encode_changes(edit.changes), after=self._seq,
                                       keys_kept=EDIT_KEYS)
        self._seq = seq
        self._keys.add(key)
        self._keys.difference_update(old)

    def made(self, rs: Ruleset, base: GameState, key: str, waiting: Waiting) -> Receipted:
        """`edit_receipts` of the edits waiting at `key`, made on `base` (the state there), remembered for the
        next look (a page, then the turn)."""
        if not waiting.edits:
            return Receipted("", base)
        hit = self._memo.get((key, waiting.last))
        if hit is not None and hit[0] is base:
            return hit[1]
        made = edit_receipts(rs, base, waiting.edits)
        if len(self._memo) >= EDIT_STATES_HELD:
            self._memo.pop(next(iter(self._memo)))
        self._memo[(key, waiting.last)] = (base, made)
        return made
