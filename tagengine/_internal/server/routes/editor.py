"""The sheet editor's pages and the game sheet's hand edits (docs/editor.md):

    GET  /ui/c/{campaign}/edit                  on to the first character's sheet
    GET  /ui/c/{campaign}/edit/{who}            a character's sheet in the editor's form
    POST /ui/c/{campaign}/edit/{who}            the form saved (303 back to it), or shown again with its problems
    POST /ui/c/{campaign}/draft/{who}           what the form re-computes as it is typed (JSON, for its script)
    GET  /ui/c/{campaign}/party                 the party sheet's Edit, opened at its revision (PARTY-35, 36)
    POST /ui/c/{campaign}/party                 saved; opened before a newer save: 409, the newer sheet shown and
                                                the draft kept (PARTY-37)
    POST /ui/c/{campaign}/party/draft
    POST /ui/c/{campaign}/play/{who}            a hand edit from the game sheet (a box, a state, a pool...)
    POST /ui/c/{campaign}/party/play

Every form works without script: it posts and is answered with a redirect, or with the page again, each problem
next to its input and everything typed kept. Edits are made at the campaign's newest reply and wait for the next
(server/edits/points.py). Handlers run on the event loop's thread: a sheet's edit is a few milliseconds of work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ...commands.sheet_edits import ECHO_CHARS, ECHO_PATH, Edited, echo_bound, echoed
from ...errors import Problem
from ...pages.game_sheet import party_context
from ...pages.sheet_editor import draft_json, drafted, editor_context, posted_changes
from ...pages.templates import EDITOR_SCRIPT, editor_script
from ...sheet import view_party
from ...sheet.edit_paths import Change
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import Point, newest_point, save_edit
from ..errors import refusals_as_responses
from ..limits import MAX_EDIT_FORM
from ..memory.campaigns import Campaign
from ..wire.answers import json_response
from .base import form_fields, missing_sheet, nav, page, refusals_as_pages, route, sheet_page


def party_opened_at(posted: str | None) -> int | None:
    """The revision a party form was opened at (a hidden input): a whole number, else None."""
    return int(posted) if posted is not None and posted.isdigit() and len(posted) <= 9 else None


@refusals_as_pages("Sheet editor")
async def first_sheet(ctx: ServerContext, request: Request) -> Response:
    """On to the first character's sheet (a campaign's characters are its start's)."""
    c = ctx.campaign(request.path_params["campaign"])
    to = f"/ui/c/{quote(c.name, safe='')}/edit/{quote(c.start.characters[0], safe='')}"
    return RedirectResponse(to, status_code=303)


async def posted_at(ctx: ServerContext, request: Request,
                    post: bool) -> tuple[Campaign, Point, list[tuple[str, str]] | None]:
    """The campaign, its newest point and the form posted (None for a GET). The whole form is read before the
    campaign and its point are taken: a save whose body comes slowly is checked against the sheet as it is when it
    arrives, so a save made meanwhile is never overwritten unseen (PARTY-37). A 404 for a sheet the campaign does
    not have."""
    ctx.campaign(request.path_params["campaign"])  # an unknown campaign's answer, before a body is read
    fields = await form_fields(request, MAX_EDIT_FORM) if post else None
    c = ctx.campaign(request.path_params["campaign"])  # as it is once the body has come (a start made meanwhile)
    point = newest_point(ctx, c)
    if (missing := missing_sheet(c, point, request.path_params.get("who"))) is not None:
        raise missing
    return c, point, fields


@refusals_as_pages("Sheet editor")
async def editor_form(ctx: ServerContext, request: Request) -> Response:
    """A character's sheet (`who`), or the party's, in the editor: shown, or saved (303 back to it), or shown
    again with its problems and everything typed."""
    who = request.path_params.get("who")  # None: the party sheet
    c, point, fields = await posted_at(ctx, request, request.method == "POST")
    if fields is None:
        return editor_page(ctx, c, point, who, saved=request.query_params.get("saved"),
                           made=request.query_params.get("made") is not None)
    posted = posted_changes(fields)
    opened = None
    if who is None:
        opened = party_opened_at(posted.revision)
        if opened is None:
            problem = Problem("revision", "wrong-type", "the party's Edit names the revision it was opened at; "
                              "open it again", echoed(posted.revision, ECHO_CHARS))
            return editor_page(ctx, c, point, who, edited=Edited(point.state, problems=(problem,)),
                               changes=posted.changes, was=posted.was)
    edited = save_edit(ctx, c, point, who, posted.changes, opened)
    if edited.ok:
        return RedirectResponse(f"{request.url.path}?saved={len(edited.changes)}", status_code=303)
    return editor_page(ctx, c, point, who, edited=edited, changes=posted.changes, was=posted.was)


@refusals_as_responses
async def draft_values(ctx: ServerContext, request: Request) -> Response:
    """What the editor's form re-computes as it is typed (JSON, for its script)."""
    c, point, fields = await posted_at(ctx, request, True)
    who = request.path_params.get("who")
    name = None if who is None else point.state.character(who)
    return json_response(draft_json(c.rs, point.state, name, posted_changes(fields or []).changes))


