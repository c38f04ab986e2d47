"""The ASGI app (Starlette), composed: one `ServerContext`, the route groups made from it (routes/), the
middleware list and the exception handlers. Nothing here handles a request itself.

Where to add: a route group is a module of routes/ with a function of the context giving its `Route`s,
listed in ROUTE_GROUPS; a middleware goes in `middleware` (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from .context import ServerContext
from .errors import error
from .guard.auth import ApiKeyAuth
from .guard.origins import EXPOSED, HostAndOrigin, allowed_origins, host_names
from .limits import IDLE_TRIM_SECONDS, WRITES_HELD_SECONDS
from .options import Options
from .routes.campaign_pages import campaign_page_routes
from .routes.chat import chat_routes
from .routes.chat_state import chat_state_routes
from .routes.checks import check_routes
from .routes.edit_api import edit_api_routes
from .routes.editor import editor_routes
from .routes.health import health_routes
from .routes.pages import page_routes
from .routes.sign_in import sign_in_routes
from .routes.st_bridge import st_bridge_routes
from .runtime.heap import IdleTrim, freeze_long_lived, trimmer

__all__ = ["Options", "make_app"]  # Options: what make_app is made from (options.py)

log = logging.getLogger("tagengine.serve")
CLIENT_LEFT = 499  # the access line's status for a request whose client left before its body ended (nginx's)
# The route table: each group's module is routes/<group>.py, its function `<group>_routes(ctx)`.
ROUTE_GROUPS: tuple[Callable[[ServerContext], list[Route]], ...] = (
    health_routes,  # /healthz
    chat_routes,  # /v1/... and /c/{campaign}/v1/...: the OpenAI-compatible API a chat app calls
    page_routes,  # /ui/...: the campaigns, the game sheet, the prompt, the ruleset checker
    sign_in_routes,  # /ui/login, /ui/logout
    campaign_page_routes,  # /ui/new: a campaign started
    editor_routes,  # /ui/c/{campaign}/edit...: the sheet editor, the party's Edit, the game sheet's hand edits
    check_routes,  # /tagengine/api/checks: a check rolled
    edit_api_routes,  # /tagengine/api/c/{campaign}/...: the editor's JSON API
    chat_state_routes,  # /tagengine/api/state, /tagengine/api/campaigns: the state of the chat on screen
    st_bridge_routes)  # /tagengine/bridge/chat/completions: the JSON API through SillyTavern's server


def make_app(opts: Options) -> Starlette:
    ctx = ServerContext(opts)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # a long replay goes to a worker thread (chain.THREAD_MIN): the first one imported anyio's backend and
        # started the thread inside a chat app's request (15 ms of a cold turn, SB-13); done here instead
        await run_in_threadpool(lambda: None)
        freeze_long_lived()  # the start-up's objects out of the collector's full passes (heap.py, ED-23)
        flushing = asyncio.create_task(flush_held_writes(ctx, WRITES_HELD_SECONDS))
        try:
            yield
        finally:
            flushing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flushing
            await ctx.close()  # the store writes what it still holds

    routes = [route for group in ROUTE_GROUPS for route in group(ctx)]
    app = Starlette(routes=routes, middleware=middleware(ctx), exception_handlers=exception_handlers(),
                    lifespan=lifespan)
    app.state.context = ctx  # the server's parts, for a test or a tool that holds the app
    return app


async def flush_held_writes(ctx: ServerContext, seconds: float) -> None:
    """The store's held cache writes written every `seconds` (store.py, PF-55): a turn's snapshot and the pages'
    head reach the file that soon when turns come slower than the store fills its batch."""
    while True:
        await asyncio.sleep(seconds)
        if ctx.store.held:
            ctx.store.flush()


def middleware(ctx: ServerContext) -> list[Middleware]:
    """Every request passes these, outermost first (plain ASGI: a streamed answer goes straight through): the
    count of requests in flight, whose end hands the freed heap back (heap.py), the Host and the Origin
    (origins.py), CORS for an `--allow-origin` page, then the key (auth.py)."""
    opts = ctx.options
    origins = allowed_origins(opts.allow_origin)
    out = [Middleware(IdleTrim, trim=trimmer(), seconds=IDLE_TRIM_SECONDS),
           Middleware(HostAndOrigin, names=host_names(opts.host, opts.allow_host), origins=origins)]
    if origins:  # an allowed page may read the answers, x-tagengine-* included (TR-2)
        out.append(Middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST"],
                              allow_headers=["*"], expose_headers=list(EXPOSED), max_age=600))
    if opts.api_key and ctx.sessions:
        out.append(Middleware(ApiKeyAuth, key=opts.api_key, sessions=ctx.sessions))
    return out


def exception_handlers() -> dict[Any, Callable[[Request, Exception], Awaitable[Response]]]:
    """Starlette's own errors (404, 405) and any other exception as OpenAI-format errors; a client gone
    mid-body as one access line."""

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = exc.detail if isinstance(exc, HTTPException) else "internal error"
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None  # a 405's Allow
        return error(status, f"{request.method} {request.url.path}: {message}", "not_found" if status == 404 else
                     "http_error", headers=headers)

    async def client_left(request: Request, exc: Exception) -> Response:
        # no traceback and no "internal error": the client closed its connection before its request's body
        # ended (or was cut off as too slow). The access line is the one line it gets, with nginx's 499
        # ("client closed request"); nothing is sent, there is no one to send it to (SEC-7)
        return Response(status_code=CLIENT_LEFT)

    async def internal(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return error(500, "internal error in tagengine serve (see its log)", "internal_error", "server_error")

    return {HTTPException: http_error, ClientDisconnect: client_left, Exception: internal}
