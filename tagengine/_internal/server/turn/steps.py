"""The chat turn: POST /v1/chat/completions for a campaign, as named steps (docs/architecture.md).

    begin            the campaign, the plain history, a prefill split off, the state before the reply
    open_with_edits  the players' edits waiting at that point, which the reply opens with (edits.py)
    fit              the prompt fitted to the budget; the body and headers for the upstream
    plan_mid_reply   --settle-checks: whether the reply's checks are rolled mid-reply, and the header
    answer_whole     the upstream asked; its reply applied (`whole_reply`) and sent whole
    answer_streamed  the upstream asked; its events relayed with receipts (relay.py)
    after_reply      once the answer has gone: the snapshot kept (`record_reply`) and the reply counted

Each step takes the `ServerContext` and plain values, and only the answers make a Starlette response, so the
steps are tested without HTTP (tests/test_serve_turn.py). Engine work runs on the event loop's thread,
between awaits, while it reads little new text; more goes to a worker thread (`ctx.workers`, SEC-2): a long
replay (`ServerContext.replayed`, S-19), a fit with much new text to count, a big reply applied or counted.
The engine is pure and the store and the snapshot cache take their locks, so both may run at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.background import BackgroundTask
from starlette.responses import Response

from ...commands import Applied, apply_reply
from ...errors import HistoryError, TagengineError
from ...prompt import Budget, BudgetError, Prompt
from ...prompt.budget import count_ahead
from ...prompt.contexts import context_of
from ...prompt.tokens import TokenizerChoice
from ...stream import StreamFilter
from ...tags import narration
from ..context import ServerContext
from ..edits.opening import Opening, Seen, carry_late, edit_opening, opened_events, seen_at
from ..errors import Refused, reply_too_large, upstream_failure, upstream_status
from ..limits import LOOP_CHARS, MAX_REPLY
from ..memory.campaigns import Campaign
from ..memory.chain import HIDDEN, Replayed
from ..memory.latest_turns import turn_number
from ..upstream.counting import tokens_header
from ..wire.chat_completions import first_content, set_first_content
from ..wire.json_codec import dumps, loads_or_none
from ..wire.streamed import Streamed
from .grammar_field import with_grammar
from .mid_reply import CHECKS_HEADER
from .prefill import Continued, prefill_last, split_prefill
from .receipts import ReceiptStream
from .relay import Filter, relay_stream
from .request import MarkedHistory, asked_response, budget_of, with_replies

log = logging.getLogger("tagengine.serve")
NOT_MID_REPLY = "at-end; a continued reply or --hide-tags"  # x-tagengine-settle when the option cannot apply


@dataclass(slots=True)
class Turn:
    """One turn of a campaign, as `begin` found it."""

    campaign: Campaign
    before: Replayed  # the state before the reply, and its chain key
    history: list[dict[str, str]]  # the messages the prompt is fitted from (--hide-tags: tagged replies again)
    prefill: str | None  # continue: the assistant message the model goes on from (S-17)
    on_pages: bool = True  # the pages show this turn (its prompt, its reply); not a first message after turns (TR-5)
    chat: str | None = None  # the chat's id, when the request gives one (X-Tagengine-Chat, ED-25)
    opening: Opening | None = None  # the players' edits' receipts the reply opens with, and their state
    seen: Seen | None = None  # where those edits waited, and the newest one: later ones are carried (ED-26)
    hide: bool = False  # the player gets the narration (--hide-tags, or `X-Tagengine-Show: narration`, OW-4)


@dataclass(slots=True)
class Fitted:
    """A turn's request to the upstream, as `fit` made it."""

    body: dict[str, Any]  # the client's, its messages the fitted prompt
    headers: dict[str, str]  # the x-tagengine-* headers of the client's answer
    counted: Budget  # what the prompt was counted with: the reply is counted ahead with it too (S-32)
    chosen: TokenizerChoice | None = None  # and its choice of tokenizer, made once a turn


