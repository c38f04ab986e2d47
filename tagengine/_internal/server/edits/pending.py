"""The players' edits waiting for the next reply, by chain key (decisions ED-6, ED-14..ED-18).

An edit checked at a point of the game (`points.py`) waits in the store at that point's chain key, in the order
made, kept across a restart and bounded per campaign. The next reply from that key opens with its receipts
(`opening.py`), so from then on the chat holds the edit and any replay of the chat makes it. A regenerated reply
or a swipe starts from the same key and opens with the same receipts; a history that no longer reaches the key
never meets them, and they are dropped from the store with the oldest keys.

Chats are told apart by their messages, and where two chats hold the same ones (two new chats from one card,
each with its greeting only) by the id a request may give (`X-Tagengine-Chat`, or `chat` in a JSON API body;
the SillyTavern extension sends SillyTavern's chat id): an edit made with an id waits for that chat only, one
made without waits for any chat at its key, and a request without an id sees every edit at its key (ED-25).
An edit made while a reply from its key is being written is carried to the key after that reply, so the next
reply opens with it (ED-26); and one made after a reply that the chat then replaced (a regenerate, a swipe, the
reply deleted) waits for the reply that replaces it: an edit remembers the key before the reply it was made after,
and a reply from that key opens with it too (ED-28).
"""

from __future__ import annotations

import logging

from ...commands.edit import PlayerEdit, Receipted, decode_changes, edit_receipts, encode_changes
from ...records import frozen
from ...ruleset import Ruleset
from ...state import GameState
from ..limits import EDIT_KEYS, EDIT_STATES_HELD
from ..memory.store import Store

log = logging.getLogger("tagengine.serve")


@frozen(slots=True)
class Waiting:
    """The edits waiting at one chain key, in the order made; `last` numbers the newest (0: none), which the
    pages' version and the memo follow."""

    edits: tuple[PlayerEdit, ...] = ()
    last: int = 0


def sees(chat: str | None, made_for: str) -> bool:
    """Whether a request naming `chat` (None: it names none) sees an edit made for `made_for` ("": any chat)."""
    return chat is None or not made_for or made_for == chat


class PendingEdits:
    """The edits waiting for the next reply, by chain key, in the store. Unlike the snapshots (a cache), they are
    the players' own: a write that fails raises (the player is told), and every write is one transaction. Which
    keys have edits is also held in memory, so a turn at a key with none reads nothing."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._keys, self._parents, self._seq = store.edit_keys()
        self._memo: dict[tuple[str, str | None, int], tuple[GameState, Receipted]] = {}

    def has(self, key: str) -> bool:
        return key in self._keys or key in self._parents

    def waiting(self, key: str, chat: str | None = None) -> Waiting:
        """The edits waiting at `key` that the chat `chat` sees (none when the store cannot be read: logged,
        S-33)."""
        if not self.has(key):
            return Waiting()
        rows = [r for r in self.store.edits_at(key) if sees(chat, r[3])] if key in self._keys else []
        if key in self._parents:  # made after a reply from here that the chat no longer holds (ED-28)
            rows += [r[1:] for r in self.store.edits_after(key) if r[0] != key and sees(chat, r[4])]
            rows.sort(key=lambda r: r[0])
        edits = []
        for _, who, text, _ in rows:
            try:
                edits.append(PlayerEdit(who, tuple(decode_changes(text))))
            except UnicodeDecodeError:  # written by encode_changes: never; a file edited by hand is skipped
                log.warning("an edit waiting at %s cannot be read; it is left out", key[:16])
        return Waiting(tuple(edits), rows[-1][0] if rows else 0)

    def add(self, campaign: str, key: str, edit: PlayerEdit, chat: str | None = None,
            parent: str | None = None) -> None:
        """Keep `edit` waiting at `key` for the chat `chat` (None: any), made after the reply from `parent` (None:
        not known), after those there; the campaign's oldest keys past EDIT_KEYS are dropped (a history that went
        back past them will not reach them). Raises sqlite3.Error when the store cannot keep it."""
        self._added(*self.store.add_edit(campaign, key, edit.who, encode_changes(edit.changes), chat=chat or "",
                                         parent=parent or "", after=self._seq, keys_kept=EDIT_KEYS), key, parent)

    def _added(self, seq: int, dropped: list[str], key: str, parent: str | None = None) -> None:
        self._seq = seq
        self._keys.add(key)
        self._keys.difference_update(dropped)
        if parent:
            self._parents.add(parent)  # a parent whose edits were dropped reads none: the store is the truth

    def carry(self, campaign: str, key: str, to: str, chat: str | None, after: int) -> int:
        """The edits the chat `chat` sees at `key`, made after the one numbered `after` (while a reply from `key`
        was being written, which did not open with them), kept waiting at `to` too, the key after that reply, each
        for the chat it was made for: the next reply opens with them, and a reply from `key` made again (a
        regenerate, a swipe) still does. How many were carried. Raises sqlite3.Error when the store cannot keep
        them."""
        if key not in self._keys or key == to:
            return 0
        late = [r for r in self.store.edits_at(key) if r[0] > after and sees(chat, r[3])]
        for _, who, changes, made_for in late:  # no parent: the reply from `key` made again meets them at `key`
            self._added(*self.store.add_edit(campaign, to, who, changes, chat=made_for, after=self._seq,
                                             keys_kept=EDIT_KEYS), to)
        return len(late)

    def made(self, rs: Ruleset, base: GameState, key: str, waiting: Waiting, chat: str | None = None) -> Receipted:
        """`edit_receipts` of the edits waiting at `key` for `chat`, made on `base` (the state there), remembered
        for the next look (a page, then the turn)."""
        if not waiting.edits:
            return Receipted("", base)
        hit = self._memo.get((key, chat, waiting.last))
        if hit is not None and hit[0] is base:
            return hit[1]
        made = edit_receipts(rs, base, waiting.edits)
        if len(self._memo) >= EDIT_STATES_HELD:
            self._memo.pop(next(iter(self._memo)))
        self._memo[(key, chat, waiting.last)] = (base, made)
        return made
