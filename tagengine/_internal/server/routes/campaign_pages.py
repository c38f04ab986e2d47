"""Starting a campaign from the pages: `GET /ui/new` is the form, `POST /ui/new` makes the
campaign and goes on (303) to its first character's sheet in the editor, where the sheets are filled in before
the first reply (they are the campaign's start then: server/edits/points.py, ED-14).

A ruleset comes from the server's folder (`serve --rulesets DIR`: its `*.json` files, each read again when it
changes) or is uploaded (or pasted) and inspected as `/ui/check` does; an uploaded one that loads is kept in the
data folder (`rulesets/<sha256>.json`), since a campaign reads its ruleset file again when it changes. Parsing a
ruleset and listing the folder run in a worker thread. The pages start no more campaigns past CAMPAIGNS_KEPT and
keep no upload past RULESETS_KEPT bytes of rulesets in all (`tagengine campaign remove NAME` frees both).

The JSON API starts one the same way from a folder's ruleset (STX-14), for a client that has no page to show,
such as the SillyTavern extension: `GET /tagengine/api/rulesets` lists the folder, `POST /tagengine/api/campaigns`
(`{"name", "ruleset": a file of the folder, "characters": [names]}`) makes the campaign, 201, or answers 422 with
the problems by field (409 when the name is taken, by another client meanwhile too: the store's insert decides).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...errors import TagengineError
from ...files import read_file
from ...pages.campaign_start import RulesetFile, StartForm, checked_start, start_context
from ...ruleset import Ruleset
from ...ruleset.source import MAX_BYTES
from ...samples import sample_path, samples_dir
from ..context import ServerContext
from ..errors import Refused, refusals_as_responses
from ..limits import (
    CAMPAIGNS_KEPT,
    MAX_RULESET_FILE,
    MAX_RULESET_FORM,
    MAX_START_BODY,
    MIB,
    RULESETS_KEPT,
    RULESETS_LISTED,
)
from ..memory.campaigns import RULESETS_FOLDER, digest_of, kept_ruleset, new_campaign
from ..memory.store import NAME
from ..wire.answers import json_response
from ..wire.body import object_body, read_body
from ..wire.chat_completions import error_doc
from ..wire.forms import FormPost, post_of
from .base import api_path, nav, page, page_async, posted_parts, refusals_as_pages, route

log = logging.getLogger("tagengine.serve")


class Folder:
    """The rulesets of the server's folder (`serve --rulesets DIR`), each read again when its file changed; this
    server's reading of them, by file name. Listed in a worker thread."""

    def __init__(self, where: Path | None) -> None:
        self.where = where
        self.read: dict[str, tuple[tuple[int, int], RulesetFile]] = {}

    def files(self) -> list[RulesetFile]:
        if self.where is None:
            return []
        out = []
        for path in sorted(p for p in self.where.glob("*.json") if p.is_file())[:RULESETS_LISTED]:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            hit = self.read.get(path.name)
            if hit is None or hit[0] != stamp:
                hit = (stamp, read_ruleset_file(path))
                self.read[path.name] = hit
            out.append(hit[1])
        return out


@refusals_as_pages("Start a campaign")
async def new_campaign_page(ctx: ServerContext, folder: Folder, request: Request) -> Response:
    if request.method == "GET":
        values = start_context(StartForm(), await run_in_threadpool(folder.files), folder.where is not None)
        return page("new.html.j2", {**values, "nav": nav(ctx, None, "new")})
    post = post_of(await posted_parts(request, MAX_RULESET_FORM))
    listing = await run_in_threadpool(folder.files)
    form = await run_in_threadpool(check_post, post, listing)
    if not form.problems:
        made = await run_in_threadpool(make_campaign, ctx, form)  # the ruleset file read and parsed again
        if made is None:
            return RedirectResponse(f"/ui/c/{quote(form.name, safe='')}/edit/{quote(form.characters[0], safe='')}"
                                    "?made=1", status_code=303)
        form.problem("name", made)
    values = start_context(form, listing, folder.where is not None)
    # the inspection's problems and the pasted ruleset shown again: drawn in a worker thread
    return await page_async("new.html.j2", {**values, "nav": nav(ctx, None, "new")}, 422)


async def api_rulesets(ctx: ServerContext, folder: Folder, request: Request) -> Response:
    listing = await run_in_threadpool(folder.files)
    return json_response({"rulesets": [{"file": r.file, "name": r.name, "problem": r.problem} for r in listing]})


