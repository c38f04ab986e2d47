"""Who may use the server when it has an `--api-key` (S-9): `ApiKeyAuth`, the middleware, and the pages'
sign-in cookie (decision UI-10; the form is `routes/sign_in.py`).

A browser does not send `Authorization: Bearer KEY`, so /ui/login takes the key once in a form and answers
with a cookie that opens the pages, and only them: the API routes still need the header. The cookie holds an
HMAC of a fixed text under the key, never the key; it is HttpOnly (no script reads it), SameSite=Strict (no
other site's page can send it along, so none can post a form with it) and scoped to /ui. The key travels in
a POST body, which nothing logs (the access log prints paths).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..pages.templates import STYLESHEET
from .errors import error

COOKIE = "tagengine_ui"
LOGIN = "/ui/login"


def is_page(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def page_token(key: str) -> str:
    """What the cookie holds for `key`."""
    return hmac.new(key.encode(), b"tagengine.ui/1", hashlib.sha256).hexdigest()


def signed_in(scope: Scope, token: str) -> bool:
    """Whether the request opens a page: the sign-in form and its stylesheet need nothing, the rest the
    cookie that matches `token`."""
    if scope["path"] in (LOGIN, "/ui/" + STYLESHEET):
        return True
    given = cookie_parser(Headers(scope=scope).get("cookie") or "").get(COOKIE, "")
    return hmac.compare_digest(given.encode(), token.encode())


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

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.key = f"Bearer {key}".encode()
        self.page_token = page_token(key)  # a browser signs in to the pages instead (UI-10)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/healthz":
            given = Headers(scope=scope).get("authorization") or ""
            if not hmac.compare_digest(given.encode(), self.key):
                if not is_page(scope["path"]):
                    await error(401, "this server needs its API key: Authorization: Bearer <key>", "invalid_api_key",
                                "authentication_error")(scope, receive, send)
                    return
                if not signed_in(scope, self.page_token):
                    await to_sign_in(scope)(scope, receive, send)
                    return
        await self.app(scope, receive, send)