@refusals_as_pages("Game sheet")
async def hand_edit(ctx: ServerContext, request: Request) -> Response:
    """A hand edit from the game sheet (a box, a state, a pool...): saved (303 to the sheet), or the sheet again
    with its problems."""
    c, point, fields = await posted_at(ctx, request, True)
    who = request.path_params.get("who")
    name = None if who is None else point.state.character(who)
    edited = save_edit(ctx, c, point, name, hand_edits(fields or []))
    if edited.ok:
        return RedirectResponse(f"/ui/c/{quote(c.name, safe='')}", status_code=303)
    return sheet_page(ctx, c, {name: edited.problems}, 422)


async def editor_script_file(request: Request) -> Response:
    return Response(editor_script(), media_type="text/javascript")


def editor_routes(ctx: ServerContext) -> list[Route]:
    base = "/ui/c/{campaign}"  # a character's name ends the path: it may hold a slash (`path`)
    return [route("/ui/" + EDITOR_SCRIPT, editor_script_file),
            route(f"{base}/edit", first_sheet, ctx),
            route(f"{base}/edit/{{who:path}}", editor_form, ctx, methods=["GET", "POST"]),
            route(f"{base}/draft/{{who:path}}", draft_values, ctx, methods=["POST"]),
            route(f"{base}/play/{{who:path}}", hand_edit, ctx, methods=["POST"]),
            route(f"{base}/party", editor_form, ctx, methods=["GET", "POST"]),
            route(f"{base}/party/draft", draft_values, ctx, methods=["POST"]),
            route(f"{base}/party/play", hand_edit, ctx, methods=["POST"])]


def hand_edits(fields: Sequence[tuple[str, str]]) -> list[Change]:
    """A hand edit's changes from the game sheet's small forms: `path=value` (a pool, a state picked, a condition
    switched, a note), or a wound box's button, `mark=<path>` with the form's `kind`, `clear=<path>`."""
    kind = next((v for k, v in reversed(fields) if k == "kind"), "")
    out = []
    for k, v in fields:
        if k == "mark":
            out.append(Change("set", v, kind))
        elif k == "clear":
            out.append(Change("set", v, ""))
        elif k != "kind" and not k.startswith("_"):
            out.append(Change("set", k, v))
    return out


def editor_page(ctx: ServerContext, c: Campaign, point: Point, who: str | None, *, edited: Edited | None = None,
                changes: Sequence[Change] = (), was: dict[str, str] | None = None, saved: str | None = None,
                made: bool = False) -> HTMLResponse:
    """The editor's page at `point`: the form as it stands, or, after a refused save, the draft (what was typed,
    each problem on its input) over the sheet as it stands now, with the newer party sheet shown when the save
    was stale (PARTY-37)."""
    state, problems = point.state, edited.problems if edited is not None else ()
    sets = [x for x in changes if x.op == "set"]  # a row's Add, Move, Delete or Roll is done only with a save
    shown, _ = drafted(c.rs, state, who, sets) if problems else (state, ())
    form = edit_form(c.rs, shown, who, problems)
    changed = {x.path for x in sets}
    # the values the player's form was opened at, each as long as a value there can be (a value past it was
    # never shown, so it is cut as a refused value is: SEC-14)
    kept = {k: echoed(v, echo_bound(c.rs, k, who is None)) for k, v in (was or {}).items() if k in changed}
    stale = any(p.code == "stale-revision" for p in problems)
    values = editor_context(c.rs, form, was=kept or None)
    quoted = quote(c.name, safe="")
    named = quote(form.who, safe="")
    here = f"/ui/c/{quoted}/party" if who is None else f"/ui/c/{quoted}/edit/{named}"
    tabs = [{"label": n, "href": f"/ui/c/{quoted}/edit/{quote(n, safe='')}", "here": n == form.who and who is not None}
            for n in state.characters]
    if c.rs.file.party is not None:
        tabs.append({"label": c.rs.file.party.label, "href": f"/ui/c/{quoted}/party", "here": who is None})
    context: dict[str, Any] = {
        "title": f"{form.who} — {c.name}", "campaign": c.name, "ruleset": c.rs.name, "form": values, "tabs": tabs,
        "action": here, "draft": f"/ui/c/{quoted}/party/draft" if who is None else f"/ui/c/{quoted}/draft/{named}",
        "sheet_url": f"/ui/c/{quoted}", "start": point.start,
        "saved": saved, "made": made, "waiting": len(point.waiting.edits), "closed": point.closed,
        "stale": None, "nav": nav(ctx, c.name, "edit"), "script": "/ui/" + EDITOR_SCRIPT,
        "not_done": next((echoed(x.key, ECHO_PATH) for x in changes if x.op != "set"), None) if problems else None,
    }
    if stale:
        pv = view_party(c.rs, state)
        assert pv is not None
        context["stale"] = party_context(c.rs, pv, state.party_revision)
    status = 409 if stale else 422 if problems else 200
    return page("editor.html.j2", context, status)