@refusals_as_responses
async def api_new_campaign(ctx: ServerContext, folder: Folder, request: Request) -> Response:
    body = object_body(await read_body(request, MAX_START_BODY), ("name", "ruleset", "characters"))
    name, chosen, names = body.get("name", ""), body.get("ruleset", ""), body.get("characters", [])
    if not isinstance(name, str) or not isinstance(chosen, str) or not isinstance(names, list) \
            or not all(isinstance(n, str) and "\n" not in n and "\r" not in n for n in names):
        raise Refused(400, "the body is {\"name\": text, \"ruleset\": text, \"characters\": [names, one line "
                           "each]}", "invalid_request")
    user = ctx.user_of(request.headers)  # the chat app's user (OW-6): the campaign is theirs from the start
    listing = await run_in_threadpool(folder.files)
    form = checked_start(name, "\n".join(names), chosen, listing, None, "", NAME)
    if not form.problems:
        made = await run_in_threadpool(make_campaign, ctx, form)
        if made is None:
            if user is not None:
                ctx.store.claim(form.name, user)
            return json_response({"campaign": form.name, "ruleset": form.chosen, "characters": form.characters}, 201)
        status = 409 if "exists already" in made else 500
        raise Refused(status, made, "campaign_exists" if status == 409 else "campaign_not_made")
    problems = [{"field": k, "message": m} for k, ms in form.problems.items() for m in ms]
    return json_response({**error_doc(problems[0]["message"], "invalid_campaign"), "problems": problems}, 422)


def campaign_page_routes(ctx: ServerContext) -> list[Route]:
    folder = Folder(ctx.options.rulesets)  # one reading of the folder for the page and the API
    return [route("/ui/new", new_campaign_page, ctx, folder, methods=["GET", "POST"]),
            route(api_path("rulesets"), api_rulesets, ctx, folder),
            route(api_path("campaigns"), api_new_campaign, ctx, folder, methods=["POST"])]


def read_ruleset_file(path: Path) -> RulesetFile:
    try:
        return RulesetFile(path.name, Ruleset.from_json(read_file(path, MAX_BYTES), str(path)).name)
    except (TagengineError, OSError, ValueError) as e:
        count = len(getattr(e, "problems", ())) or 1
        return RulesetFile(path.name, None, f"does not load ({count} problem{'' if count == 1 else 's'})")


def check_post(post: FormPost, listing: list[RulesetFile]) -> StartForm:
    upload = post.files.get("file")
    pasted = post.get("ruleset_text")
    given, source = None, ""
    if upload is not None and upload.data.strip():
        given, source = upload.data, upload.filename or "uploaded file"
    elif pasted.strip():
        given, source = pasted.encode("utf-8", "surrogatepass"), "pasted ruleset"
    return checked_start(post.get("name"), post.get("characters"), post.get("ruleset_file"), listing, given, source,
                         NAME)


def make_campaign(ctx: ServerContext, form: StartForm) -> str | None:
    """Make the campaign; None when made, else why not (its name was taken meanwhile, a file cannot be kept, the
    data folder holds CAMPAIGNS_KEPT campaigns, or RULESETS_KEPT bytes of rulesets without this one's)."""
    assert form.given is not None or ctx.options.rulesets is not None  # a folder file was chosen: there is one
    if any(r.name == form.name for r in ctx.store.campaigns()):  # before a ruleset is kept for it
        return f"a campaign named {form.name!r} exists already"
    if ctx.store.campaign_count() >= CAMPAIGNS_KEPT:
        return (f"This server keeps {CAMPAIGNS_KEPT} campaigns at most, and has them; its operator can remove one "
                "(tagengine campaign remove NAME).")
    bundled = form.given is None and ctx.options.rulesets is not None and \
        ctx.options.rulesets.resolve() == (samples_dir() / "rulesets").resolve()
    if form.given is not None or bundled:  # the installed package's own copy moves with an upgrade: keep ours (PK-3)
        try:
            given = form.given if form.given is not None else read_file(sample_path("rulesets", form.chosen),
                                                                          MAX_RULESET_FILE)
            if not room_for(ctx.options.data / RULESETS_FOLDER, given):
                return (f"This server keeps {RULESETS_KEPT // MIB} MiB of rulesets in its data folder at most, and "
                        "this one would pass it: ask its operator to remove a campaign (tagengine campaign remove "
                        "NAME).")
            ruleset = str(kept_ruleset(ctx.options.data, given))
        except OSError as e:
            log.error("cannot keep a ruleset in %s: %s", ctx.options.data, e)
            return "The server cannot keep the ruleset (see its log)."
    else:
        assert ctx.options.rulesets is not None
        ruleset = str(ctx.options.rulesets / form.chosen)
    try:
        new_campaign(ctx.store, form.name, ruleset, form.characters)
    except (ValueError, TagengineError, OSError) as e:
        return f"{e}"
    return None


def room_for(folder: Path, text: bytes) -> bool:
    """Whether the data folder's rulesets (`rulesets/*.json`) stay within RULESETS_KEPT bytes with `text` kept
    too: always when it is kept already (by its digest)."""
    if (folder / f"{digest_of(text)}.json").is_file():
        return True
    total = len(text)
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError):  # removed meanwhile
            total += path.stat().st_size
    return total <= RULESETS_KEPT
