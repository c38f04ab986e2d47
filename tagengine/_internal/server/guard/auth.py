"""Who may use the server when it has an `--api-key` (S-9): `ApiKeyAuth`, the middleware, and the pages'
sign-in cookie (decisions UI-10, TR-4; the form is `routes/sign_in.py`, the cookie's secret `sessions.py`).

A browser does not send `Authorization: Bearer KEY`, so /ui/login takes the key once in a form and answers
with a cookie that opens the pages, and only them: the API routes still need the header. The cookie holds when
it was given and an HMAC under a secret kept in the data folder, never the key; it is HttpOnly (no script
reads it), SameSite=Strict (no other site's page can send it along, so none can post a form with it), scoped
to /ui, Secure when the request came over https (directly or from a `--trust-proxy`), and good for 30 days or
until every sign-in is ended. The key travels in a POST body, which nothing logs (the access log prints paths).
"""

from __future__ import annotations

import hmac
from urllib.parse import quote

from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ...pages.templates import STYLESHEET
from ..errors import error
from .sessions import Sessions

COOKIE = "tagengine_ui"
LOGIN = "/ui/login"


def is_page(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the header `name` (lower case), as the bytes the client sent."""
    for k, v in scope["headers"]:
        if k == name:
            return bytes(v)
    return None


def bearer(value: bytes | None) -> bytes | None:
    """The token of `Authorization: Bearer TOKEN`, the scheme's name in any case (RFC 9110 11.1, RFC 6750
    2.1: one or more spaces after it); None for another scheme or no header."""
    if value is None:
        return None
    scheme, _, token = value.partition(b" ")
    return token.lstrip(b" ") if scheme.lower() == b"bearer" else None


def signed_in(scope: Scope, sessions: Sessions) -> bool:
    """Whether the request opens a page: the sign-in form and its stylesheet need nothing, the rest a cookie
    that `sessions` finds good."""
    if scope["path"] in (LOGIN, "/ui/" + STYLESHEET):
        return True
    given = cookie_parser((header(scope, b"cookie") or b"").decode("latin-1")).get(COOKIE)
    return given is not None and sessions.valid(given)


def to_sign_in(scope: Scope) -> Response:
    """The sign-in form, then back to the page asked for."""
    return RedirectResponse(f"{LOGIN}?next={quote(scope['path'])}", status_code=303)


def next_page(value: str) -> str:
    """Where a sign-in goes on to: a page of this server, never elsewhere."""
    return value if is_page(value) else "/ui/"


class ApiKeyAuth:
    """--api-key: every route but /healthz needs `Authorization: Bearer KEY`, or for the pages under /ui/ the
    cookie of a sign-in (UI-10; else on to the sign-in form). Plain ASGI, so a streamed answer goes straight
    through (Starlette's BaseHTTPMiddleware copied it through a memory stream in a task group of its own)."""

    def __init__(self, app: ASGIApp, key: str, sessions: Sessions) -> None:
        self.app = app
        self.key = key.encode()
        self.sessions = sessions  # a browser signs in to the pages instead (UI-10)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/healthz":
            given = bearer(header(scope, b"authorization"))
            if given is None or not hmac.compare_digest(given, self.key):
                if not is_page(scope["path"]):
                    await error(401, "this server needs its API key: Authorization: Bearer <key>", "invalid_api_key",
                                "authentication_error")(scope, receive, send)
                    return
                if not signed_in(scope, self.sessions):
                    await to_sign_in(scope)(scope, receive, send)
                    return
        await self.app(scope, receive, send)
