"""The pages under /ui/: the campaigns, the game sheet, the prompt preview, the ruleset checker.

The sheet and the prompt read `ServerContext.latest` (what the chat turns left there); the sheet shows the
players' edits waiting for the next reply and a control for each live value, whose posts `routes/editor.py`
answers (starting a campaign is `routes/campaign_pages.py`). Their handlers run on the event loop's thread, as
the chat routes do; the ruleset checker parses a form, checks a ruleset of up to 4 MB and draws its page in
worker threads, so chat requests are not held up meanwhile.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...pages import inspection_context, prompt_context
from ...pages.templates import REFRESH_SCRIPT, STYLESHEET, refresh_script, stylesheet
from ...prompt.upstream_tokens import NotCounted
from ..context import ServerContext
from ..edits.points import newest_point, page_stamp
from ..errors import Refused
from ..limits import MAX_RULESET_FORM
from ..wire.forms import Part
from .base import nav, page, page_async, posted_parts, refusals_as_pages, route, sheet_page


def form_ruleset(posted: list[Part]) -> tuple[bytes | None, str, str | None]:
    """The ruleset in a form POST (multipart: `file` first, else `ruleset`; or url-encoded `ruleset`):
    its bytes, a name for it, and the pasted text to show again (an uploaded file is not echoed)."""
    parts = {p.name: p for p in posted}
    upload = parts.get("file")
    if upload is not None and upload.filename is not None and upload.data.strip():
        return upload.data, upload.filename or "uploaded file", None
    pasted = parts.get("ruleset")
    if pasted is not None and pasted.data.strip():
        return pasted.data, "pasted ruleset", pasted.data.decode("utf-8", "replace")
    return None, "", None


async def campaigns_page(ctx: ServerContext, request: Request) -> Response:
    rows = [{"name": r.name, "characters": r.characters} for r in ctx.store.campaigns()]
    return page("index.html.j2", {"campaigns": rows, "nav": nav(ctx, None, "index")})


async def stylesheet_file(request: Request) -> Response:
    return Response(stylesheet(), media_type="text/css")


async def refresh_script_file(request: Request) -> Response:
    return Response(refresh_script(), media_type="text/javascript")


@refusals_as_pages("Game sheet")
async def game_sheet_page(ctx: ServerContext, request: Request) -> Response:
    return sheet_page(ctx, ctx.campaign(request.path_params["campaign"]))


async def sheet_version(ctx: ServerContext, request: Request) -> Response:
    """The sheet's version, which its script polls: it changes with each turn and each edit waiting."""
    try:
        c = ctx.campaign(request.path_params["campaign"])
    except Refused as r:
        return Response("unknown campaign", status_code=r.status, media_type="text/plain")
    v = f"{ctx.latest.version(c.name)}.{page_stamp(c, newest_point(ctx, c))}"
    etag = f'"{v}"'
    headers = {"etag": etag, "cache-control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(v, media_type="text/plain", headers=headers)


@refusals_as_pages("Prompt")
async def prompt_page(ctx: ServerContext, request: Request) -> Response:
    c = ctx.campaign(request.path_params["campaign"])
    sent = ctx.latest.prompts.get(c.name)
    try:
        shown = prompt_context(sent.prompt, sent.budget) if sent is not None else None
    except NotCounted:  # the upstream's counts of that prompt have left the bounded table since: count locally
        shown = prompt_context(sent.prompt, replace(sent.budget, tokenizer=None)) if sent is not None else None
    return page("prompt.html.j2", {"title": c.name, "campaign": c.name, "ruleset": c.rs.name, "prompt": shown,
                                   "nav": nav(ctx, c.name, "prompt")})


@refusals_as_pages("Ruleset checker")
async def checker_page(ctx: ServerContext, request: Request) -> Response:
    data: bytes | None = None
    source, pasted = "", None
    if request.method == "POST":
        data, source, pasted = await run_in_threadpool(form_ruleset, await posted_parts(request, MAX_RULESET_FORM))
    # up to 4 MB parsed and validated, and its page drawn (PROBLEMS_SHOWN problems at most, and the pasted text
    # again): in worker threads, so chat requests are not held up meanwhile
    inspected = await run_in_threadpool(inspection_context, data, source)
    return await page_async("check.html.j2", {**inspected, "result": inspected, "pasted": pasted,
                                              "nav": nav(ctx, None, "check")})


def page_routes(ctx: ServerContext) -> list[Route]:
    return [route("/ui", campaigns_page, ctx), route("/ui/", campaigns_page, ctx),
            route("/ui/" + STYLESHEET, stylesheet_file), route("/ui/" + REFRESH_SCRIPT, refresh_script_file),
            route("/ui/check", checker_page, ctx, methods=["GET", "POST"]),
            route("/ui/c/{campaign}", game_sheet_page, ctx),
            route("/ui/c/{campaign}/version", sheet_version, ctx),
            route("/ui/c/{campaign}/prompt", prompt_page, ctx)]
