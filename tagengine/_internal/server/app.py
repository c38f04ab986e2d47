"""The ASGI app (Starlette): routes, the campaign of a request, the prompt, the upstream call.

Engine work (replay, apply, prompt fitting) runs on the event loop's thread, between awaits; a history
with more than THREAD_MIN replies to replay goes to a worker thread (S-19). The engine is pure and the
store guards its one SQLite connection with a lock, so both may run at once (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..commands import Applied, apply_reply
from ..errors import HistoryError, NotFoundError, TagengineError
from ..prompt import Budget, BudgetError, reminder
from ..prompt.budget import count_ahead
from ..prompt.contexts import context_of
from ..stream import StreamFilter
from ..tags import narration
from . import chain
from .campaigns import Campaign, Campaigns
from .chat_request import asked_response, budget_of, parse_body, read_body, read_marked, with_replies
from .checks import check_routes
from .errors import Refused, error, refusals_as_responses
from .prefill import Continued, prefill_last, split_prefill
from .receipts import ReceiptStream
from .relay import Filter, dumps, first_content, loads, relay_stream, sse_data, upstream_failure, upstream_status
from .settle import HEADER as SETTLE_HEADER
from .settle import Settler
from .store import DEFAULT_KEEP, Store
from .streamed import Cut, Streamed
from .ui import Latest, ui_routes
from .ui_auth import is_page, page_token, sign_in_routes, signed_in, to_sign_in
from .upstream import Upstream, media_type
from .upstream_count import fitter, tokens_header

log = logging.getLogger("tagengine.serve")


@dataclass
class Options:
    upstream: str
    data: Path
    campaign: str | None = None
    api_key: str | None = None
    context: int | None = None
    timeout: float = 300.0
    transport: httpx.AsyncBaseTransport | None = None  # tests: an upstream in this process
    samples: Path | None = None
    count_with_upstream: bool = False  # issue 15: token counts from the upstream's tokenize endpoint
    hide_tags: bool = False  # the player gets the narration; the tagged reply stays in the store (S-14)
    keep: int = DEFAULT_KEEP  # snapshots kept per campaign, the least recently used pruned (S-20)
    settle_checks: bool = False  # --settle-checks: checks settled mid-reply (settle.py)


class _Auth:
    """--api-key: every route but /healthz needs `Authorization: Bearer KEY`, or for the pages under /ui/ the
    cookie of a sign-in (UI-10; else on to the sign-in form). Plain ASGI, so a streamed
    answer goes straight through (Starlette's BaseHTTPMiddleware copied it through a memory stream in a task
    group of its own)."""

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


def make_app(opts: Options) -> Starlette:
    store = Store(opts.data)
    store.keep = opts.keep
    campaigns = Campaigns(store)
    latest = Latest(store)  # the pages' view of the turns (issue 14)
    upstream = Upstream(opts.upstream, forward_client_key=opts.api_key is None, timeout=opts.timeout,
                        transport=opts.transport, samples=opts.samples)
    fit = fitter(upstream, opts.count_with_upstream)
    settler = Settler(upstream) if opts.settle_checks else None

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # a long replay goes to a worker thread (chain.THREAD_MIN): the first one imported anyio's backend and
        # started the thread inside a chat app's request (15 ms of a cold turn, SB-13); done here instead
        await run_in_threadpool(lambda: None)
        yield
        await upstream.close()
        store.close()

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def models(request: Request) -> Response:
        try:
            got = await upstream.send(upstream.request("GET", "/models", request.headers))
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        if got.status_code >= 600:  # no server can answer with it
            return upstream_status(got.status_code, got.content).response()
        return Response(got.content, status_code=got.status_code,
                        media_type=media_type(got))

    async def completions(request: Request) -> Response:
        return error(400, "chat completions only: point the chat app at /v1/chat/completions",
                     "unsupported_endpoint")

    @refusals_as_responses
    async def chat_completions(request: Request) -> Response:
        raw = await read_body(request)
        body = parse_body(raw)
        marked = read_marked(body["messages"])
        name = marked.campaign or request.path_params.get("campaign") or opts.campaign
        if name is None:
            return await passthrough(request, raw, body.get("stream") is True)
        try:
            c = campaigns.get(name)
        except NotFoundError:  # names the one asked for, never the others: a client may not list campaigns
            raise Refused(404, f"unknown campaign {name!r}", "campaign_not_found") from None
        except (TagengineError, OSError) as e:
            raise Refused(500, f"campaign {name!r}: its ruleset cannot be loaded: {e}", "campaign_broken",
                          "server_error") from None
        history = marked.plain()
        earlier, prefill = split_prefill(history)  # continue: the state from before the prefill (S-17)
        found = chain.state_of(c, store, earlier, hidden=opts.hide_tags, defer=chain.THREAD_MIN)
        before = await run_in_threadpool(found.run) if isinstance(found, chain.Pending) else found
        if opts.hide_tags:  # the model sees its own tagged replies, not the narrations the player saw
            history = with_replies(history, before.replies)
        budget = budget_of(body, opts.context)
        whence = "--context" if opts.context else f"table:{context_of(budget.model)[1]}"
        try:
            prompt, counted, fallback = await fit(c.rs, before.state, history, budget, request.headers)
        except BudgetError as e:
            raise Refused(400, str(e), "context_length_exceeded") from None
        except HistoryError as e:
            raise Refused(400, str(e), "invalid_history") from None
        except TagengineError as e:  # the server's own set-up (a tokenizer file): not the client's fault
            log.error("cannot build the prompt: %s", e)
            raise Refused(500, "the server cannot count tokens for this model; see its log", "server_error") from None
        # for the prompt page, once the request has left: the prompt it replaces (a whole chat) is freed there
        asyncio.get_running_loop().call_soon(latest.prompt_sent, c.name, prompt, counted)
        if prefill is not None and not prefill_last(prompt.messages, prefill):
            raise Refused(400, "the reply to continue does not fit the context", "context_length_exceeded")
        out = dict(body)
        out["messages"] = prompt.messages
        for k in ("max_tokens", "max_completion_tokens"):
            if asked_response(body.get(k)) is not None:  # else not a budget: forwarded as it came
                out[k] = prompt.report.response
        headers = {"x-tagengine-campaign": c.name,
                   "x-tagengine-tokens": tokens_header(prompt.report, fallback, whence)}
        if before.notes:
            headers["x-tagengine-history"] = "; ".join(before.notes)
        req = upstream.request("POST", "/chat/completions", request.headers, dumps(out))
        # checks settled mid-reply (CK-17): not for a continued reply or with --hide-tags (settled at the end)
        settle = settler is not None and prefill is None and not opts.hide_tags and settler.applies(out)
        unasked = None
        if settler is not None and settle and body.get("stream") is True:
            # a streamed reply's header goes before its first continuation: the model is probed first (CK-21),
            # which may learn that it cannot continue
            unasked = await settler.probe(out, request.headers)
            settle = unasked is None and settler.applies(out)
        if settler is not None:
            headers[SETTLE_HEADER] = settler.header(out, unasked) if prefill is None and not opts.hide_tags else \
                "at-end; a continued reply or --hide-tags"
        if body.get("stream") is True:
            return await streamed(request, req, c, before, headers, prefill, out if settle else None, counted=counted)
        return await whole(request, req, c, before, headers, prefill, out if settle else None, counted=counted)

    def reply_filter(c: Campaign, before: chain.Replayed, prefill: str | None) -> Filter:
        filt: Filter = StreamFilter(c.rs, before.state) if opts.hide_tags else ReceiptStream(c.rs, before.state)
        return filt if prefill is None else Continued(filt, prefill)

    def keep(c: Campaign, before: chain.Replayed, applied: Applied, filt: Filter | None, raw: str) -> bool:
        """The snapshot after a complete reply, unless the state before it was a guess (S-15: then only the
        narration map) or the chat app's text of a continued reply cannot be the engine's (S-17). Whether the
        snapshot was kept (then the next turn starts from this very state object)."""
        if not before.consistent and not opts.hide_tags:
            return False
        shown = filt.shown if isinstance(filt, Continued) else narration(raw) if opts.hide_tags else None
        if isinstance(filt, Continued) and not opts.hide_tags:
            if shown != applied.text:
                log.warning("campaign %s: a continued reply's tag was rewritten across the prefill; the chat app's "
                            "text differs from the engine's and is replayed next time", c.name)
                return False
            shown = None
        new = chain.remember(c, store, before.key, applied.text, applied.state, shown, consistent=before.consistent)
        if before.consistent:  # the pages show the newest state that was kept (issue 14)
            latest.reply_done(c.name, new, applied)
        return before.consistent

    async def after_reply(c: Campaign, before: chain.Replayed, applied: Applied, filt: Filter | None,
                          raw: str, counted: Budget) -> None:
        """After the answer has gone (S-24): keep the snapshot, then render the new state's reminder and count
        the reply's tokens (S-32), so the next turn finds all three. Nothing here awaits, so it is done before
        the event loop reads another request. A fault here is logged, never raised: the answer has gone
        whole, and the next turn replays what this one did not keep (S-33)."""
        try:
            if keep(c, before, applied, filt, raw):  # else the next turn replays: its state is another object
                reminder(c.rs, applied.state)
            if counted.tokenizer is None:  # counted here, not by the upstream's tokenize endpoint (K-9)
                count_ahead(counted, "assistant", applied.text)
        except Exception:
            log.exception("campaign %s: a turn failed after its answer had gone; the next turn replays it", c.name)

    async def whole(request: Request, req: httpx.Request, c: Campaign, before: chain.Replayed,
                    headers: dict[str, str], prefill: str | None, settle: dict[str, Any] | None = None, *,
                    counted: Budget) -> Response:
        try:
            got = await upstream.send(req)
        except httpx.HTTPError as e:
            raise upstream_failure(e) from None
        if got.status_code >= 400:
            raise upstream_status(got.status_code, got.content)
        try:
            doc = loads(got.content)
        except (ValueError, RecursionError):  # RecursionError: a document nested too deep to read
            doc = None
        text = first_content(doc)
        if text is None:
            raise Refused(502, "the upstream model's answer has no choices[0].message.content text",
                          "upstream_malformed", "upstream_error")
        if settler is not None and settle is not None:
            text = await settler.whole(text, settle, request.headers, c.rs, before.state, headers)
        if prefill is None:
            applied = apply_reply(c.rs, before.state, text)
            doc["choices"][0]["message"]["content"] = narration(text) if opts.hide_tags else applied.text
            after = BackgroundTask(after_reply, c, before, applied, None, text, counted)
        else:
            filt = reply_filter(c, before, prefill)
            out = filt.feed(text)
            rest, applied = filt.finish()
            doc["choices"][0]["message"]["content"] = out + rest
            after = BackgroundTask(after_reply, c, before, applied, filt, prefill + text, counted)
        return Response(dumps(doc), media_type="application/json", headers=headers, background=after)

    async def streamed(request: Request, req: httpx.Request, c: Campaign, before: chain.Replayed,
                       headers: dict[str, str], prefill: str | None,
                       settle: dict[str, Any] | None = None, *, counted: Budget) -> Response:
        try:
            got = await upstream.send(req, stream=True)
        except httpx.HTTPError as e:
            raise upstream_failure(e) from None
        if got.status_code >= 400:
            try:
                content = await got.aread()
            except httpx.HTTPError:
                content = b""
            finally:
                await got.aclose()
            raise upstream_status(got.status_code, content)

        filt = reply_filter(c, before, prefill)

        async def done(applied: Applied) -> None:
            raw = filt.text if isinstance(filt, StreamFilter) else ""  # --hide-tags: the player saw its narration
            await after_reply(c, before, applied, filt, raw, counted)

        source = None
        if settler is not None and settle is not None and isinstance(filt, ReceiptStream):
            source = settler.source(got, settle, request.headers, filt)
        stream = relay_stream(got, filt, done, request.is_disconnected, source)
        return Streamed(stream, {**headers, "cache-control": "no-cache"})

    async def passthrough(request: Request, raw: bytes, stream: bool) -> Response:
        """No campaign: the request goes upstream byte for byte, and the answer comes back the same way."""
        req = upstream.passthrough("/chat/completions", request.headers, raw)  # the client's headers too (S-18)
        try:
            got = await upstream.send(req, stream=True)
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        if got.status_code >= 600:  # no server can answer with it
            try:
                return upstream_status(got.status_code, await got.aread()).response()
            except httpx.HTTPError as e:
                return upstream_failure(e).response()
            finally:
                await got.aclose()
        media = media_type(got)
        events = media.split(";")[0].strip().lower() == "text/event-stream"

        async def pipe() -> AsyncIterator[bytes]:
            try:
                async for part in got.aiter_raw():
                    yield part
            except httpx.HTTPError as e:
                refused = upstream_failure(e)
                log.warning("upstream failed mid-answer: %s", refused.message)
                if not events:  # a document cut short: the client's answer is cut too (S-34)
                    raise Cut from None
                # a stream cut short ends with an error event, as a campaign's does (S-31); the blank lines
                # first end an event the cut left open
                yield b"\n\n" + sse_data(refused.doc())
            finally:
                await got.aclose()

        return Streamed(pipe(), status_code=got.status_code, media_type=media, document=not (events or stream))

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = exc.detail if isinstance(exc, HTTPException) else "internal error"
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None  # a 405's Allow
        return error(status, f"{request.method} {request.url.path}: {message}", "not_found" if status == 404 else
                     "http_error", headers=headers)

    routes = [Route("/healthz", healthz)]
    for prefix in ("", "/c/{campaign}"):
        routes += [Route(f"{prefix}/v1/models", models),
                   Route(f"{prefix}/v1/completions", completions, methods=["POST"]),
                   Route(f"{prefix}/v1/chat/completions", chat_completions, methods=["POST"])]
    routes += ui_routes(campaigns, latest) + sign_in_routes(opts.api_key)
    routes += check_routes(campaigns, store, opts.campaign, opts.hide_tags)
    middleware = [Middleware(_Auth, key=opts.api_key)] if opts.api_key else []
    async def internal(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return error(500, "internal error in tagengine serve (see its log)", "internal_error", "server_error")

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {HTTPException: not_found,
                                                                                Exception: internal}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers, lifespan=lifespan)
