"""`POST /tagengine/api/checks` (UNTR-11, U-7; docs/checks-in-serve.md, CK-15..CK-17): one check rolled against
the state a chat's history gives, the way the next `[check:]` tag in that chat would roll it. Also under
`/tagengine/api/c/{campaign}/checks`; the paths before the API had one scheme (`/tagengine/checks`,
`/c/{campaign}/tagengine/checks`) answer too, for one release.

The state comes from the same chain replay as chat completions (`ServerContext.replayed` over the same plain
history), so a check here and a check tag in the next reply see the very same sheet and dice. Nothing is
stored but the chain's own snapshots: the roll is an answer, not a reply, so it cannot join the chat's
history, and the dice do not move (CK-16).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...commands.check import KINDS, ORDER, RolledCheck, card, roll_tag
from ...tags import Tag
from ...tags.render import canonical
from ..context import ServerContext
from ..edits.points import waiting_state
from ..errors import Refused, refusals_as_responses
from ..limits import MAX_CHECK_VALUE
from ..memory.campaigns import Campaign
from ..turn.request import campaign_choice, chat_of, check_count, check_sizes, messages_of
from ..wire.answers import json_response
from ..wire.body import object_body, read_body
from .base import alias, api_path, route

KEYS = ORDER  # the tag's attributes, in the order its receipt writes them
# Refusals that name something the campaign does not have: 404 naming it; every other refusal is a 400.
NOT_FOUND = {"unknown-character": ("who", "character_not_found", "character"),
             "unknown-skill": ("skill", "skill_not_found", "skill"),
             "unknown-save": ("save", "save_not_found", "save"),
             "unknown-ability": ("ability", "ability_not_found", "ability")}


@refusals_as_responses
async def check_endpoint(ctx: ServerContext, request: Request) -> Response:
    """The check rolled at the state after the history (with --hide-tags its replies are narrations, mapped back
    as chat completions map them)."""
    body = object_body(await read_body(request), ("campaign", "messages", "check", "chat"))
    messages = messages_of(body.get("messages", []))
    check_count(messages)
    marked = await ctx.read_history(messages)  # each message checked here (S-27)
    tag = check_tag(body.get("check"))
    chosen = campaign_choice(marked, body.get("campaign"), request.path_params.get("campaign"), ctx.options.campaign)
    if chosen is None:
        raise Refused(400, "no campaign: name it in `campaign`, in a [tagengine: campaign=\"NAME\"] marker, "
                      "with the /c/NAME prefix, or start the server with --campaign", "campaign_missing")
    c = ctx.users_campaign(chosen[0], request.headers)
    history = marked.plain()
    check_sizes(messages, history)
    before = await ctx.replayed(c, history, ctx.hides(request.headers))  # narrations (OW-4)
    rolled = roll_tag(c.rs, waiting_state(ctx, c, before, chat_of(body.get("chat"))), tag)  # with the edits there
    headers = {"x-tagengine-campaign": c.name}
    if before.notes:
        headers["x-tagengine-history"] = "; ".join(before.notes)
    if rolled.result.result != "ok":
        raise refusal(tag, rolled)
    return json_response(answer(c, tag, rolled), headers=headers)


def check_routes(ctx: ServerContext) -> list[Route]:
    plain = route(api_path("checks"), check_endpoint, ctx, methods=["POST"])
    named = route(api_path("checks", "{campaign}"), check_endpoint, ctx, methods=["POST"])
    return [plain, named, alias("/tagengine/checks", plain), alias("/c/{campaign}/tagengine/checks", named)]


def check_tag(check: Any) -> Tag:
    """The `[check:]` tag the body's `check` object spells: string values, or integers for dc/difficulty."""
    if not isinstance(check, dict):
        raise Refused(400, "`check` must be an object such as {\"who\": \"Mira\", \"skill\": \"Ward\"}",
                      "invalid_check")
    for k, v in check.items():
        if k not in KEYS:
            raise Refused(400, f"check.{k}: unknown; a check holds {', '.join(KEYS)}", "invalid_check")
        if isinstance(v, bool) or not isinstance(v, str | int) or (isinstance(v, int) and k not in ("dc",
                                                                                                    "difficulty")):
            raise Refused(400, f"check.{k} must be text{' or a whole number' if k in ('dc', 'difficulty') else ''}, "
                          f"not {json.dumps(v)[:80]}", "invalid_check")
        if len(str(v)) > MAX_CHECK_VALUE:
            raise Refused(400, f"check.{k} is over {MAX_CHECK_VALUE} characters", "invalid_check")
    kinds = [k for k in KINDS if k in check]
    if len(kinds) != 1:
        raise Refused(400, "a check rolls exactly one of skill, ability or save"
                      + (f", not {' and '.join(kinds)}" if kinds else ""), "invalid_check")
    if "with" in check and kinds[0] == "ability":
        raise Refused(400, "check.with rolls a skill or a save with another ability, not an ability (CAP-3)",
                      "invalid_check")
    return Tag("check", tuple((k, str(check[k])) for k in KEYS if k in check))


def refusal(tag: Tag, rolled: RolledCheck) -> Refused:
    """UNTR-11: an untrained check the character cannot attempt is `skill_check_untrained`; a name the
    campaign does not know is a 404 naming it; any other refusal a 400 with its reason (docs/reasons.md)."""
    reason = rolled.result.reason or "refused"
    label = rolled.number.label if rolled.number is not None else None
    if reason == "untrained":
        return Refused(400, f"{rolled.who} cannot attempt {label}: untrained, and its untrained rule is `refuse`; "
                       "no dice were rolled (UNTR-9, UNTR-11)", "skill_check_untrained")
    if reason in NOT_FOUND:
        key, code, what = NOT_FOUND[reason]
        asked = tag.get(key) if tag.has(key) else tag.get("with")  # an unknown `with` ability
        where = f" for {rolled.who}" if rolled.who else ""
        return Refused(404, f"unknown {what} {asked!r}{where}", code, "not_found_error")
    return Refused(400, f"the check was refused: {reason} (docs/reasons.md)", f"check_{reason.replace('-', '_')}")


def answer(c: Campaign, tag: Tag, rolled: RolledCheck) -> dict[str, Any]:
    n = rolled.number
    assert n is not None  # an ok check has its number
    return {
        "campaign": c.name,
        "who": rolled.who,
        "check": {"kind": n.kind, "id": n.id, "label": n.label, "with": tag.get("with")},
        "result": rolled.result.result,
        "record": dict(rolled.result.record),
        "receipt": canonical("check", tag.attrs, rolled.result.attrs()),
        "dice": {"sides": rolled.sides, "faces": list(rolled.faces)},
        "target": rolled.target,
        "dc": rolled.dc,
        "outcome": rolled.outcome,
        "number": n.to_json(),
        "card": card(c.rs, rolled),
        "stored": False,
    }
