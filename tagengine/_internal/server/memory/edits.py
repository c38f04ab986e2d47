"""The players' edits in the server (issue 27 item 3; docs/editor.md, decisions ED-6, ED-14..ED-18).

An edit made on the pages or through the JSON API is checked as the editor checks it (`edit_sheet`,
`edit_party`) against the state at a point of the game (`Point`): the campaign's newest reply (the pages,
`newest_point`), or the chat history a client sends (the API's `messages`, `history_point`). It then waits in
the store at that point's chain key, in the order made (`PendingEdits`: the `edits` table, kept across a
restart, bounded per campaign), and the state there is shown with it. The next reply from that key opens with
its receipts (`edit_opening`, the turn's step `open_with_edits`), so from then on the chat holds the edit and
any replay of the chat makes it. A regenerated reply or a swipe starts from the same key and opens with the
same receipts; a history that no longer reaches the key never meets them, and they are dropped from the store
with the oldest keys.

Before a campaign's first reply there is no chat to hold an edit: an edit at its first key (the sheets a player
fills in after starting a campaign on the pages) makes the campaign's start again (`Campaigns.set_start`), as
`campaign new --state` would have.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...commands import apply_reply
from ...commands.edit import PlayerEdit, Receipted, decode_changes, edit_receipts, encode_changes
from ...commands.sheet_edits import Changes, Edited, edit_party, edit_sheet
from ...errors import Problem
from ...ruleset import Ruleset
from ...state import GameState
from ..errors import Refused
from ..turn.request import messages_of
from ..wire.chat_completions import delta_content, first_choice, is_error_event, set_delta_content
from ..wire.json_codec import dumps, loads_or_none
from ..wire.sse import is_done
from .campaigns import Campaign
from .chain import Replayed, first_key
from .latest_turns import Newest
from .store import Store

if TYPE_CHECKING:  # context.py imports this module
    from ..context import ServerContext

log = logging.getLogger("tagengine.serve")
MAX_KEYS = 64  # chain keys of one campaign with edits waiting: the oldest key's edits go with the 65th
MAX_WAITING = 200  # edits waiting at one key (each of at most 1,000 changes): play a turn to make room
MEMO_SIZE = 64  # states with their waiting edits made, held in memory (a page and a turn share them)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS edits (key TEXT NOT NULL, seq INTEGER NOT NULL, campaign TEXT NOT NULL, who TEXT,
                                  changes TEXT NOT NULL, PRIMARY KEY (key, seq));
CREATE INDEX IF NOT EXISTS edits_campaign ON edits (campaign, seq);
"""


@dataclass(frozen=True, slots=True)
class Waiting:
    """The edits waiting at one chain key, in the order made; `last` numbers the newest (0: none), which the
    pages' version and the memo follow."""

    edits: tuple[PlayerEdit, ...] = ()
    last: int = 0


