"""The editor's JSON API (issue 27 item 4; docs/editor.md, "The JSON API"): a character's or the party's
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
that history (a SillyTavern extension sends the chat on screen, issue 28). Every answer that refuses an edit
carries the same problems (path, code, message, value) as the pages, and the form they sit on. Every route that
changes anything is a POST. With --api-key, `Authorization: Bearer KEY` (ApiKeyAuth), as for the chat routes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...commands.sheet_edits import Edited
from ...errors import Problem
from ...pages.sheet_editor import draft_json
from ...sheet.edit_paths import Change, change_of, parse_change
from ...sheet.form import edit_form
from ..context import ServerContext
from ..edits.points import Point, history_point, newest_point, save_edit
from ..errors import Refused, refusals_as_responses
from ..memory.campaigns import Campaign
from ..turn.request import object_body, read_body
from ..wire.chat_completions import error_doc
from ..wire.json_codec import dumps

PREFIX = "/tagengine/api/c/{campaign}"
KEYS = ("changes", "revision", "messages")


def edit_api_routes(ctx: ServerContext) -> list[Route]:

    async def point_of(request: Request, body: dict[str, Any]) -> tuple[Campaign, Point]:
        c = ctx.campaign(request.path_params["campaign"])
        if "messages" in body:
            return c, await history_point(ctx, c, body["messages"])
        return c, newest_point(ctx, c)

    @refusals_as_responses
    async def campaign(request: Request) -> Response:
        c, point = await point_of(request, {})
        party = c.rs.file.party
        return json_answer(200, {"campaign": c.name, "ruleset": c.rs.name, "characters": list(point.state.characters),
                            "party": None if party is None else {"label": party.label,
                                                                 "revision": point.state.party_revision},
                            "at": at(point)})

    @refusals_as_responses
    async def read(request: Request) -> Response:
        body = await api_body(request) if request.method == "POST" else {}
        c, point = await point_of(request, body)
        who = request.path_params.get("who")
        return json_answer(200, {"at": at(point), "form": form_json(c, point, who)})

    @refusals_as_responses
    async def save(request: Request) -> Response:
        body = await api_body(request)
        c, point = await point_of(request, body)
        who = request.path_params.get("who")
        sheet_there(c, point, who)
        changes = changes_of(body.get("changes"))
        revision = body.get("revision")
        if who is None and (type(revision) is not int or revision < 0):
            return refused_answer(c, point, None, Edited(point.state, problems=(Problem(
                "revision", "wrong-type", "a party edit names the revision its form was opened at, a whole number "
                "(PARTY-36)", revision),)))
        edited = save_edit(ctx, c, point, who, changes, revision if who is None else None)
        if not edited.ok:
            return refused_answer(c, point, who, edited)
        after = newest_point(ctx, c) if "messages" not in body else await history_point(ctx, c, body["messages"])
        return json_answer(200, {"ok": True, "changes": [{"op": x.op, "path": x.path, "value": x.value}
                                                    for x in edited.changes],
                            "rolled": [{"path": p, "total": t} for p, t in edited.rolled], "at": at(after),
                            "form": form_json(c, after, who)})

    @refusals_as_responses
    async def draft(request: Request) -> Response:
        body = await api_body(request)
        c, point = await point_of(request, body)
        who = request.path_params.get("who")
        sheet_there(c, point, who)
        changes = [x for x in changes_of(body.get("changes")) if isinstance(x, Change)]
        return json_answer(200, draft_json(c.rs, point.state, who, changes))

    character = "characters/{who:path}"
    return [Route(PREFIX, campaign, methods=["GET"]),
            Route(f"{PREFIX}/{character}", read, methods=["GET"]),
            Route(f"{PREFIX}/{character}", save, methods=["POST"]),
            Route(f"{PREFIX}/read/{character}", read, methods=["POST"]),
            Route(f"{PREFIX}/draft/{character}", draft, methods=["POST"]),
            Route(f"{PREFIX}/party", read, methods=["GET"]),
            Route(f"{PREFIX}/party", save, methods=["POST"]),
            Route(f"{PREFIX}/read/party", read, methods=["POST"]),
            Route(f"{PREFIX}/draft/party", draft, methods=["POST"])]


def json_answer(status: int, doc: dict[str, Any]) -> Response:
    return Response(dumps(doc), status_code=status, media_type="application/json",
                    headers={"cache-control": "no-store"})


async def api_body(request: Request) -> dict[str, Any]:
    """The body: a JSON object of `changes`, `revision` and `messages` only, else a 400 naming why."""
    return object_body(await read_body(request), KEYS)


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


def at(point: Point) -> dict[str, Any]:
    """Where an edit goes: the chain key, the turn (the newest reply's, for a point without a history), whether
    it makes the campaign's start (before the first reply), and how many edits wait there for the next reply."""
    return {"key": point.key, "turn": None if point.newest is None else point.newest.turn, "start": point.start,
            "waiting": len(point.waiting.edits), "revision": point.state.party_revision}


def sheet_there(c: Campaign, point: Point, who: str | None) -> None:
    """A 404 for a character (`who`) or a party sheet (None) the campaign does not have."""
    if who is None and c.rs.party is None:
        raise Refused(404, f"campaign {c.name!r} has no party sheet", "party_not_found")
    if who is not None and point.state.character(who) is None:
        raise Refused(404, f"campaign {c.name!r} has no character {who[:80]!r}", "character_not_found")


def form_json(c: Campaign, point: Point, who: str | None, problems: tuple[Problem, ...] = ()) -> dict[str, Any]:
    """The form at `point` (`who` None: the party's); a 404 for a character or a party sheet not there."""
    sheet_there(c, point, who)
    return edit_form(c.rs, point.state, who, problems).to_json()


def refused_answer(c: Campaign, point: Point, who: str | None, edited: Edited) -> Response:
    """A refused edit: 409 with the newer sheet for a stale party save (PARTY-37), else 422; the problems, and
    the form they sit on, showing what was typed."""
    stale = any(p.code == "stale-revision" for p in edited.problems)
    status, code = (409, "stale_revision") if stale else (422, "invalid_edit")
    first = edited.problems[0]
    return json_answer(status, {"ok": False, **error_doc(f"{first.path}: {first.message}", code),
                           "problems": [p.to_json() for p in edited.problems],
                           "form": form_json(c, point, who, edited.problems)})
