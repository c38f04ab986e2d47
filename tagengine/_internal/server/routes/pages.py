"""The pages under /ui/ (issue 14): the campaigns, the game sheet, the prompt preview, the ruleset checker.

The sheet and the prompt read `ServerContext.latest` (what the chat turns left there); the sheet shows the
players' edits waiting for the next reply and a control for each live value, whose posts `routes/editor.py`
answers (issue 27; starting a campaign is `routes/campaign_pages.py`). Their handlers run on
the event loop's thread, as the chat routes do; the ruleset checker parses a form and checks a ruleset of up
to 4 MB in a worker thread, so chat requests are not held up meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ...errors import Problem
from ...pages import inspection_context, prompt_context, render_page, sheet_context
from ...pages.sheet_editor import Ids, play_context
from ...pages.templates import EDITOR_SCRIPT, REFRESH_SCRIPT, STYLESHEET, refresh_script, stylesheet
from ...prompt.upstream_tokens import NotCounted
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import newest_point, page_stamp
from ..errors import Refused
from ..limits import MAX_RULESET_FORM
from ..memory.campaigns import Campaign
from ..turn.request import body_within
from ..wire.forms import form_parts


def nav(ctx: ServerContext | None, name: str | None, here: str) -> list[dict[str, Any]]:
    """The pages' bar; with `--api-key`, where a browser signs in, its sign-out (TR-4). `ctx` None: a page
    about a problem, with no server's options at hand."""
    items = [("Campaigns", "/ui/", "index")]
    if name is not None:
        base = f"/ui/c/{quote(name, safe='')}"
        items += [("Sheet", base, "sheet"), ("Edit", f"{base}/edit", "edit"), ("Prompt", f"{base}/prompt", "prompt")]
    items += [("Start a campaign", "/ui/new", "new"), ("Check a ruleset", "/ui/check", "check")]
    if ctx is not None and ctx.options.api_key is not None:
        items.append(("Sign out", "/ui/logout", "logout"))
    return [{"label": label, "href": href, "here": key == here} for label, href, key in items]


def page(template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    # a lone surrogate (a reply's or a client's text that was not UTF-8) is shown as "?", not a 500
    html = render_page(template, context).encode("utf-8", "replace")
    return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})


def problem_page(status: int, title: str, message: str) -> HTMLResponse:
    return page("sheet.html.j2", {"title": title, "ruleset": "", "characters": [], "party": None, "clocks": [],
                                  "clocks_enabled": False, "receipts": None, "campaign": None, "turn": None,
                                  "note": message, "nav": nav(None, None, ""), "controls": False}, status)


def sheet_page(ctx: ServerContext, c: Campaign, problems: Mapping[str | None, Sequence[Problem]] | None = None,
               status: int = 200) -> HTMLResponse:
    """The game sheet at the campaign's newest reply, with the players' edits waiting for the next one, and each
    sheet's hand edits (issue 27 item 2); `problems` of a refused hand edit, by card name (None: the party)."""
    point = newest_point(ctx, c)
    shown = point.newest
    assert shown is not None
    state, ids, found = point.state, Ids("ctl-"), problems or {}
    controls: dict[str | None, dict[str, Any]] = {}
    rest: dict[str | None, Sequence[Problem]] = {}  # the problems no control shows (a box that is not there)
    for name in (*state.characters, *((None,) if c.rs.party is not None else ())):
        controls[name] = ctl = play_context(edit_form(c.rs, state, name, found.get(name, ())).play, ids)
        on_controls = {*ctl, *(b["path"] for w in ctl.values() for b in w.get("boxes", ()))}
        rest[name] = [p for p in found.get(name, ()) if p.path not in on_controls]
    base = f"/ui/c/{quote(c.name, safe='')}"
    version = f"{ctx.latest.version(c.name)}.{page_stamp(c, point)}"
    values = sheet_context(c.rs, state, receipts=shown.receipts, title=f"{c.name} — {c.rs.name}", campaign=c.name,
                           turn=shown.turn, note=point.closed or shown.note, nav=nav(ctx, c.name, "sheet"),
                           controls=controls, problems=rest, base=base, waiting=len(point.waiting.edits),
                           start=point.start,
                           refresh={"version": version, "url": f"{base}/version", "script": "/ui/" + REFRESH_SCRIPT,
                                    "editor": "/ui/" + EDITOR_SCRIPT})
    return page("sheet.html.j2", values, status)