class PendingEdits:
    """The edits waiting for the next reply, by chain key, in the store's `edits` table. Unlike the snapshots
    (a cache), they are the players' own: a write that fails raises (the player is told), and every write is
    one transaction. Which keys have edits is also held in memory, so a turn at a key with none reads nothing."""

    def __init__(self, store: Store) -> None:
        self.store = store
        with store.lock:
            store.db.executescript(_SCHEMA)
            self._keys = {str(r[0]) for r in store.db.execute("SELECT DISTINCT key FROM edits")}
            self._seq = int(store.db.execute("SELECT coalesce(max(seq), 0) FROM edits").fetchone()[0])
        self._memo: dict[tuple[str, int], tuple[GameState, Receipted]] = {}

    def has(self, key: str) -> bool:
        return key in self._keys

    def waiting(self, key: str) -> Waiting:
        """The edits waiting at `key` (none when the store cannot be read: logged, S-33)."""
        if key not in self._keys:
            return Waiting()
        rows: list[Any] = []
        with self.store.reading("the players' edits"):
            rows = self.store.db.execute("SELECT seq, who, changes FROM edits WHERE key = ? ORDER BY seq",
                                         (key,)).fetchall()
        edits = []
        for _, who, text in rows:
            try:
                edits.append(PlayerEdit(who, tuple(decode_changes(text))))
            except UnicodeDecodeError:  # written by encode_changes: never; a file edited by hand is skipped
                log.warning("an edit waiting at %s cannot be read; it is left out", key[:16])
        return Waiting(tuple(edits), int(rows[-1][0]) if rows else 0)

    def add(self, campaign: str, key: str, edit: PlayerEdit) -> None:
        """Keep `edit` waiting at `key`, after those there; the campaign's oldest keys past MAX_KEYS are dropped
        (a history that went back past them will not reach them). Raises sqlite3.Error when the store cannot
        keep it."""
        store = self.store
        with store.batch():
            seq = max(self._seq, int(store.db.execute("SELECT coalesce(max(seq), 0) FROM edits").fetchone()[0])) + 1
            store.db.execute("INSERT INTO edits VALUES (?, ?, ?, ?, ?)",
                             (key, seq, campaign, edit.who, encode_changes(edit.changes)))
            old = [str(r[0]) for r in store.db.execute(
                "SELECT key FROM edits WHERE campaign = ? GROUP BY key ORDER BY max(seq) DESC LIMIT -1 OFFSET ?",
                (campaign, MAX_KEYS))]
            store.db.executemany("DELETE FROM edits WHERE key = ?", [(k,) for k in old])
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
        if len(self._memo) >= MEMO_SIZE:
            self._memo.pop(next(iter(self._memo)))
        self._memo[(key, waiting.last)] = (base, made)
        return made


@dataclass(frozen=True)
class Point:
    """A point of the game where an edit is made: its chain key, the state there (`base`), the edits waiting
    there and the state they make (`made.state`, what is shown and edited). `start`: the campaign has no reply
    yet and this is its first key, so an edit makes its start again. `closed`: why no edit can be made here.
    `newest`: the pages' turn, receipts and note (None for a point a history names)."""

    key: str
    base: GameState
    waiting: Waiting
    made: Receipted
    start: bool
    newest: Newest | None = None
    closed: str | None = None

    @property
    def state(self) -> GameState:
        return self.made.state


def _point(ctx: ServerContext, c: Campaign, key: str, base: GameState, start: bool,
           newest: Newest | None = None, closed: str | None = None) -> Point:
    waiting = ctx.edits.waiting(key)
    return Point(key, base, waiting, ctx.edits.made(c.rs, base, key, waiting), start, newest, closed)


def newest_point(ctx: ServerContext, c: Campaign) -> Point:
    """The pages' point: the campaign's newest reply (before any, its start)."""
    newest = ctx.latest.newest(c)
    if newest.key is None:
        return _point(ctx, c, first_key(c), c.start, True, newest)
    closed = ("the newest turn's state is gone from the store; play a turn, then edit" if newest.gone else None)
    return _point(ctx, c, newest.key, newest.state, False, newest, closed)


async def history_point(ctx: ServerContext, c: Campaign, messages: Any) -> Point:
    """The point a chat's history names (the API's `messages`): the state after its last message, read as a chat
    turn reads it. Raises Refused (400) for a history that is not a list of messages."""
    return replayed_point(ctx, c, await ctx.replayed(c, (await ctx.read_history(messages_of(messages))).plain()))


def replayed_point(ctx: ServerContext, c: Campaign, after: Replayed) -> Point:
    """The point after a replayed history (`ServerContext.replayed`): its key, its state with the edits waiting
    there; the campaign's start when it is the first key and no reply has been kept."""
    start = after.key == first_key(c) and ctx.store.head(c.name) is None
    return _point(ctx, c, after.key, after.state, start)


