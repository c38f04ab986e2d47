"""The bridge (decisions STX-2): SillyTavern's page calls the JSON API through SillyTavern's own server.

The extension posts to SillyTavern's `/api/backends/chat-completions/generate` with the Custom source and the
Custom URL `<this server>/tagengine/bridge`; SillyTavern's server posts that to `/tagengine/bridge/chat/completions`
with the chat's `messages`, the Custom API key as `Authorization`, and the body's `tagengine` object
(`custom_include_body`): `{"method", "path", "body"?, "messages"?: true}`. The named request is made to this app
in process, through every middleware (the key is checked again, as for any request), with the chat's `messages`
put in its body when `messages` is true. The answer is always 200, `{"tagengine": {"status", "body"}}`:
SillyTavern turns any other status into its bare reason phrase, which would lose the API's error.

So the extension works wherever SillyTavern's page works (a phone on the LAN, SillyTavern behind HTTPS) with
the address and key SillyTavern already uses, and the server needs no `--allow-origin`. Only the JSON API's
paths may be named (`/tagengine/api/...`, and for one release the paths before it had one scheme).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message

from ..context import ServerContext
from ..errors import Refused
from ..wire.answers import json_response
from ..wire.body import read_body
from ..wire.chat_completions import error_doc
from ..wire.json_codec import dumps, loads, loads_or_none
from .base import route

PATH = "/tagengine/bridge/chat/completions"
CALLS = re.compile(r"(?:/c/[^/?#]+)?/tagengine/(?:api/[^?#]+|checks)")
PASSED = (b"host", b"authorization")  # what the call keeps of the bridge request's headers


async def bridge(request: Request) -> Response:
    try:
        method, path, data = bridged_call(loads_or_none(await read_body(request)))
    except Refused as r:
        return enveloped(r.status, r.doc())
    status, answer = await call_app(request, method, path, data)
    return enveloped(status, answer)


def st_bridge_routes(ctx: ServerContext) -> list[Route]:
    return [route(PATH, bridge, methods=["POST"])]


def bridged_call(body: Any) -> tuple[str, str, bytes]:
    """The call a bridge request names: its method, path and body; a 400 naming what is wrong."""
    call = body.get("tagengine") if isinstance(body, dict) else None
    if not isinstance(call, dict):
        raise Refused(400, "a bridge request names its call in `tagengine`: {\"method\", \"path\", \"body\"}",
                      "invalid_request")
    method, path, inner = call.get("method"), call.get("path"), call.get("body", {})
    if method not in ("GET", "POST"):
        raise Refused(400, "`tagengine.method` must be GET or POST", "invalid_request")
    # a path as HTTP sends it: printable ASCII, anything else percent-encoded (a lone surrogate cannot be sent)
    if not isinstance(path, str) or not (path.isascii() and path.isprintable()) or CALLS.fullmatch(path) is None \
            or {".", ".."} & set(unquote(path).split("/")):
        raise Refused(400, "`tagengine.path` must be a path of the JSON API (/tagengine/api/...)", "invalid_request")
    if not isinstance(inner, dict):
        raise Refused(400, "`tagengine.body` must be a JSON object", "invalid_request")
    if call.get("messages") is True:
        inner = {**inner, "messages": body.get("messages", [])}
    return method, path, b"" if method == "GET" else dumps(inner)


async def call_app(request: Request, method: str, path: str, data: bytes) -> tuple[int, Any]:
    """`method path` made to this app in process (its middleware, routes and error handlers): the status and
    the answer's JSON (an error document when it is not JSON)."""
    outer = request.scope
    headers = [(k, v) for k, v in outer["headers"] if k in PASSED]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    scope = {**outer, "method": method, "path": unquote(path), "raw_path": path.encode(), "query_string": b"",
             "headers": headers, "root_path": ""}
    scope.pop("route", None)
    scope.pop("path_params", None)
    sent: list[Message] = []
    given = False

    async def receive() -> Message:
        nonlocal given
        if given:
            return {"type": "http.disconnect"}
        given = True
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await request.app(scope, receive, send)
    status = next((int(m["status"]) for m in sent if m["type"] == "http.response.start"), 500)
    raw = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    try:
        return status, loads(raw)
    except (ValueError, RecursionError):
        return status, error_doc(raw.decode("utf-8", "replace")[:300] or f"status {status}", "not_json")


def enveloped(status: int, body: Any) -> Response:
    return json_response({"tagengine": {"status": status, "body": body}})