def form_ruleset(content_type: str, body: bytes) -> tuple[bytes | None, str, str | None]:
    """The ruleset in a form POST (multipart: `file` first, else `ruleset`; or url-encoded `ruleset`):
    its bytes, a name for it, and the pasted text to show again (an uploaded file is not echoed)."""
    parts = {p.name: p for p in form_parts(content_type, body)}
    upload = parts.get("file")
    if upload is not None and upload.filename is not None and upload.data.strip():
        return upload.data, upload.filename or "uploaded file", None
    pasted = parts.get("ruleset")
    if pasted is not None and pasted.data.strip():
        return pasted.data, "pasted ruleset", pasted.data.decode("utf-8", "replace")
    return None, "", None


def page_routes(ctx: ServerContext) -> list[Route]:
    latest = ctx.latest

    def campaign(name: str) -> Campaign | HTMLResponse:
        """The campaign, or the page that says why there is none (`ServerContext.campaign`'s 404 or 500)."""
        try:
            return ctx.campaign(name)
        except Refused as r:
            if r.status == 404:
                return problem_page(404, "Unknown campaign", f"There is no campaign named {name!r}.")
            return problem_page(r.status, f"Campaign {name}", r.message)

    async def index(request: Request) -> Response:
        rows = [{"name": r.name, "characters": r.characters} for r in ctx.store.campaigns()]
        return page("index.html.j2", {"campaigns": rows, "nav": nav(ctx, None, "index")})

    async def css(request: Request) -> Response:
        return Response(stylesheet(), media_type="text/css")

    async def script(request: Request) -> Response:
        return Response(refresh_script(), media_type="text/javascript")

    async def sheet(request: Request) -> Response:
        c = campaign(request.path_params["campaign"])
        if isinstance(c, HTMLResponse):
            return c
        return sheet_page(ctx, c)

    async def version(request: Request) -> Response:
        c = campaign(request.path_params["campaign"])
        if isinstance(c, HTMLResponse):
            return Response("unknown campaign", status_code=c.status_code, media_type="text/plain")
        v = f"{latest.version(c.name)}.{page_stamp(c, newest_point(ctx, c))}"
        etag = f'"{v}"'
        headers = {"etag": etag, "cache-control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(v, media_type="text/plain", headers=headers)

    async def prompt(request: Request) -> Response:
        c = campaign(request.path_params["campaign"])
        if isinstance(c, HTMLResponse):
            return c
        sent = latest.prompts.get(c.name)
        try:
            shown = prompt_context(sent.prompt, sent.budget) if sent is not None else None
        except NotCounted:  # the upstream's counts of that prompt have left the bounded table since: count locally
            shown = prompt_context(sent.prompt, replace(sent.budget, tokenizer=None)) if sent is not None else None
        return page("prompt.html.j2", {"title": c.name, "campaign": c.name, "ruleset": c.rs.name, "prompt": shown,
                                       "nav": nav(ctx, c.name, "prompt")})

    async def ruleset_check(request: Request) -> Response:
        data: bytes | None = None
        source, pasted = "", None
        if request.method == "POST":
            form = await body_within(request, MAX_RULESET_FORM)
            if form is None:
                return problem_page(413, "Ruleset checker", f"The form is over {MAX_RULESET_FORM} bytes.")
            data, source, pasted = await run_in_threadpool(form_ruleset, request.headers.get("content-type", ""),
                                                           form)
        # up to 4 MB parsed and validated: in a worker thread, so chat requests are not held up meanwhile
        inspected = await run_in_threadpool(inspection_context, data, source)
        return page("check.html.j2", {**inspected, "result": inspected, "pasted": pasted,
                                      "nav": nav(ctx, None, "check")})

    return [Route("/ui", index), Route("/ui/", index), Route("/ui/" + STYLESHEET, css),
            Route("/ui/" + REFRESH_SCRIPT, script), Route("/ui/check", ruleset_check, methods=["GET", "POST"]),
            Route("/ui/c/{campaign}", sheet), Route("/ui/c/{campaign}/version", version),
            Route("/ui/c/{campaign}/prompt", prompt)]
