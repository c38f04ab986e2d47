"""
title: tagengine sheet
author: tagengine
version: 0.1.0
license: MIT
required_open_webui_version: 0.12.0
description: The game of a tagengine chat under a reply (clocks, pools, party, receipts...), and a check rolled.
"""

# An Open WebUI Action Function (docs/open-webui.md). Install it with `tagengine openwebui install`, or paste this
# file into Admin Panel > Functions > New Function. It adds two buttons under each reply of a chat: "Game sheet"
# shows the game as that reply leaves it, "Roll a check" asks what to roll and shows the dice. Both ask tagengine's
# JSON API (POST /tagengine/api/state, POST /tagengine/api/checks) with the chat's messages up to that reply, so the
# sheet follows the branch on screen. It computes nothing itself and imports only what Open WebUI has: the
# standard library, pydantic and Starlette (under FastAPI).

from __future__ import annotations

import asyncio
import html
import json
import re
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, Field
from starlette.responses import HTMLResponse

CAMPAIGN_MODEL = "tagengine:"  # a campaign's model id, as tagengine's /v1/models lists it
MAX_ANSWER = 8 * 1024 * 1024  # bytes of tagengine's answer read at most
MAX_ASKED = 500  # characters of a check typed into the roll's box
KINDS = ("skill", "ability", "save")  # what a check may roll, tried in this order for a bare name
NAMED = ("who", "name", "op", "pool", "track", "state", "condition", "skill", "ability", "save")  # a tag's words
NOT_FOUND = {"skill_not_found", "ability_not_found", "save_not_found"}
STYLE = """<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;padding:8px;color:#222;background:#fff}
@media (prefers-color-scheme:dark){body{color:#ddd;background:#1e1e1e}.bar{background:#444}}
h3{margin:.2em 0;font-size:15px}h4{margin:.6em 0 .2em;font-size:14px}
.row{display:flex;gap:8px;align-items:center;margin:2px 0}.row span:first-child{min-width:9em}
.bar{flex:0 0 8em;height:8px;background:#ddd;border-radius:4px;overflow:hidden}
.bar i{display:block;height:100%;background:#c0392b}.muted{opacity:.7}.bad{color:#c0392b}
ul{margin:.2em 0;padding-left:1.2em}code{font-size:12px}
</style>"""