async def begin(ctx: ServerContext, c: Campaign, marked: MarkedHistory, chat: str | None = None,
                hide: bool | None = None) -> Turn:
    """The turn of campaign `c` (`ctx.users_campaign`: looked up once a request) after `marked`'s history. `hide`:
    the reply shown as its narration (None: as --hide-tags says)."""
    hide = ctx.options.hide_tags if hide is None else hide
    history = marked.plain()
    earlier, prefill = split_prefill(history)  # continue: the state from before the prefill (S-17)
    before = await ctx.replayed(c, earlier, hide)
    if hide or any(n.startswith(HIDDEN) for n in before.notes):
        history = with_replies(history, before.replies)  # the model sees its tagged replies, not the narrations
    # a history with no reply and one user message, while the pages show a turn: a new chat's first message, or
    # an extension's raw prompt that holds no chat; played, but the pages are left as they are (TR-5). Two user
    # messages are a chat (one whose replies were deleted): a turn like any other
    on_pages = bool(before.replies) or ctx.store.head(c.name) is None or \
        sum(1 for m in history if m["role"] == "user") > 1
    if not on_pages:
        log.info("campaign %s: a first message while the pages show later turns: played, the pages left as they are",
                 c.name)
    return Turn(c, before, history, prefill, on_pages, chat, hide=hide)


def open_with_edits(ctx: ServerContext, turn: Turn) -> None:
    """ED-6: the receipts of the players' edits waiting at the turn's chain key go at the start of the
    reply, as if the model had written them there (whole, streamed, continued, --hide-tags, --settle-checks:
    edits.py); the prompt is built from the state they make."""
    turn.seen = seen_at(ctx, turn.campaign, turn.before, turn.prefill, turn.chat)
    turn.opening = edit_opening(ctx, turn.campaign, turn.before, turn.prefill, turn.chat)


async def fit(ctx: ServerContext, turn: Turn, body: dict[str, Any], incoming: Mapping[str, str]) -> Fitted:
    """The prompt (the engine's system prompt, the app's messages, the reminder) fitted to the budget the
    request asks for, as the body to send upstream; `x-tagengine-tokens` says how it was counted."""
    c, context = turn.campaign, ctx.options.context
    budget = budget_of(body, context)
    whence = "--context" if context else f"table:{context_of(budget.model)[1]}"
    try:
        state = turn.before.state if turn.opening is None else turn.opening.state  # with the edits
        prompt, counted, fallback = await ctx.prompt_fitter(c.rs, state, turn.history, budget, incoming)
    except BudgetError as e:
        raise Refused(400, str(e), "context_length_exceeded") from None
    except HistoryError as e:
        raise Refused(400, str(e), "invalid_history") from None
    except TagengineError as e:  # the server's own set-up (a tokenizer file): not the client's fault
        log.error("cannot build the prompt: %s", e)
        raise Refused(500, "the server cannot count tokens for this model; see its log", "server_error") from None
    if turn.on_pages:  # for the prompt page, once the request has left: the prompt it replaces is freed there
        asyncio.get_running_loop().call_soon(ctx.latest.prompt_sent, c.name, prompt, counted)
    if turn.prefill is not None and not prefill_last(prompt.messages, turn.prefill):
        raise Refused(400, "the reply to continue does not fit the context", "context_length_exceeded")
    headers = {"x-tagengine-campaign": c.name, "x-tagengine-tokens": tokens_header(prompt.report, fallback, whence)}
    if turn.before.notes:
        headers["x-tagengine-history"] = "; ".join(turn.before.notes)
    sent = upstream_body(body, prompt)
    if turn.prefill is None:  # a continued reply may stop inside a tag: a grammar starts at a reply's start (GR-6)
        await with_grammar(sent, ctx.options.grammar, c.rs, state, ctx.workers)
    return Fitted(sent, headers, counted, prompt.report.choice)


def upstream_body(body: dict[str, Any], prompt: Prompt) -> dict[str, Any]:
    """The client's request with the fitted prompt as its messages, and a response budget it asked for
    lowered to what fitted; every other field as it came."""
    out = dict(body)
    out["messages"] = prompt.messages
    for k in ("max_tokens", "max_completion_tokens"):
        if asked_response(body.get(k)) is not None:  # else not a budget: forwarded as it came
            out[k] = prompt.report.response
    return out


