"""What a reply opens with: the receipts of the players' edits waiting at its key, written first as if the model
had written them (decisions ED-6, ED-15, ED-17), so the reply carries them and any replay of the chat makes them."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncGenerator

from ...commands import apply_reply
from ...records import frozen
from ...state import GameState
from ..context import ServerContext
from ..memory.campaigns import Campaign
from ..memory.chain import Replayed
from ..wire.chat_completions import delta_content, first_choice, is_error_event, set_delta_content
from ..wire.json_codec import dumps, loads_or_none
from ..wire.sse import is_done

log = logging.getLogger("tagengine.serve")


@frozen(slots=True)
class Opening:
    """What a reply opens with: the receipts of the edits waiting at its key (each on its own line), and the
    state they make, which the prompt is built from."""

    text: str
    state: GameState


@frozen(slots=True)
class Seen:
    """The edits a reply was opened with: the key they wait at and the newest one's number (0: none waited).
    Edits made there after it, while the reply was being written, are carried past it (`carry_late`)."""

    key: str
    last: int


def seen_at(ctx: ServerContext, c: Campaign, before: Replayed, prefill: str | None, chat: str | None) -> Seen:
    key = before.key if prefill is None else ctx.chain.next_key(before.key, prefill)
    return Seen(key, ctx.edits.waiting(key, chat).last)


def edit_opening(ctx: ServerContext, c: Campaign, before: Replayed, prefill: str | None,
                 chat: str | None = None) -> Opening | None:
    """The receipts the reply from `before` opens with, or None when no edit waits there for `chat` (ED-6, ED-25).
    A continued reply (`prefill`, its first part, which opened with the edits made before it) writes the edits
    made after its first part at the start of what it adds, on a line of their own; not when the first part stops
    inside a tag, where they would break it (they are left out, logged: ED-17)."""
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
    made = ctx.edits.made(c.rs, state, key, ctx.edits.waiting(key, chat), chat)
    if made.dropped:
        log.info("campaign %s: %d edits no longer apply and are left out", c.name, len(made.dropped))
    if not made.text:
        return None
    lead = "\n" if prefill and not prefill.endswith("\n") else ""
    return Opening(lead + made.text, made.state)


def carry_late(ctx: ServerContext, c: Campaign, seen: Seen, chat: str | None, after_key: str) -> None:
    """The edits made at `seen.key` while a reply from it was being written (which did not open with them) wait at
    `after_key`, the key after that reply, too: the next reply opens with them (ED-26). A store that cannot keep
    them is logged: they still wait at `seen.key`, where a reply made again from there meets them."""
    try:
        carried = ctx.edits.carry(c.name, seen.key, after_key, chat, seen.last)
    except sqlite3.Error as e:
        log.error("campaign %s: the store cannot carry the edits made during a reply: %s", c.name, e)
        return
    if carried:
        log.info("campaign %s: %d edits made while a reply was written wait for the next one", c.name, carried)


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