def page_stamp(c: Campaign, point: Point) -> str:
    """What the pages' version adds to the turn's: the waiting edits, or before any turn the start."""
    if point.start:
        return "s" + hashlib.sha256(c.start_json.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"e{point.waiting.last}"


def save_edit(ctx: ServerContext, c: Campaign, point: Point, who: str | None, changes: Changes,
              opened_at: int | None = None) -> Edited:
    """An edit of the character `who` (None: the party sheet, with the revision its form was `opened_at`) made at
    `point`: checked, then kept waiting at its key (or, before the first reply, made the campaign's start).
    Not ok: the problems, nothing kept. Raises Refused (503) when the store cannot keep it."""
    if point.closed is not None:
        return Edited(point.state, problems=(Problem("sheet", "not-editable", point.closed, None),))
    state = point.state
    edited = edit_party(c.rs, state, changes, opened_at=opened_at) if who is None else edit_sheet(c.rs, state, who,
                                                                                                 changes)
    if not edited.ok or edited.state.to_json() == state.to_json():
        return edited  # refused, or a change to what it was: nothing to keep (ED-7)
    if point.start:
        if not ctx.campaigns.set_start(c.name, edited.state):
            return Edited(state, problems=(Problem("sheet", "not-editable", "a turn was played while this edit was "
                                                   "made; open the sheet again", None),))
        return edited
    if len(point.waiting.edits) >= MAX_WAITING:
        return Edited(state, problems=(Problem("sheet", "too-many-edits", f"{MAX_WAITING} edits wait for the "
                                               "next reply already; play a turn, then edit", None),))
    name = None if who is None else state.character(who)
    try:
        ctx.edits.add(c.name, point.key, PlayerEdit(name, edited.changes))
    except sqlite3.Error as e:
        log.error("campaign %s: the store cannot keep a player's edit: %s", c.name, e)
        raise Refused(503, "the server cannot keep the edit now (its store failed; see its log)", "store_failed",
                      "server_error") from None
    return edited


@dataclass(frozen=True, slots=True)
class Opening:
    """What a reply opens with: the receipts of the edits waiting at its key (each on its own line), and the
    state they make, which the prompt is built from."""

    text: str
    state: GameState


def edit_opening(ctx: ServerContext, c: Campaign, before: Replayed, prefill: str | None) -> Opening | None:
    """The receipts the reply from `before` opens with, or None when no edit waits there (ED-6). A continued
    reply (`prefill`, its first part, which opened with the edits made before it) writes the edits made after
    its first part at the start of what it adds, on a line of their own; not when the first part stops inside
    a tag, where they would break it (they are left out, logged: ED-17)."""
    key, state = before.key, before.state
    if prefill is not None:
        key = ctx.chain.next_key(key, prefill)
    if not ctx.edits.has(key):
        return None
    if prefill is not None:
        if prefill.rfind("[") > prefill.rfind("]"):
            log.warning("campaign %s: the reply continued stops inside a tag; the edits made after it are left "
                        "out", c.name)
            return None
        state = apply_reply(c.rs, state, prefill).state
    made = ctx.edits.made(c.rs, state, key, ctx.edits.waiting(key))
    if made.dropped:
        log.info("campaign %s: %d edits no longer apply and are left out", c.name, len(made.dropped))
    if not made.text:
        return None
    lead = "\n" if prefill and not prefill.endswith("\n") else ""
    return Opening(lead + made.text, made.state)


def waiting_state(ctx: ServerContext, c: Campaign, before: Replayed) -> GameState:
    """The state after `before` with the edits waiting at its key made: what the next reply starts from."""
    if not ctx.edits.has(before.key):
        return before.state
    return ctx.edits.made(c.rs, before.state, before.key, ctx.edits.waiting(before.key)).state


def opened_events(events: AsyncGenerator[str, None], opening: Opening | None) -> AsyncGenerator[str, None]:
    """A streamed reply's events, with the opening's receipts (when there is one) at the start of the first
    choice's content, as if the model had written them first: the relay applies them with the reply and the
    client gets them first. Without one, `events` itself: nothing is added to the stream's path."""
    return events if opening is None else _opened(events, opening.text)


async def _opened(events: AsyncGenerator[str, None], text: str) -> AsyncGenerator[str, None]:
    try:
        async for data in events:
            if text and not is_done(data):
                doc = loads_or_none(data)
                choice = first_choice(doc) if isinstance(doc, dict) and not is_error_event(doc) else None
                if choice is not None:
                    set_delta_content(choice, text + (delta_content(choice) or ""))
                    text = ""
                    data = dumps(doc).decode()
            yield data
    finally:
        await events.aclose()
