"""The access log, written once each response has gone out.

uvicorn writes its access line when a response starts: a formatted line and a write to the log's stream
in front of the first byte of every answer, on a streamed turn in front of the first token. `serve` turns
uvicorn's off and wraps the app in `AccessLog`, which writes the same line after the response's last
byte, as `tagengine.access` in the server's own log format, on standard error with its other lines (S-25)."""

from __future__ import annotations

import logging
from urllib.parse import quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS = logging.getLogger("tagengine.access")


class AccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not ACCESS.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        status, logged = 0, False

        async def sent(message: Message) -> None:
            nonlocal status, logged
            await send(message)
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                logged = True
                ACCESS.info('%s - "%s %s HTTP/%s" %d', *line(scope), status)

        try:
            await self.app(scope, receive, sent)
        finally:
            if status and not logged:  # a response cut short: the client left, or a fault mid-body
                ACCESS.info('%s - "%s %s HTTP/%s" %d (cut short)', *line(scope), status)


def line(scope: Scope) -> tuple[str, str, str, str]:
    """The client, method, path and HTTP version as uvicorn's access line gives them."""
    client = scope.get("client")
    path = quote(scope["path"])
    query = scope.get("query_string") or b""
    if query:
        path = f"{path}?{query.decode('ascii')}"
    return (f"{client[0]}:{client[1]:d}" if client else ""), scope["method"], path, scope["http_version"]
