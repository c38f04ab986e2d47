"""The point of the game where a player's edit is made, and how it is saved there (docs/editor.md, decisions
ED-6, ED-14..ED-18).

An edit made on the pages or through the JSON API is checked as the editor checks it (`edit_sheet`,
`edit_party`) against the state at a point (`Point`): the campaign's newest reply (the pages, `newest_point`), or
the chat history a client sends (the API's `messages`, `history_point`). It then waits at that point's chain key
(`pending.py`), and the state there is shown with it.

Before a campaign's first reply there is no chat to hold an edit: an edit at its first key (the sheets a player
fills in after starting a campaign on the pages) makes the campaign's start again (`Campaigns.set_start`), as
`campaign new --state` would have.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from typing import Any

from ...commands.edit import PlayerEdit, Receipted
from ...commands.sheet_edits import Changes, Edited, edit_party, edit_sheet
from ...errors import Problem
from ...records import frozen
from ...state import GameState
from ..context import ServerContext
from ..errors import Refused
from ..limits import EDITS_WAITING
from ..memory.campaigns import Campaign
from ..memory.chain import Replayed, first_key
from ..memory.latest_turns import Newest
from ..turn.request import messages_of
from .pending import Waiting

log = logging.getLogger("tagengine.serve")


@frozen
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
    chat: str | None = None  # the chat a history named (ED-25); None: any chat at this key
    parent: str | None = None  # the key before the reply this point follows, when a history names it (ED-28)

    @property
    def state(self) -> GameState:
        return self.made.state

    def to_json(self) -> dict[str, Any]:
        """Where an edit goes, as the JSON API says it: the chain key, the turn (the newest reply's, for a point
        without a history), whether it makes the campaign's start (before the first reply), how many edits wait
        there for the next reply, and the party sheet's revision."""
        return {"key": self.key, "turn": None if self.newest is None else self.newest.turn, "start": self.start,
                "waiting": len(self.waiting.edits), "revision": self.state.party_revision}


def _point(ctx: ServerContext, c: Campaign, key: str, base: GameState, start: bool, newest: Newest | None = None,
           closed: str | None = None, chat: str | None = None, parent: str | None = None) -> Point:
    waiting = ctx.edits.waiting(key, chat)
    made = ctx.edits.made(c.rs, base, key, waiting, chat)
    return Point(key, base, waiting, made, start, newest, closed, chat, parent)


def newest_point(ctx: ServerContext, c: Campaign) -> Point:
    """The pages' point: the campaign's newest reply (before any, its start)."""
    newest = ctx.latest.newest(c)
    if newest.key is None:
        return _point(ctx, c, first_key(c), c.start, True, newest)
    closed = ("the newest turn's state is gone from the store; play a turn, then edit" if newest.gone else None)
    return _point(ctx, c, newest.key, newest.state, False, newest, closed)


async def history_point(ctx: ServerContext, c: Campaign, messages: Any, chat: str | None = None) -> Point:
    """The point a chat's history names (the API's `messages`, and the chat's id when it gives one): the state
    after its last message, read as a chat turn reads it. Raises Refused (400) for a history that is not a list
    of messages."""
    after = await ctx.replayed(c, (await ctx.read_history(messages_of(messages))).plain())
    return replayed_point(ctx, c, after, chat)


def replayed_point(ctx: ServerContext, c: Campaign, after: Replayed, chat: str | None = None) -> Point:
    """The point after a replayed history (`ServerContext.replayed`): its key, its state with the edits waiting
    there for `chat`; the campaign's start when it is the first key, no reply has been kept and no chat is named
    (an edit a chat names is that chat's, ED-25)."""
    start = after.key == first_key(c) and chat is None and ctx.store.head(c.name) is None
    return _point(ctx, c, after.key, after.state, start, chat=chat, parent=after.parent)


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
    if len(point.waiting.edits) >= EDITS_WAITING:
        return Edited(state, problems=(Problem("sheet", "too-many-edits", f"{EDITS_WAITING} edits wait for the "
                                               "next reply already; play a turn, then edit", None),))
    name = None if who is None else state.character(who)
    try:
        ctx.edits.add(c.name, point.key, PlayerEdit(name, edited.changes), point.chat, point.parent)
    except sqlite3.Error as e:
        log.error("campaign %s: the store cannot keep a player's edit: %s", c.name, e)
        raise Refused(503, "the server cannot keep the edit now (its store failed; see its log)", "store_failed",
                      "server_error") from None
    return edited


def waiting_state(ctx: ServerContext, c: Campaign, before: Replayed, chat: str | None = None) -> GameState:
    """The state after `before` with the edits waiting at its key for `chat` made: what its next reply starts
    from."""
    if not ctx.edits.has(before.key):
        return before.state
    return ctx.edits.made(c.rs, before.state, before.key, ctx.edits.waiting(before.key, chat), chat).state
