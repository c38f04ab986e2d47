"""The editor's JSON API (docs/editor.md, "The JSON API"): a character's or the party's
editable sheet with its form, an edit saved, a draft's re-computed values. Under `/tagengine/api/c/{campaign}`:

    GET  ""                         the campaign: its characters, its party sheet, the point the API edits at
    GET  /characters/{who}          a character's sheet: its form (`FormView.to_json()`) and play controls
    GET  /party                     the party sheet's, with its revision
    POST /read/characters/{who}     the same at the point a chat's history names: {"messages": [...]}
    POST /read/party
    POST /characters/{who}          an edit: {"changes": {...} or [...], "messages"?: [...]}
    POST /party                     {"changes": ..., "revision": N, "messages"?: [...]}: 409 when stale
    POST /draft/characters/{who}    what a draft re-computes (derived values, check numbers, hiding, chips)
    POST /draft/party

A sheet is named `characters/{who}` (the character's name, URL-encoded; it ends the path, so it may hold a
slash) or `party`; `read/` and `draft/` go before it.

Without `messages` the point is the campaign's newest reply, as the pages show it; with them, the state after
that history (the SillyTavern extension sends the chat on screen). Every answer that refuses an edit
carries the same problems (path, code, message, value) as the pages, and the form they sit on. Every route that
changes anything is a POST. With --api-key, `Authorization: Bearer KEY` (ApiKeyAuth), as for the chat routes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...commands.sheet_edits import ECHO_CHARS, Edited, echoed
from ...errors import Problem
from ...pages.sheet_editor import draft_json
from ...sheet.edit_paths import Change, change_of, parse_change
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import Point, history_point, newest_point, save_edit
from ..errors import refusals_as_responses
from ..limits import LOOP_CHARS
from ..memory.campaigns import Campaign
from ..turn.request import chat_of
from ..wire.answers import json_response
from ..wire.body import object_body, read_body
from ..wire.chat_completions import error_doc
from .base import api_path, missing_sheet, route

KEYS = ("changes", "revision", "messages", "chat")


async def api_body(ctx: ServerContext, request: Request) -> dict[str, Any]:
    """The body: a JSON object of `changes`, `revision`, `messages` and `chat` only, else a 400 naming why; read
    in a worker thread past LOOP_CHARS bytes (a value of megabytes, to be refused, is not parsed on the loop)."""
    raw = await read_body(request)
    return object_body(raw, KEYS) if len(raw) <= LOOP_CHARS else await ctx.workers.run(object_body, raw, KEYS)


async def point_of(ctx: ServerContext, request: Request, body: dict[str, Any]) -> tuple[Campaign, Point]:
    """The campaign the path names and the point an edit is made at: the history's, else the newest reply's."""
    c = ctx.users_campaign(request.path_params["campaign"], request.headers)
    if "messages" in body:
        return c, await history_point(ctx, c, body["messages"], chat_of(body.get("chat")))
    return c, newest_point(ctx, c)


async def sheet_point(ctx: ServerContext, request: Request, body: dict[str, Any]) -> tuple[Campaign, Point, str | None]:
    """`point_of`, and the sheet the path names (None: the party's), a 404 when the campaign has no such sheet."""
    c, point = await point_of(ctx, request, body)
    who = request.path_params.get("who")
    if (missing := missing_sheet(c, point, who)) is not None:
        raise missing
    return c, point, who


@refusals_as_responses
async def api_campaign(ctx: ServerContext, request: Request) -> Response:
    c, point = await point_of(ctx, request, {})
    party = c.rs.file.party
    return json_response({"campaign": c.name, "ruleset": c.rs.name, "characters": list(point.state.characters),
                          "party": None if party is None else {"label": party.label,
                                                               "revision": point.state.party_revision},
                          "at": point.to_json()})


@refusals_as_responses
async def api_sheet(ctx: ServerContext, request: Request) -> Response:
    body = await api_body(ctx, request) if request.method == "POST" else {}
    c, point = await point_of(ctx, request, body)
    return json_response({"at": point.to_json(), "form": form_json(c, point, request.path_params.get("who"))})


@refusals_as_responses
async def api_edit(ctx: ServerContext, request: Request) -> Response:
    body = await api_body(ctx, request)
    c, point, who = await sheet_point(ctx, request, body)
    changes = changes_of(body.get("changes"))
    revision = body.get("revision")
    if who is None and (type(revision) is not int or revision < 0):
        return refused_answer(c, point, None, Edited(point.state, problems=(Problem(
            "revision", "wrong-type", "a party edit names the revision its form was opened at, a whole number",
            echoed(revision, ECHO_CHARS)),)))
    edited = save_edit(ctx, c, point, who, changes, revision if who is None else None)
    if not edited.ok:
        return refused_answer(c, point, who, edited)
    after = newest_point(ctx, c) if "messages" not in body else await history_point(ctx, c, body["messages"],
                                                                                     chat_of(body.get("chat")))
    return json_response({"ok": True, "changes": [{"op": x.op, "path": x.path, "value": x.value}
                                                  for x in edited.changes],
                          "rolled": [{"path": p, "total": t} for p, t in edited.rolled], "at": after.to_json(),
                          "form": form_json(c, after, who)})


@refusals_as_responses
async def api_draft(ctx: ServerContext, request: Request) -> Response:
    body = await api_body(ctx, request)
    c, point, who = await sheet_point(ctx, request, body)
    changes = [x for x in changes_of(body.get("changes")) if isinstance(x, Change)]
    return json_response(draft_json(c.rs, point.state, who, changes))


def edit_api_routes(ctx: ServerContext) -> list[Route]:
    at = api_path("", "{campaign}")
    character = "characters/{who:path}"  # the name ends the path: it may hold a slash
    return [route(at, api_campaign, ctx),
            route(f"{at}/{character}", api_sheet, ctx),
            route(f"{at}/{character}", api_edit, ctx, methods=["POST"]),
            route(f"{at}/read/{character}", api_sheet, ctx, methods=["POST"]),
            route(f"{at}/draft/{character}", api_draft, ctx, methods=["POST"]),
            route(f"{at}/party", api_sheet, ctx),
            route(f"{at}/party", api_edit, ctx, methods=["POST"]),
            route(f"{at}/read/party", api_sheet, ctx, methods=["POST"]),
            route(f"{at}/draft/party", api_draft, ctx, methods=["POST"])]


def changes_of(raw: Any) -> list[Any]:
    """An edit's changes: an object of form keys and values (`{"fields.oath": "…", "add:lists.gear": null}`), or
    a list of `{"op", "path", "value"}` objects or `key=value` strings. Anything else stays as it came, for the
    edit to refuse as `wrong-type` by name."""
    if isinstance(raw, dict):
        return [change_of(k, v) for k, v in raw.items()]
    if isinstance(raw, list):
        out: list[Any] = []
        for item in raw:
            if isinstance(item, str):
                out.append(parse_change(item))
            elif isinstance(item, dict) and isinstance(item.get("path"), str) and set(item) <= {"op", "path",
                                                                                                 "value"}:
                op = item.get("op", "set")
                out.append(Change(op if isinstance(op, str) else repr(op), item["path"], item.get("value")))
            else:
                out.append(item)
        return out
    return [raw]


def form_json(c: Campaign, point: Point, who: str | None, problems: tuple[Problem, ...] = ()) -> dict[str, Any]:
    """The form at `point` (`who` None: the party's); a 404 for a character or a party sheet not there."""
    if (missing := missing_sheet(c, point, who)) is not None:
        raise missing
    return edit_form(c.rs, point.state, who, problems).to_json()


def refused_answer(c: Campaign, point: Point, who: str | None, edited: Edited) -> Response:
    """A refused edit: 409 with the newer sheet for a stale party save (PARTY-37), else 422; the problems, and
    the form they sit on, showing what was typed."""
    stale = any(p.code == "stale-revision" for p in edited.problems)
    status, code = (409, "stale_revision") if stale else (422, "invalid_edit")
    first = edited.problems[0]
    return json_response({"ok": False, **error_doc(f"{first.path}: {first.message}", code),
                          "problems": [p.to_json() for p in edited.problems],
                          "form": form_json(c, point, who, edited.problems)}, status)