async def plan_mid_reply(ctx: ServerContext, turn: Turn, fitted: Fitted, stream: bool,
                         incoming: Mapping[str, str]) -> dict[str, Any] | None:
    """With --settle-checks: the body to send again, with the reply so far as a prefill, after each check
    (CK-17), or None when this reply's checks are settled at the end; `x-tagengine-settle` says which. Not for
    a continued reply or with --hide-tags. A streamed reply's header goes before its first continuation, so
    the model is probed first (CK-21), which may learn that it cannot continue."""
    mid = ctx.mid_reply
    if mid is None:
        return None
    out = fitted.body
    eligible = turn.prefill is None and not turn.hide
    continued = eligible and mid.applies(out)
    unasked = None
    if continued and stream:
        unasked = await mid.probe(out, incoming)
        continued = unasked is None and mid.applies(out)
    fitted.headers[CHECKS_HEADER] = mid.header(out, unasked) if eligible else NOT_MID_REPLY
    return out if continued else None


def reply_filter(turn: Turn) -> Filter:
    """What the reply's text goes through: receipts (or the narration, --hide-tags), after a prefill if any."""
    c, state = turn.campaign, turn.before.state
    filt: Filter = StreamFilter(c.rs, state) if turn.hide else ReceiptStream(c.rs, state)
    return filt if turn.prefill is None else Continued(filt, turn.prefill)


def whole_reply(turn: Turn, text: str) -> tuple[str, Applied, Filter | None, str]:
    """A whole reply applied: the text the client gets, the result, the filter a continued reply went
    through (else None), and the reply as the model wrote it (a prefill's with it)."""
    if turn.prefill is None:
        applied = apply_reply(turn.campaign.rs, turn.before.state, text)
        return narration(text) if turn.hide else applied.text, applied, None, text
    filt = reply_filter(turn)
    out = filt.feed(text)
    rest, applied = filt.finish()
    return out + rest, applied, filt, turn.prefill + text


async def answer_whole(ctx: ServerContext, turn: Turn, fitted: Fitted, resend: dict[str, Any] | None,
                       incoming: Mapping[str, str]) -> Response:
    """Not streamed: the upstream's answer with choices[0]'s text applied; the rest of the turn after it."""
    try:
        got = await ctx.upstream.send(ctx.upstream.request("POST", "/chat/completions", incoming,
                                                           ctx.bodies.dumps(fitted.body)))
    except httpx.HTTPError as e:
        raise upstream_failure(e) from None
    if got.status_code >= 400:
        raise upstream_status(got.status_code, got.content)
    doc = loads_or_none(got.content)
    text = first_content(doc)
    if text is None:
        raise Refused(502, "the upstream model's answer has no choices[0].message.content text",
                      "upstream_malformed", "upstream_error")
    opening = turn.opening  # the players' edits, whose receipts the reply opens with
    if resend is not None and ctx.mid_reply is not None:
        state = turn.before.state if opening is None else opening.state
        text = await ctx.mid_reply.continue_whole(text, resend, incoming, turn.campaign.rs, state, fitted.headers)
    if len(text) > MAX_REPLY:
        raise reply_too_large()
    if opening is not None:
        text = opening.text + text
    if len(text) + len(turn.prefill or "") > LOOP_CHARS:  # applied in a worker thread (SEC-2)
        shown, applied, filt, raw = await ctx.workers.run(whole_reply, ctx, turn, text)
    else:
        shown, applied, filt, raw = whole_reply(turn, text)
    set_first_content(doc, shown)
    after = BackgroundTask(after_reply, ctx, turn, fitted, applied, filt, raw)
    return Response(dumps(doc), media_type="application/json", headers=fitted.headers, background=after)


