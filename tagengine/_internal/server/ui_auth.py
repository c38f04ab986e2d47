"""Signing in to the pages under /ui/ when the server has an `--api-key` (decision UI-10).

A browser does not send `Authorization: Bearer KEY`, so /ui/login takes the key once in a form and answers
with a cookie that opens the pages, and only them: the API routes still need the header. The cookie holds an
HMAC of a fixed text under the key, never the key; it is HttpOnly (no script reads it), SameSite=Strict (no
other site's page can send it along, so none can post a form with it) and scoped to /ui. The key travels in
a POST body, which nothing logs (the access log prints paths).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qs, quote

from starlette.datastructures import Headers
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from ..pages import render_page
from ..pages.templates import STYLESHEET
from .chat_request import body_within

COOKIE = "tagengine_ui"
LOGIN = "/ui/login"
MAX_LOGIN_FORM = 16 * 1024  # bytes: a key and where to go next


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


def _next(value: str) -> str:
    """Where a sign-in goes on to: a page of this server, never elsewhere."""
    return value if is_page(value) else "/ui/"


def sign_in_routes(key: str | None) -> list[Route]:
    """GET /ui/login: the form; POST: the key checked (in constant time), the cookie set. With no key there is
    nothing to sign in to: on to the pages."""

    async def login(request: Request) -> Response:
        if key is None:
            return RedirectResponse("/ui/", status_code=303)
        if request.method == "GET":
            return form(_next(request.query_params.get("next", "/ui/")), wrong=False)
        raw = await body_within(request, MAX_LOGIN_FORM)
        fields = parse_qs((raw or b"").decode("utf-8", "replace"))
        given, goto = fields.get("key", [""])[0], _next(fields.get("next", ["/ui/"])[0])
        if not hmac.compare_digest(given.encode(), key.encode()):
            return form(goto, wrong=True)
        response = RedirectResponse(goto, status_code=303)
        response.set_cookie(COOKIE, page_token(key), path="/ui", httponly=True, samesite="strict")
        return response

    def form(goto: str, *, wrong: bool) -> Response:
        return HTMLResponse(render_page("login.html.j2", {"next": goto, "wrong": wrong}),
                            status_code=401 if wrong else 200)

    return [Route(LOGIN, login, methods=["GET", "POST"])]
