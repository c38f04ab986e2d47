"""The pages' sign-in form, GET and POST /ui/login, for a server with an `--api-key` (decision UI-10).

A browser does not send `Authorization: Bearer KEY`, so the form takes the key once and answers with a cookie
that opens the pages, and only them (auth.py). The key travels in a POST body, which nothing logs (the access
log prints paths).
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ...pages import render_page
from ..auth import COOKIE, LOGIN, next_page, page_token
from ..chat_request import body_within
from ..context import ServerContext

MAX_LOGIN_FORM = 16 * 1024  # bytes: a key and where to go next


def sign_in_routes(ctx: ServerContext) -> list[Route]:
    """GET /ui/login: the form; POST: the key checked (in constant time), the cookie set. With no key there is
    nothing to sign in to: on to the pages."""
    key = ctx.options.api_key

    async def login(request: Request) -> Response:
        if key is None:
            return RedirectResponse("/ui/", status_code=303)
        if request.method == "GET":
            return form(next_page(request.query_params.get("next", "/ui/")), wrong=False)
        raw = await body_within(request, MAX_LOGIN_FORM)
        fields = parse_qs((raw or b"").decode("utf-8", "replace"))
        given, goto = fields.get("key", [""])[0], next_page(fields.get("next", ["/ui/"])[0])
        if not hmac.compare_digest(given.encode(), key.encode()):
            return form(goto, wrong=True)
        response = RedirectResponse(goto, status_code=303)
        response.set_cookie(COOKIE, page_token(key), path="/ui", httponly=True, samesite="strict")
        return response

    def form(goto: str, *, wrong: bool) -> Response:
        return HTMLResponse(render_page("login.html.j2", {"next": goto, "wrong": wrong}),
                            status_code=401 if wrong else 200)

    return [Route(LOGIN, login, methods=["GET", "POST"])]
