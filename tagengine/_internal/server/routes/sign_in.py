"""The pages' sign-in and sign-out, /ui/login and /ui/logout, for a server with an `--api-key` (decisions
UI-10, TR-4).

A browser does not send `Authorization: Bearer KEY`, so the form takes the key once and answers with a cookie
that opens the pages, and only them (auth.py, sessions.py). The key travels in a POST body, which nothing
logs (the access log prints paths). Wrong keys are limited per client address (`SignInLimit`); a sign-out
ends this browser's cookie, "everywhere" every cookie the server gave.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ...pages import render_page
from ..context import ServerContext
from ..guard.auth import COOKIE, LOGIN, next_page
from ..limits import MAX_SIGN_IN_FORM, SESSION_SECONDS, SIGN_IN_ADDRESSES, WRONG_KEY_EVERY, WRONG_KEYS_BURST
from ..wire.body import body_within
from .base import route

LOGOUT = "/ui/logout"


class SignInLimit:
    """Wrong keys per client address, a token bucket each (WRONG_KEYS_BURST, one back every WRONG_KEY_EVERY seconds),
    in bounded memory: at most SIGN_IN_ADDRESSES addresses, the least recently seen dropped. An IPv6 address counts
    by its /64 network (one host holds all of it). Behind a proxy the address is the client's only with
    `--trust-proxy` (else every request comes from the proxy, and they share one bucket)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, most: int = SIGN_IN_ADDRESSES) -> None:
        self.clock = clock
        self.most = most
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, when)

    @staticmethod
    def address(request: Request) -> str:
        host = request.client.host if request.client else ""
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return host
        return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)

    def _tokens(self, who: str) -> float:
        tokens, when = self.buckets.get(who, (WRONG_KEYS_BURST, self.clock()))
        return min(WRONG_KEYS_BURST, tokens + (self.clock() - when) / WRONG_KEY_EVERY)

    def wait(self, who: str) -> int:
        """Seconds before `who` may try a key again: 0 when now."""
        tokens = self._tokens(who)
        return 0 if tokens >= 1 else math.ceil((1 - tokens) * WRONG_KEY_EVERY)

    def wrong(self, who: str) -> None:
        """`who` gave a wrong key."""
        tokens = self._tokens(who) - 1
        self.buckets[who] = (tokens, self.clock())
        self.buckets.move_to_end(who)
        while len(self.buckets) > self.most:
            self.buckets.popitem(last=False)


async def login(ctx: ServerContext, limit: SignInLimit, request: Request) -> Response:
    """GET: the form; POST: the key checked (in constant time, unless this address gave too many wrong ones
    lately), the cookie set. With no key there is nothing to sign in to: on to the pages."""
    key, sessions = ctx.options.api_key, ctx.sessions
    if key is None or sessions is None:
        return RedirectResponse("/ui/", status_code=303)
    if request.method == "GET":
        return sign_in_form(next_page(request.query_params.get("next", "/ui/")))
    raw = await body_within(request, MAX_SIGN_IN_FORM)
    fields = parse_qs((raw or b"").decode("utf-8", "replace"))
    given, goto = fields.get("key", [""])[0], next_page(fields.get("next", ["/ui/"])[0])
    who = limit.address(request)
    wait = limit.wait(who)
    if wait:
        return sign_in_form(goto, status=429, wait=wait)
    if not hmac.compare_digest(given.encode(), key.encode()):
        limit.wrong(who)
        return sign_in_form(goto, status=401)
    response = RedirectResponse(goto, status_code=303)
    response.set_cookie(COOKIE, sessions.issue(), max_age=SESSION_SECONDS, path="/ui", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    return response


async def logout(ctx: ServerContext, request: Request) -> Response:
    """POST: the cookie cleared, with `everywhere` every sign-in ended."""
    sessions = ctx.sessions
    if sessions is None:
        return RedirectResponse("/ui/", status_code=303)
    if request.method == "GET":
        return HTMLResponse(render_page("logout.html.j2", {}))
    raw = await body_within(request, MAX_SIGN_IN_FORM)
    if "everywhere" in parse_qs((raw or b"").decode("utf-8", "replace")):
        sessions.end_all()
    response = RedirectResponse(LOGIN, status_code=303)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
    return response


def sign_in_form(goto: str, *, status: int = 200, wait: int = 0) -> Response:
    headers = {"retry-after": str(wait)} if wait else None
    return HTMLResponse(render_page("login.html.j2", {"next": goto, "wrong": status == 401, "wait": wait}),
                        status_code=status, headers=headers)


def sign_in_routes(ctx: ServerContext) -> list[Route]:
    return [route(LOGIN, login, ctx, SignInLimit(), methods=["GET", "POST"]),
            route(LOGOUT, logout, ctx, methods=["GET", "POST"])]