class Action:
    class Valves(BaseModel):
        tagengine_url: str = Field(
            default="http://127.0.0.1:5005", description="tagengine serve's address, as Open WebUI's server reaches it"
        )
        api_key: str = Field(default="", description="tagengine serve's --api-key (empty: none)")
        user_header: str = Field(
            default="X-OpenWebUI-User-Id",
            description="the header tagengine serve --user-header reads: the user's id is sent in it (empty: none)",
        )
        timeout: float = Field(default=30.0, description="seconds to wait for tagengine")

    actions = [{"id": "sheet", "name": "Game sheet"}, {"id": "roll", "name": "Roll a check"}]

    def __init__(self) -> None:
        self.valves = self.Valves()

    async def action(
        self,
        body: dict[str, Any],
        __user__: dict[str, Any] | None = None,
        __id__: str | None = None,
        __event_call__: Callable[[dict[str, Any]], Awaitable[Any]] | None = None,
    ) -> HTMLResponse:
        """The sheet (`__id__` "sheet") or a roll ("roll") for the reply the button is under."""
        asked = chat_request(body)
        if __id__ == "roll":
            if __event_call__ is None:
                return card("Roll a check", "<p>This Open WebUI cannot ask what to roll.</p>")
            typed = await __event_call__({"type": "input", "data": {
                "title": "Roll a check",
                "message": "Who rolls what, e.g. Cutter: Prowl (a skill, ability or save), or "
                           "who=Cutter skill=Prowl dc=12",
                "placeholder": "Cutter: Prowl"}})
            return await self.roll(asked, typed, __user__)
        return await self.sheet(asked, __user__)

    async def sheet(self, asked: dict[str, Any], user: dict[str, Any] | None) -> HTMLResponse:
        status, doc = await self.call("/tagengine/api/state", asked, user)
        if status != 200:
            return card("Game sheet", failed(status, doc))
        return card("Game sheet", sheet_html(doc))

    async def roll(self, asked: dict[str, Any], typed: Any, user: dict[str, Any] | None) -> HTMLResponse:
        check = read_check(typed)
        if isinstance(check, str):
            return card("Roll a check", f"<p class=bad>{html.escape(check)}</p>")
        kinds = [k for k in KINDS if k in check] or list(KINDS)
        name = check.pop("_name", None)
        status: int = 0
        doc: Any = {}
        for kind in kinds:  # a bare name: a skill, else an ability, else a save
            tried = {**check, kind: name} if name is not None else check
            status, doc = await self.call("/tagengine/api/checks", {**asked, "check": tried}, user)
            if status != 404 or error_code(doc) not in NOT_FOUND:
                break
        if status != 200:
            return card("Roll a check", failed(status, doc))
        return card("Roll a check", roll_html(doc))

    async def call(self, path: str, payload: dict[str, Any], user: dict[str, Any] | None) -> tuple[int, Any]:
        """tagengine's status and JSON answer (0 and a message when it cannot be reached)."""
        headers = {"Content-Type": "application/json", "X-Tagengine-Show": "narration"}
        if self.valves.api_key:
            headers["Authorization"] = f"Bearer {self.valves.api_key}"
        if self.valves.user_header and user and user.get("id"):
            headers[self.valves.user_header] = str(user["id"])
        url = self.valves.tagengine_url.rstrip("/") + path
        return await asyncio.to_thread(post_json, url, payload, headers, self.valves.timeout)


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """The state request for the reply an action is under: its chat's messages up to that reply (the branch on
    screen), role and text only; the campaign its model names; the chat's id."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    here = body.get("id")
    ids = [m.get("id") for m in messages]
    if here is not None and here in ids:
        messages = messages[: ids.index(here) + 1]
    out: dict[str, Any] = {"messages": [{"role": m.get("role"), "content": text_of(m.get("content"))}
                                        for m in messages if m.get("role") in ("system", "user", "assistant")]}
    model = body.get("model")
    if isinstance(model, str) and model.startswith(CAMPAIGN_MODEL):
        out["campaign"] = model[len(CAMPAIGN_MODEL):]
    if isinstance(body.get("chat_id"), str) and body["chat_id"]:
        out["chat"] = body["chat_id"][:256]
    return out


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class Unfollowed(urllib.request.HTTPRedirectHandler):
    """No redirect followed: urllib would send it on with every header, the key and the user's id too, to any
    host."""

    def redirect_request(self, *args: Any) -> None:
        return None  # the 3xx comes back as an HTTPError, said in `post_json`


OPENER = urllib.request.build_opener(Unfollowed)


def post_json(url: str, payload: dict[str, Any], headers: dict[str, str], timeout: float) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST")
    try:
        with OPENER.open(request, timeout=timeout) as got:  # the admin's own URL (a valve)
            return got.status, read_json(got.read(MAX_ANSWER + 1))
    except urllib.error.HTTPError as e:
        if 300 <= e.code < 400:
            return 0, {"error": {"message": f"{url} answered with a redirect, not followed (the key goes only to "
                                            "the valve's address): give tagengine serve's own address"}}
        return e.code, read_json(e.read(MAX_ANSWER + 1))
    except (OSError, ValueError) as e:
        return 0, {"error": {"message": f"tagengine cannot be reached at {url}: {e}"}}


def read_json(raw: bytes) -> Any:
    if len(raw) > MAX_ANSWER:
        return {"error": {"message": f"tagengine's answer is over {MAX_ANSWER} bytes"}}
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": {"message": "tagengine's answer is not JSON: is the URL tagengine serve's?"}}


def error_code(doc: Any) -> str | None:
    err = doc.get("error") if isinstance(doc, dict) else None
    return err.get("code") if isinstance(err, dict) else None


def failed(status: int, doc: Any) -> str:
    err = doc.get("error") if isinstance(doc, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    said = message if isinstance(message, str) else f"tagengine answered {status}"
    return f"<p class=bad>{html.escape(said)}</p>"


def read_check(typed: Any) -> dict[str, Any] | str:
    """What the roll's box holds as a check: `key=value` pairs (who, skill, ability, save, with, dc, difficulty),
    or `Who: name` (a bare name: `_name`); else why not, for the player."""
    if not isinstance(typed, str) or not typed.strip():
        return "Nothing to roll: type who rolls what, e.g. Cutter: Prowl."
    text = typed.strip()[:MAX_ASKED]
    if "=" in text:
        pairs = re.findall(r'(\w+)\s*=\s*("[^"]*"|\S+)', text)
        check: dict[str, Any] = {k.lower(): v.strip('"') for k, v in pairs}
        for k in ("dc", "difficulty"):
            if k in check and check[k].lstrip("-").isdigit():
                check[k] = int(check[k])
        return check if check else "Write key=value pairs, e.g. who=Cutter skill=Prowl."
    who, sep, name = text.partition(":")
    if not sep or not who.strip() or not name.strip():
        return "Write who rolls what, e.g. Cutter: Prowl."
    return {"who": who.strip(), "_name": name.strip()}


# Open WebUI frames an embed without same-origin access, so it cannot measure the page and leaves the frame short
# (the sheet cut off after its clocks); it sizes the frame to the height the page posts as `iframe:height`. Posted
# whenever the page's size changes (fonts, a theme), and once more on load. The body's own height, not the document's
# scroll height, which is never less than the frame: Open WebUI shows a button's next card in the same frame, and a
# short roll after a long sheet would keep the sheet's height.
FIT = ('<script>const fit=()=>parent.postMessage({type:"iframe:height",'
       'height:Math.ceil(document.body.getBoundingClientRect().height)},"*");'
       'new ResizeObserver(fit).observe(document.body);addEventListener("load",fit)</script>')


def card(title: str, inner: str) -> HTMLResponse:
    page = f"<!doctype html><meta charset=utf-8>{STYLE}<h3>{html.escape(title)}</h3>{inner}{FIT}"
    return HTMLResponse(page, headers={"Content-Disposition": "inline"})


def bar(label: str, now: str, pct: float) -> str:
    width = max(0.0, min(100.0, pct * 100 if pct <= 1 else pct))
    return (f"<div class=row><span>{html.escape(label)}</span><span class=bar><i style='width:{width:.0f}%'></i>"
            f"</span><span>{html.escape(now)}</span></div>")


def sheet_html(doc: dict[str, Any]) -> str:
    """The state answer as a player reads it: every value escaped (it holds what players and the model wrote)."""
    said = doc.get("campaign") or {}
    if not said.get("name"):
        return ("<p>This chat plays no tagengine campaign: choose a campaign's model (tagengine:NAME) in the model "
                "picker.</p>")
    sheet = doc.get("sheet") or {}
    out = [f"<p class=muted>{html.escape(str(said['name']))} &middot; {html.escape(str(sheet.get('ruleset', '')))}"
           f" &middot; turn {html.escape(str(doc.get('turn') or 0))}</p>"]
    clocks = sheet.get("clocks") or []
    if clocks:
        out.append("<h4>Clocks</h4>")
        out += [bar(c["name"], f"{c['filled']}/{c['size']}", c["filled"] / c["size"] if c.get("size") else 0)
                for c in clocks]
    for who in sheet.get("characters") or []:
        out.append(f"<h4>{html.escape(str(who.get('name', '')))}</h4>")
        out += character_html(who)
    party = sheet.get("party")
    if party:
        out.append(f"<h4>{html.escape(str(party.get('label') or 'Party'))}</h4>")
        out += [f"<div class=row><span>{html.escape(str(f['label']))}</span><span>{html.escape(str(f['value']))}"
                f"</span></div>" for f in party.get("fields") or []]
        out += [bar(p["label"], p["now"], p.get("pct") or 0) for p in party.get("pools") or []]
    receipts = sheet.get("receipts") or []
    if receipts:
        out.append("<h4>Last reply</h4><ul>")
        out += [f"<li>{html.escape(tag_words(str(r.get('tag', ''))))} {receipt_words(r)}</li>" for r in receipts]
        out.append("</ul>")
    return "".join(out)


def character_html(who: dict[str, Any]) -> list[str]:
    out = [bar(p["label"], p["now"], p.get("pct") or 0) for p in who.get("pools") or []]
    out += [bar(t["label"], f"{t['value']}/{t['max']}", t.get("pct") or 0) for t in who.get("tracks") or []]
    for w in who.get("wounds") or []:
        out.append(f"<div class=row><span>{html.escape(str(w.get('label', '')))}</span>"
                   f"<span>{html.escape(str(w.get('now') or w.get('summary') or ''))}</span></div>")
    states = [s for s in who.get("states") or [] if isinstance(s, dict)]
    out += [f"<div class=row><span>{html.escape(str(s.get('label', '')))}</span>"
            f"<span>{html.escape(str(s.get('value', s.get('now', ''))))}</span></div>" for s in states]
    on = [str(c.get("label", "")) for c in who.get("conditions") or [] if isinstance(c, dict) and c.get("on")]
    if on:
        out.append(f"<div class=row><span>Conditions</span><span>{html.escape(', '.join(on))}</span></div>")
    return out


def tag_words(tag: str) -> str:
    """A tag as a player reads it: its kind and what it names (`clock Alarm raised`), not its brackets."""
    kind = re.match(r"\[\s*(\w+)", tag)
    attrs = dict(re.findall(r'\b(\w+)\s*=\s*"([^"]*)"', tag))
    words = [attrs[k] for k in NAMED if attrs.get(k)]
    return " ".join([kind.group(1), *words] if kind else words) or "a tag"


def receipt_words(r: dict[str, Any]) -> str:
    if r.get("result") == "ok":
        return f"&rarr; {html.escape(str(r.get('now') or 'done'))}"
    why = r.get("means") or r.get("reason") or "refused"
    return f"<span class=bad>refused: {html.escape(str(why))}</span>"


def roll_html(doc: dict[str, Any]) -> str:
    dice = doc.get("dice") or {}
    faces = ", ".join(str(f) for f in dice.get("faces") or [])
    label = (doc.get("check") or {}).get("label", "")
    outcome = doc.get("outcome") or doc.get("result") or ""
    return (f"<p><b>{html.escape(str(doc.get('who', '')))}</b> rolls {html.escape(str(label))}: "
            f"d{html.escape(str(dice.get('sides', '')))} [{html.escape(faces)}] &rarr; "
            f"<b>{html.escape(str(outcome))}</b></p><p class=muted><code>{html.escape(str(doc.get('receipt', '')))}"
            "</code><br>A roll from the sheet: it is not in the chat, and the dice do not move.</p>")
