"""The state of the chat on screen (decisions STX-3, STX-4, STX-7): what the SillyTavern extension's panel shows,
computed from the chat's own messages.

    POST /tagengine/api/state                 {"messages": [...], "campaign"?: NAME, "rewrite_from"?: N, "chat"?: ID}
    POST /tagengine/api/c/{campaign}/state
    GET  /tagengine/api/campaigns             the campaigns the picker lists, and the server's --campaign

The state is the chat route's replay of the history (`ServerContext.replayed`: the same hash chain, the same
snapshots) with the players' edits waiting there, and nothing else moves: no turn is played, the pages' newest
turn and prompt stay as they are. The campaign is chosen as a turn chooses it (`turn.request.campaign_choice`:
`campaign` in the body, else a marker in a system or user message, else the campaign in the path, else
--campaign), and the answer says which and how (`by`), so a panel can say it. `rewrite_from`: the replies from
that message on as a replay writes them, where they differ from the chat's (a reply the player edited, and the
receipts after it). `POST /c/{campaign}/tagengine/api/state`, the path before the API had one scheme, answers
too, for one release (docs/middleware.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...commands import apply_reply
from ...pages.chat_panel import panel_json
from ..context import ServerContext
from ..edits.points import replayed_point
from ..errors import Refused, refusals_as_responses
from ..limits import LOOP_CHARS, RECEIPTS_CHARS, RECEIPTS_HELD
from ..memory.campaigns import Campaign
from ..memory.chain import Replayed
from ..memory.latest_turns import turn_number
from ..turn.request import (
    campaign_choice,
    chat_of,
    check_count,
    check_sizes,
    marker_warning,
    messages_of,
    read_marked,
)
from ..wire.answers import json_response
from ..wire.body import object_body, read_body
from .base import alias, api_path, route

KEYS = ("messages", "campaign", "rewrite_from", "chat")


class ReceiptsMemo:
    """The last replies' receipts by chain key: at most `entries` replies and `chars` characters of them, the
    oldest dropped first; a reply longer than `chars` is not kept (its receipts are made again when asked).
    Receipts grow with a reply's text (a MiB of short tags is some 40 000 receipts, 18 MB held; 256 such replies
    held 4.6 GB), so the bound is on the replies' characters too."""

    def __init__(self, entries: int = RECEIPTS_HELD, chars: int = RECEIPTS_CHARS) -> None:
        self.entries = entries
        self.chars = chars
        self.held_chars = 0
        self._held: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def get(self, key: str) -> list[dict[str, Any]] | None:
        hit = self._held.get(key)
        return None if hit is None else hit[1]

    def put(self, key: str, reply: str, receipts: list[dict[str, Any]]) -> None:
        size = len(reply)
        if size > self.chars or key in self._held:
            return
        while self._held and (len(self._held) >= self.entries or self.held_chars + size > self.chars):
            self.held_chars -= self._held.pop(next(iter(self._held)))[0]
        self._held[key] = (size, receipts)
        self.held_chars += size


@refusals_as_responses
async def state_of_chat(ctx: ServerContext, memo: ReceiptsMemo, request: Request) -> Response:
    body = object_body(await read_body(request), KEYS)
    messages = messages_of(body.get("messages", []))
    check_count(messages)
    marked = await ctx.read_history(messages)
    chosen = campaign_choice(marked, body.get("campaign"), request.path_params.get("campaign"),
                             ctx.options.campaign)
    warned = marker_warning(marked, None if chosen is None else chosen[0])
    said = {"name": None if chosen is None else chosen[0], "by": None if chosen is None else chosen[1],
            "warning": None if warned is None else next(iter(warned.values()))}
    if chosen is None:  # the chat's requests pass to the model unchanged
        return json_response({"campaign": said, "turn": None, "sheet": None})
    try:
        c = ctx.users_campaign(chosen[0], request.headers)
    except Refused as r:
        return json_response({**r.doc(), "campaign": said}, r.status)
    history = marked.plain()
    check_sizes(messages, history)
    hide = ctx.hides(request.headers)  # the chat shows narrations (OW-4)
    after = await ctx.replayed(c, history, hide)
    point = replayed_point(ctx, c, after, chat_of(body.get("chat")))
    receipts = await last_receipts(ctx, memo, c, history, after, hide)
    # a long reply's receipts are many, and drawing each takes time: as applying it, off the loop (SEC-2)
    sheet = (await ctx.workers.run(panel_json, c.rs, point.state, receipts)
             if after.replies and len(after.replies[-1]) > LOOP_CHARS else panel_json(c.rs, point.state, receipts))
    rank = {n: i for i, n in enumerate(c.order)}
    sheet["characters"].sort(key=lambda x: rank.get(x["name"], len(rank)))  # stable: the rest as they were
    doc = {"campaign": {**said, "ruleset": c.rs.name}, "turn": turn_number(history, len(after.replies)),
           "at": point.to_json(), "history": list(after.notes), "sheet": sheet}
    if "rewrite_from" in body:
        doc["rewrites"] = await rewrites(ctx, c, history, messages, body["rewrite_from"], after, hide)
    return json_response(doc)


