"""The OpenAI-compatible routes a chat app calls, under both prefixes (`/v1/...` and `/c/{campaign}/v1/...`):
the model list (the upstream's), the legacy completions (refused), and chat completions: a campaign's turn
(turn.py), or without one the request passed through (passthrough.py)."""

from __future__ import annotations

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..chat_request import check_sizes, parse_body, read_body, read_marked
from ..context import ServerContext
from ..errors import error, refusals_as_responses, upstream_failure, upstream_status
from ..passthrough import passthrough
from ..turn import answer_streamed, answer_whole, begin, campaign_name, fit, plan_mid_reply
from ..upstream import media_type

PREFIXES = ("", "/c/{campaign}")


def openai_routes(ctx: ServerContext) -> list[Route]:
    upstream = ctx.upstream

    async def models(request: Request) -> Response:
        try:
            got = await upstream.send(upstream.request("GET", "/models", request.headers))
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        if got.status_code >= 600:  # no server can answer with it
            return upstream_status(got.status_code, got.content).response()
        return Response(got.content, status_code=got.status_code, media_type=media_type(got))

    async def completions(request: Request) -> Response:
        return error(400, "chat completions only: point the chat app at /v1/chat/completions",
                     "unsupported_endpoint")

    @refusals_as_responses
    async def chat(request: Request) -> Response:
        """The chat turn, step by step (turn.py)."""
        raw = await read_body(request)
        body = parse_body(raw)
        marked = read_marked(body["messages"])
        stream = body.get("stream") is True
        name = campaign_name(marked, request.path_params.get("campaign"), ctx.options.campaign)
        if name is None:
            return await passthrough(upstream, request.headers, raw, stream)
        check_sizes(body["messages"], marked.plain())
        turn = await begin(ctx, name, marked)
        fitted = await fit(ctx, turn, body, request.headers)
        resend = await plan_mid_reply(ctx, turn, fitted, stream, request.headers) if ctx.mid_reply else None
        if stream:
            return await answer_streamed(ctx, turn, fitted, resend, request.headers, request.is_disconnected)
        return await answer_whole(ctx, turn, fitted, resend, request.headers)

    return [route for prefix in PREFIXES for route in (
        Route(f"{prefix}/v1/models", models),
        Route(f"{prefix}/v1/completions", completions, methods=["POST"]),
        Route(f"{prefix}/v1/chat/completions", chat, methods=["POST"]))]