async def answer_streamed(ctx: ServerContext, turn: Turn, fitted: Fitted, resend: dict[str, Any] | None,
                          incoming: Mapping[str, str], disconnected: Callable[[], Awaitable[bool]]) -> Response:
    """Streamed: the upstream's events relayed, each tag sent as its receipt once it closes; the rest of the
    turn once the stream's [DONE] has gone to a client still there."""
    try:
        got = await ctx.upstream.send(ctx.upstream.request("POST", "/chat/completions", incoming,
                                                           ctx.bodies.dumps(fitted.body)), stream=True)
    except httpx.HTTPError as e:
        raise upstream_failure(e) from None
    if got.status_code >= 400:
        try:
            content = await got.aread()
        except httpx.HTTPError:
            content = b""
        finally:
            await got.aclose()
        raise upstream_status(got.status_code, content)
    big_prefill = turn.prefill is not None and len(turn.prefill) > LOOP_CHARS  # the filter is fed it first
    filt = await ctx.workers.run(reply_filter, turn) if big_prefill else reply_filter(turn)

    async def completed(applied: Applied) -> None:
        raw = filt.text if isinstance(filt, StreamFilter) else ""  # --hide-tags: the player saw its narration
        await after_reply(ctx, turn, fitted, applied, filt, raw)

    if resend is not None and ctx.mid_reply is not None and isinstance(filt, ReceiptStream):
        events = opened_events(ctx.mid_reply.continued_events(got, resend, incoming, filt), turn.opening)
        body = relay_stream(got, events, filt, completed, disconnected, continued=True, workers=ctx.workers)
    else:  # opened_events puts the players' edits' receipts first (when there are any)
        body = relay_stream(got, opened_events(ctx.upstream.events(got), turn.opening), filt, completed, disconnected,
                            workers=ctx.workers)
    return Streamed(body, {**fitted.headers, "cache-control": "no-cache"})


def record_reply(ctx: ServerContext, turn: Turn, applied: Applied, filt: Filter | None, raw: str) -> bool:
    """The snapshot after a complete reply, unless the state before it was a guess (S-15: then only the
    narration map) or the chat app's text of a continued reply cannot be the engine's (S-17). Whether the
    snapshot was kept (then the next turn starts from this very state object)."""
    c, before, hide_tags = turn.campaign, turn.before, turn.hide
    if turn.seen is not None:  # the edits made while this reply was written wait for the next one (ED-26)
        carry_late(ctx, c, turn.seen, turn.chat, ctx.chain.next_key(before.key, applied.text))
    if not before.consistent and not hide_tags:
        return False
    shown = filt.shown if isinstance(filt, Continued) else narration(raw) if hide_tags else None
    if isinstance(filt, Continued) and not hide_tags:
        if shown != applied.text:
            log.warning("campaign %s: a continued reply's tag was rewritten across the prefill; the chat app's "
                        "text differs from the engine's and is replayed next time", c.name)
            return False
        shown = None
    new = ctx.chain.record(c, before.key, applied.text, applied.state, shown, consistent=before.consistent)
    if before.consistent and turn.on_pages:  # the pages show the newest state that was kept
        # the turn is the replies in the chain after the player's first message, this one too: a regenerated
        # reply keeps its number (STX-8)
        ctx.latest.reply_done(c.name, new, applied, max(1, turn_number(turn.history, len(before.replies) + 1)))
    return before.consistent


async def after_reply(ctx: ServerContext, turn: Turn, fitted: Fitted, applied: Applied, filt: Filter | None,
                      raw: str) -> None:
    """After the answer has gone (S-24): keep the snapshot and count the reply's tokens (S-32), so the next turn
    finds both. The new state's reminder is not rendered here: the turn that starts from this state renders it in
    its fit, and a reply the player swipes away or regenerates never needs one (PF-67). Nothing here awaits (but
    the count of a reply of more than LOOP_CHARS characters, in a worker thread), so it is done before the event
    loop reads another request. A fault here is logged, never raised: the answer has gone whole, and the next
    turn replays what this one did not keep (S-33)."""
    try:
        record_reply(ctx, turn, applied, filt, raw)
        counted, chosen = fitted.counted, fitted.chosen
        if counted.tokenizer is None:  # counted here, not by the upstream's tokenize endpoint (K-9)
            if len(applied.text) > LOOP_CHARS:  # last, so the snapshot is kept before this awaits (SEC-2)
                await ctx.workers.run(count_ahead, counted, "assistant", applied.text, chosen)
            else:
                count_ahead(counted, "assistant", applied.text, chosen)
    except Exception:
        log.exception("campaign %s: a turn failed after its answer had gone; the next turn replays it",
                      turn.campaign.name)