async def last_receipts(ctx: ServerContext, memo: ReceiptsMemo, c: Campaign, history: list[dict[str, str]],
                        after: Replayed, hide: bool) -> list[dict[str, Any]]:
    """The receipts of the history's last reply, as its replay writes them (remembered by chain key)."""
    if not after.replies:
        return []
    hit = memo.get(after.key)
    if hit is None:
        last = max(i for i, m in enumerate(history) if m["role"] == "assistant")
        before = await ctx.replayed(c, history[:last], hide)
        reply = after.replies[-1]
        applied = (await ctx.workers.run(apply_reply, c.rs, before.state, reply) if len(reply) > LOOP_CHARS
                   else apply_reply(c.rs, before.state, reply))
        hit = [r.to_json() for r in applied.receipts]
        memo.put(after.key, reply, hit)
    return hit


async def rewrites(ctx: ServerContext, c: Campaign, history: list[dict[str, str]], messages: list[Any], first: Any,
                   after: Replayed, hide: bool) -> list[dict[str, Any]]:
    """Each reply at or after `messages[first]` whose replay from the campaign's start differs from its text:
    `{index, text}` by its index in `messages`. None when the history replays as it is (the common case),
    or with --hide-tags (the chat holds narrations, which a replay does not write)."""
    if type(first) is not int or first < 0:
        raise Refused(400, "`rewrite_from` must be a message's index, a whole number", "invalid_request")
    if (after.consistent and not after.rewritten) or hide:
        return []
    return await ctx.workers.run(replay_texts, c, history, messages, first)


async def campaign_list(ctx: ServerContext, request: Request) -> Response:
    seen = set(ctx.visible(request.headers))  # with --user-header, this user's and nobody's (OW-6)
    rows = [{"name": r.name, "characters": [n for n in r.characters.split(", ") if n]}
            for r in ctx.store.campaigns() if r.name in seen]
    return json_response({"campaigns": rows, "default": ctx.options.campaign})


def chat_state_routes(ctx: ServerContext) -> list[Route]:
    memo = ReceiptsMemo()
    named = route(api_path("state", "{campaign}"), state_of_chat, ctx, memo, methods=["POST"])
    return [route(api_path("state"), state_of_chat, ctx, memo, methods=["POST"]), named,
            alias("/c/{campaign}/tagengine/api/state", named),
            route(api_path("campaigns"), campaign_list, ctx)]


def replay_texts(c: Campaign, history: list[dict[str, str]], messages: list[Any],
                 first: int) -> list[dict[str, Any]]:
    """The replies from the campaign's start, each applied to the state the ones before left; those at or after
    `messages[first]` whose text changes, by their index in `messages`: the assistant messages the plain history
    keeps, read as it reads them (content parts as text; a message its marker left empty, or a tool call's
    without content, dropped), matched by their order."""
    where = [i for i, m in enumerate(messages) if isinstance(m, Mapping) and isinstance(m.get("role"), str)
             and m["role"].lower() == "assistant" and read_marked([m]).history]
    state, out = c.start, []
    for n, m in enumerate(x for x in history if x["role"] == "assistant"):
        applied = apply_reply(c.rs, state, m["content"])
        state = applied.state
        if n < len(where) and where[n] >= first and applied.text != m["content"]:
            out.append({"index": where[n], "text": applied.text})
    return out
