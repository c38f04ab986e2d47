"""The sheet editor's pages and the game sheet's hand edits (issue 27 items 1, 2, 5; docs/editor.md):

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
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ...commands.sheet_edits import Edited
from ...errors import Problem
from ...pages.game_sheet import party_context
from ...pages.sheet_editor import draft_json, drafted, editor_context, posted_changes
from ...pages.templates import EDITOR_SCRIPT, editor_script
from ...sheet import view_party
from ...sheet.edit_paths import Change
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import Point, newest_point, save_edit
from ..errors import Refused
from ..limits import MAX_EDIT_FORM
from ..memory.campaigns import Campaign
from ..turn.request import body_within
from ..wire.forms import read_form
from ..wire.json_codec import dumps
from .pages import nav, page, problem_page, sheet_page


def editor_routes(ctx: ServerContext) -> list[Route]:

    def campaign(request: Request) -> Campaign | HTMLResponse:
        name = request.path_params["campaign"]
        try:
            return ctx.campaign(name)
        except Refused as r:
            return problem_page(r.status, "Unknown campaign" if r.status == 404 else f"Campaign {name}",
                                f"There is no campaign named {name!r}." if r.status == 404 else r.message)

    async def form_post(request: Request) -> list[tuple[str, str]] | HTMLResponse:
        body = await body_within(request, MAX_EDIT_FORM)
        if body is None:
            return problem_page(413, "Sheet editor", f"The form is over {MAX_EDIT_FORM} bytes.")
        return read_form(request.headers.get("content-type", ""), body).fields

    async def first(request: Request) -> Response:
        c = campaign(request)
        if isinstance(c, HTMLResponse):
            return c
        first = c.start.characters[0]  # a campaign's characters are its start's
        return RedirectResponse(f"/ui/c/{quote(c.name, safe='')}/edit/{quote(first, safe='')}", status_code=303)

    async def sheet_editor(request: Request) -> Response:
        c = campaign(request)
        if isinstance(c, HTMLResponse):
            return c
        who = request.path_params.get("who")  # None: the party sheet
        point = newest_point(ctx, c)
        if (missing := missing_sheet(c, point, who)) is not None:
            return problem_page(404, "Sheet editor", missing)
        if request.method == "GET":
            return editor_page(ctx, c, point, who, saved=request.query_params.get("saved"),
                               made=request.query_params.get("made") is not None)
        fields = await form_post(request)
        if isinstance(fields, HTMLResponse):
            return fields
        posted = posted_changes(fields)
        opened = None
        if who is None:
            opened = revision_of(posted.revision)
            if opened is None:
                problem = Problem("revision", "wrong-type", "the party's Edit names the revision it was opened at "
                                  "(PARTY-36); open it again", posted.revision)
                return editor_page(ctx, c, point, who, edited=Edited(point.state, problems=(problem,)),
                                   changes=posted.changes, was=posted.was)
        edited = save_edit(ctx, c, point, who, posted.changes, opened)
        if edited.ok:
            n = len(edited.changes)
            return RedirectResponse(f"{request.url.path}?saved={n}", status_code=303)
        return editor_page(ctx, c, point, who, edited=edited, changes=posted.changes, was=posted.was)

    async def draft(request: Request) -> Response:
        c = campaign(request)
        if isinstance(c, HTMLResponse):
            return JSONResponse({"error": "unknown campaign"}, status_code=c.status_code)
        fields = await form_post(request)
        if isinstance(fields, HTMLResponse):
            return JSONResponse({"error": "the form is too large"}, status_code=413)
        who = request.path_params.get("who")
        point = newest_point(ctx, c)
        if (missing := missing_sheet(c, point, who)) is not None:
            return JSONResponse({"error": missing}, status_code=404)
        name = None if who is None else point.state.character(who)
        return Response(dumps(draft_json(c.rs, point.state, name, posted_changes(fields).changes)),
                        media_type="application/json", headers={"cache-control": "no-store"})

    async def play(request: Request) -> Response:
        c = campaign(request)
        if isinstance(c, HTMLResponse):
            return c
        fields = await form_post(request)
        if isinstance(fields, HTMLResponse):
            return fields
        who = request.path_params.get("who")
        point = newest_point(ctx, c)
        if (missing := missing_sheet(c, point, who)) is not None:
            return problem_page(404, "Game sheet", missing)
        name = None if who is None else point.state.character(who)
        edited = save_edit(ctx, c, point, name, hand_edits(fields))
        if edited.ok:
            return RedirectResponse(f"/ui/c/{quote(c.name, safe='')}", status_code=303)
        return sheet_page(ctx, c, {name: edited.problems}, 422)

    async def script(request: Request) -> Response:
        return Response(editor_script(), media_type="text/javascript")

    base = "/ui/c/{campaign}"  # a character's name ends the path: it may hold a slash (`path`)
    return [Route("/ui/" + EDITOR_SCRIPT, script),
            Route(f"{base}/edit", first),
            Route(f"{base}/edit/{{who:path}}", sheet_editor, methods=["GET", "POST"]),
            Route(f"{base}/draft/{{who:path}}", draft, methods=["POST"]),
            Route(f"{base}/play/{{who:path}}", play, methods=["POST"]),
            Route(f"{base}/party", sheet_editor, methods=["GET", "POST"]),
            Route(f"{base}/party/draft", draft, methods=["POST"]),
            Route(f"{base}/party/play", play, methods=["POST"])]


def missing_sheet(c: Campaign, point: Point, who: str | None) -> str | None:
    """Why there is no sheet to edit: a character (`who`) or a party sheet (None) the campaign does not have."""
    if who is None:
        return None if c.rs.party is not None else f"Campaign {c.name} has no party sheet."
    return None if point.state.character(who) is not None else f"Campaign {c.name} has no character {who!r}."


def revision_of(text: str | None) -> int | None:
    """The revision a party form was opened at (a hidden input): a whole number, else None."""
    return int(text) if text is not None and text.isdigit() and len(text) <= 9 else None


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
    kept = {k: v for k, v in (was or {}).items() if k in changed}  # the values the player's form was opened at
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
        "not_done": next((x.key for x in changes if x.op != "set"), None) if problems else None,
    }
    if stale:
        pv = view_party(c.rs, state)
        assert pv is not None
        context["stale"] = party_context(c.rs, pv, state.party_revision)
    status = 409 if stale else 422 if problems else 200
    return page("editor.html.j2", context, status)
