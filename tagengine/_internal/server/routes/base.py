"""What every route group shares, so a group imports this module and never another group (datasette's model: a
route table, one module per view, a shared base).

- `route(path, handler, *bound, methods=...)`: a handler is a module-level `async def` taking what it is bound to
  (the `ServerContext`, a group's own memo) before the request; no handler is a closure.
- `alias(old, route)`: an old path answering as the route does for one release, each answer saying where the API
  moved (`Deprecation`, `Link`), so a client written against it keeps working and can find the new path.
- `api_path(rest, campaign=None)`: the one URL scheme of the JSON API: `/tagengine/api/<rest>`, a campaign's
  under `/tagengine/api/c/<campaign>/<rest>`.
- `refusals_as_pages(title)`: the pages' twin of `errors.refusals_as_responses`: a `Refused` raised anywhere in a
  page's handler becomes the problem page that says why (an unknown campaign, a form too large).
- `nav`, `page`, `problem_page`, `sheet_page`: the pages' bar, a page answered, a problem said, the game sheet.
- `missing_sheet`: the one check that a campaign has the sheet a route names.
- `posted_parts`, `form_fields`: a page's form post, bounded (its bytes, its fields or parts: else a 413), read in
  a worker thread past LOOP_CHARS bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ParamSpec
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ...errors import Problem
from ...pages import render_page, sheet_context
from ...pages.sheet_editor import Ids, play_context
from ...pages.templates import EDITOR_SCRIPT, REFRESH_SCRIPT
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import Point, newest_point, page_stamp
from ..errors import Refused
from ..limits import LOOP_CHARS
from ..memory.campaigns import Campaign
from ..wire.body import body_within
from ..wire.forms import FormTooLarge, Part, form_parts, post_of

P = ParamSpec("P")
API = "/tagengine/api"
RouteHandler = Callable[..., Awaitable[Response]]


def route(path: str, handler: RouteHandler, *bound: object, methods: Sequence[str] = ("GET",)) -> Route:
    """`path` answered by `handler(*bound, request)`."""
    return Route(path, functools.partial(handler, *bound), methods=list(methods))


def alias(old: str, new: Route) -> Route:
    """`old` answering as `new` does, each answer marked as coming from a path that moved (RFC 9745's
    `Deprecation`, and a `Link` to the new path)."""
    endpoint = new.endpoint

    async def moved(request: Request) -> Response:
        response: Response = await endpoint(request)
        response.headers["deprecation"] = "true"
        response.headers["link"] = f'<{new.path}>; rel="successor-version"'
        return response

    return Route(old, moved, methods=sorted(new.methods or ()))


def api_path(rest: str, campaign: str | None = None) -> str:
    """A JSON API path: `rest` (no leading slash) under `/tagengine/api`, or a campaign's (a route pattern such as
    `{campaign}`, or a name, quoted)."""
    if campaign is None:
        return f"{API}/{rest}" if rest else API
    named = campaign if campaign.startswith("{") else quote(campaign, safe="")
    return f"{API}/c/{named}/{rest}" if rest else f"{API}/c/{named}"


def refusals_as_pages(title: str) -> Callable[[Callable[P, Awaitable[Response]]], Callable[P, Awaitable[Response]]]:
    """A page handler whose `Refused` becomes the problem page titled `title` (an unknown campaign: "Unknown
    campaign")."""

    def wrap(handler: Callable[P, Awaitable[Response]]) -> Callable[P, Awaitable[Response]]:
        @functools.wraps(handler)
        async def wrapped(*args: P.args, **kwargs: P.kwargs) -> Response:
            try:
                return await handler(*args, **kwargs)
            except Refused as r:
                said = "Unknown campaign" if r.code == "campaign_not_found" else title
                return problem_page(r.status, said, r.message[:1].upper() + r.message[1:] + ".")

        return wrapped

    return wrap


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


async def page_async(template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """`page`, rendered in a worker thread: for a page whose size grows with what a request sent."""
    return await run_in_threadpool(page, template, context, status)


def sheet_page(ctx: ServerContext, c: Campaign, problems: Mapping[str | None, Sequence[Problem]] | None = None,
               status: int = 200) -> HTMLResponse:
    """The game sheet at the campaign's newest reply, with the players' edits waiting for the next one, and each
    sheet's hand edits; `problems` of a refused hand edit, by card name (None: the party)."""
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


def missing_sheet(c: Campaign, point: Point, who: str | None) -> Refused | None:
    """The 404 for a character (`who`) or a party sheet (None) the campaign does not have; None when it has it."""
    if who is None:
        return None if c.rs.party is not None else Refused(404, f"campaign {c.name[:80]!r} has no party sheet",
                                                            "party_not_found", "not_found_error")
    if point.state.character(who) is not None:
        return None
    return Refused(404, f"campaign {c.name[:80]!r} has no character {who[:80]!r}", "character_not_found",
                   "not_found_error")


async def posted_parts(request: Request, limit: int) -> list[Part]:
    """A page's form post, part by part: at most `limit` bytes, MAX_FORM_FIELDS fields (url-encoded) or
    MAX_FORM_PARTS parts (multipart), else a 413 that says which (SEC-12). A body past LOOP_CHARS bytes is read
    in a worker thread, so the event loop answers other requests meanwhile."""
    body = await body_within(request, limit)
    if body is None:
        raise Refused(413, f"the form is over {limit} bytes", "request_too_large")
    kind = request.headers.get("content-type", "")
    try:
        return form_parts(kind, body) if len(body) <= LOOP_CHARS else await run_in_threadpool(form_parts, kind, body)
    except FormTooLarge as e:
        raise Refused(413, str(e), "request_too_large") from None


async def form_fields(request: Request, limit: int) -> list[tuple[str, str]]:
    """A page's form post as (name, value) pairs (`posted_parts`)."""
    return post_of(await posted_parts(request, limit)).fields
