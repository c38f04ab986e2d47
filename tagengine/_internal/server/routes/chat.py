"""The OpenAI-compatible routes a chat app calls, under both prefixes (`/v1/...` and `/c/{campaign}/v1/...`):
the model list (the upstream's; a 404 under /c/NAME for a campaign the server does not have), the legacy
completions (refused), and chat completions: a campaign's turn (turn/steps.py), or without one the request
passed through (turn/passthrough.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..context import ServerContext
from ..errors import error, refusals_as_responses, upstream_failure, upstream_status
from ..turn.passthrough import passthrough
from ..turn.quiet import QUIET_HEADER, quiet_reason
from ..turn.request import (
    CAMPAIGN_MODEL,
    CHAT_HEADER,
    campaign_choice,
    chat_of,
    check_sizes,
    marker_warning,
    model_campaign,
    parse_body,
    unmarked,
    without_markers,
)
from ..turn.steps import answer_streamed, answer_whole, begin, fit, open_with_edits, plan_mid_reply
from ..upstream.client import media_type
from ..wire.answers import json_response
from ..wire.body import read_body
from ..wire.chat_completions import with_models
from ..wire.json_codec import dumps, loads_or_none
from .base import route

log = logging.getLogger("tagengine.serve")
PREFIXES = ("", "/c/{campaign}")


@refusals_as_responses
async def models_endpoint(ctx: ServerContext, request: Request) -> Response:
    """The upstream's model list, then one model per campaign (`tagengine:NAME`, OW-1), so a chat app's model
    picker picks the campaign. Every campaign, whoever asks, even with --user-header (OW-12): Open WebUI keeps one
    model registry for all its users, replaced by whoever loaded the list last, so a per-user list made another
    user's campaign "Model not found"; its own model access control decides whose picker shows which campaign, and
    the chat routes still refuse another user's campaign (OW-6). Under /c/NAME, a 404 for a campaign the server
    does not have (or another user's), so a misspelled campaign in a chat app's URL does not connect as valid
    (STX-3)."""
    named = request.path_params.get("campaign")
    if named is not None:
        ctx.users_campaign(named, request.headers)
    upstream = ctx.upstream
    try:
        got = await upstream.send(upstream.request("GET", "/models", request.headers))
    except httpx.HTTPError as e:
        return upstream_failure(e).response()
    if got.status_code >= 600:  # no server can answer with it
        return upstream_status(got.status_code, got.content).response()
    doc = loads_or_none(got.content) if got.status_code == 200 else None
    ctx.learn_model(doc)  # the model a campaign's id is sent as, known without asking
    games = [(f"{CAMPAIGN_MODEL}{r.name}", f"{r.name} (tagengine campaign)") for r in ctx.store.campaigns()]
    listed = with_models(doc, games, "tagengine")
    if listed is doc:  # not a model list: as the upstream sent it
        return Response(got.content, status_code=got.status_code, media_type=media_type(got))
    return json_response(listed, got.status_code)


async def legacy_completions(request: Request) -> Response:
    return error(400, "chat completions only: point the chat app at /v1/chat/completions", "unsupported_endpoint")


@refusals_as_responses
async def chat_endpoint(ctx: ServerContext, request: Request) -> Response:
    """The chat turn, step by step (turn/steps.py)."""
    raw = await read_body(request)
    body = parse_body(raw)
    stream = body.get("stream") is True
    prefixed, model = request.path_params.get("campaign"), body.get("model")
    if not prefixed and not ctx.options.campaign and model_campaign(model) is None and unmarked(body["messages"]):
        return await passthrough(ctx.upstream, request.headers, raw, stream)  # no campaign can be chosen
    marked = await ctx.read_history(body["messages"])
    chosen = campaign_choice(marked, None, prefixed, ctx.options.campaign, model)
    name = None if chosen is None else chosen[0]
    warned = marker_warning(marked, name)  # a near-miss marker (TR-8)
    if name is None:
        return await passthrough(ctx.upstream, request.headers, raw, stream, warned)
    # another user's campaign is an unknown one (OW-6), refused before anything else; else found at the turn's start
    owned = ctx.users_campaign(name, request.headers) if ctx.options.user_header is not None else None
    check_sizes(body["messages"], marked.plain(), len(raw))
    renamed = model_campaign(model) is not None
    if renamed:  # the campaign's model id: the upstream gets its own model (OW-1)
        real = await ctx.upstream_model(request.headers)
        body = {k: v for k, v in body.items() if k != "model"} if real is None else {**body, "model": real}
    quiet = quiet_reason(request.headers, body, marked.history)  # not a turn of the game (TR-5)
    if quiet is not None:
        headers = {**(warned or {}), QUIET_HEADER: quiet}
        return await passed_quiet(ctx, raw, body, stream, request.headers, headers, renamed)
    # their 400s before an unknown campaign's 404 (with --user-header the campaign was looked up above: OW-6 first)
    chat, hide = chat_of(request.headers.get(CHAT_HEADER)), ctx.hides(request.headers)
    turn = await begin(ctx, ctx.campaign(name) if owned is None else owned, marked, chat, hide)
    open_with_edits(ctx, turn)
    fitted = await fit(ctx, turn, body, request.headers)
    if warned:
        fitted.headers.update(warned)
    resend = await plan_mid_reply(ctx, turn, fitted, stream, request.headers) if ctx.mid_reply else None
    if stream:
        return await answer_streamed(ctx, turn, fitted, resend, request.headers, request.is_disconnected)
    return await answer_whole(ctx, turn, fitted, resend, request.headers)


async def passed_quiet(ctx: ServerContext, raw: bytes, body: dict[str, Any], stream: bool,
                       incoming: Mapping[str, str], headers: dict[str, str], renamed: bool) -> Response:
    """A request that is not a turn, to the model as the app sent it, its campaign markers taken out and a
    campaign's model id (`renamed`) given as the upstream's model."""
    log.info("a request that is not a turn of the game passes through: %s", headers[QUIET_HEADER])
    if renamed or b"[tagengine:" in raw:
        raw = dumps({**body, "messages": without_markers(body["messages"])})
    return await passthrough(ctx.upstream, incoming, raw, stream, headers)


def chat_routes(ctx: ServerContext) -> list[Route]:
    return [r for prefix in PREFIXES for r in (
        route(f"{prefix}/v1/models", models_endpoint, ctx),
        route(f"{prefix}/v1/completions", legacy_completions, methods=["POST"]),
        route(f"{prefix}/v1/chat/completions", chat_endpoint, ctx, methods=["POST"]))]
