"""The ASGI app (Starlette): routes, the campaign of a request, the prompt, the upstream call.

Engine work (replay, apply, prompt fitting) and the store run on the event loop's one thread, between
awaits: no two requests touch the engine or the SQLite connection at once, and no lock is needed. The
engine is pure and fast (a warm turn is a hash walk, one SQLite look-up and one apply).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..commands import Applied, apply_reply
from ..errors import HistoryError, NotFoundError, TagengineError
from ..history import ROLES
from ..prompt import Budget, BudgetError
from . import chain
from .campaigns import Campaign, Campaigns
from .errors import Refused, error
from .receipts import ReceiptStream
from .relay import dumps, first_content, relay_stream, upstream_failure, upstream_status
from .store import Store
from .ui import Latest, ui_routes
from .upstream import Upstream
from .upstream_count import fitter, tokens_header

log = logging.getLogger("tagengine.serve")

MAX_MODEL_NAME = 256  # characters
MAX_BODY = 32 * 1024 * 1024  # one request: far above any context window's worth of chat
DEFAULT_CONTEXT = 8192
DEFAULT_RESPONSE = 1024
MARKER = re.compile(r'\[tagengine:[ \t]*campaign[ \t]*=[ \t]*"([^"\n]*)"[ \t]*\]')


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


class _Auth(BaseHTTPMiddleware):
    def __init__(self, app: Any, key: str) -> None:
        super().__init__(app)
        self.key = key

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.headers.get("authorization") or ""
        if request.url.path != "/healthz" and not hmac.compare_digest(given.encode(), f"Bearer {self.key}".encode()):
            return error(401, "this server needs its API key: Authorization: Bearer <key>", "invalid_api_key",
                         "authentication_error")
        return await call_next(request)


def make_app(opts: Options) -> Starlette:
    store = Store(opts.data)
    campaigns = Campaigns(store)
    latest = Latest(store)  # the pages' view of the turns (issue 14)
    upstream = Upstream(opts.upstream, forward_client_key=opts.api_key is None, timeout=opts.timeout,
                        transport=opts.transport, samples=opts.samples)
    fit = fitter(upstream, opts.count_with_upstream)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await upstream.close()
        store.close()

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def models(request: Request) -> Response:
        try:
            got = await upstream.client.send(upstream.request("GET", "/models", request.headers))
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        return Response(got.content, status_code=got.status_code,
                        media_type=got.headers.get("content-type", "application/json"))

    async def completions(request: Request) -> Response:
        return error(400, "chat completions only: point the chat app at /v1/chat/completions",
                     "unsupported_endpoint")

    async def chat_completions(request: Request) -> Response:
        try:
            return await _chat(request)
        except Refused as r:
            return r.response()

    async def _chat(request: Request) -> Response:
        raw = await read_body(request)
        body = parse_body(raw)
        messages = body["messages"]
        named = marked_campaign(messages)
        name = named or request.path_params.get("campaign") or opts.campaign
        if name is None:
            return await passthrough(request, raw, body.get("stream") is True)
        try:
            c = campaigns.get(name)
        except NotFoundError:  # names the one asked for, never the others: a client may not list campaigns
            raise Refused(404, f"unknown campaign {name!r}", "campaign_not_found") from None
        except (TagengineError, OSError) as e:
            raise Refused(500, f"campaign {name!r}: its ruleset cannot be loaded: {e}", "campaign_broken",
                          "server_error") from None
        history = plain_history(messages)
        before = chain.state_of(c, store, history)
        budget = budget_of(body, opts.context)
        try:
            prompt, counted, fallback = await fit(c.rs, before.state, history, budget, request.headers)
        except BudgetError as e:
            raise Refused(400, str(e), "context_length_exceeded") from None
        except HistoryError as e:
            raise Refused(400, str(e), "invalid_history") from None
        except TagengineError as e:  # the server's own set-up (a tokenizer file): not the client's fault
            log.error("cannot build the prompt: %s", e)
            raise Refused(500, "the server cannot count tokens for this model; see its log", "server_error") from None
        latest.prompt_sent(c.name, prompt, counted)
        out = dict(body)
        out["messages"] = prompt.messages
        for k in ("max_tokens", "max_completion_tokens"):
            if isinstance(body.get(k), int):
                out[k] = prompt.report.response
        headers = {"x-tagengine-campaign": c.name,
                   "x-tagengine-tokens": tokens_header(prompt.report, fallback)}
        if not before.consistent:
            headers["x-tagengine-history"] = "incomplete: the state was rebuilt from what the history holds"
        req = upstream.request("POST", "/chat/completions", request.headers, dumps(out))
        if body.get("stream") is True:
            return await streamed(request, req, c, before, headers)
        return await whole(req, c, before, headers)

    async def whole(req: httpx.Request, c: Campaign, before: chain.Replayed, headers: dict[str, str]) -> Response:
        try:
            got = await upstream.client.send(req)
        except httpx.HTTPError as e:
            raise upstream_failure(e) from None
        if got.status_code >= 400:
            raise upstream_status(got.status_code, got.content)
        try:
            doc = json.loads(got.content)
        except ValueError:
            doc = None
        text = first_content(doc)
        if text is None:
            raise Refused(502, "the upstream model's answer has no choices[0].message.content text",
                          "upstream_malformed", "upstream_error")
        applied = apply_reply(c.rs, before.state, text)
        doc["choices"][0]["message"]["content"] = applied.text
        latest.reply_done(c.name, chain.remember(c, store, before.key, applied.text, applied.state), applied)
        return Response(dumps(doc), media_type="application/json", headers=headers)

    async def streamed(request: Request, req: httpx.Request, c: Campaign, before: chain.Replayed,
                       headers: dict[str, str]) -> Response:
        try:
            got = await upstream.client.send(req, stream=True)
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

        def done(applied: Applied) -> None:
            latest.reply_done(c.name, chain.remember(c, store, before.key, applied.text, applied.state), applied)

        stream = relay_stream(got, ReceiptStream(c.rs, before.state), done, request.is_disconnected)
        return StreamingResponse(stream, media_type="text/event-stream",
                                 headers={**headers, "cache-control": "no-cache"})

    async def passthrough(request: Request, raw: bytes, stream: bool) -> Response:
        """No campaign: the request goes upstream byte for byte, and the answer comes back the same way."""
        req = upstream.request("POST", "/chat/completions", request.headers, raw)
        try:
            got = await upstream.client.send(req, stream=True)
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        media = got.headers.get("content-type", "application/json")

        async def pipe() -> AsyncIterator[bytes]:
            try:
                async for part in got.aiter_raw():
                    yield part
            except httpx.HTTPError as e:
                log.warning("upstream failed mid-answer: %s", upstream_failure(e).message)
            finally:
                await got.aclose()

        return StreamingResponse(pipe(), status_code=got.status_code, media_type=media)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return error(status, f"{request.method} {request.url.path}: {message}", "not_found" if status == 404 else
                     "http_error")

    routes = [Route("/healthz", healthz)]
    for prefix in ("", "/c/{campaign}"):
        routes += [Route(f"{prefix}/v1/models", models),
                   Route(f"{prefix}/v1/completions", completions, methods=["POST"]),
                   Route(f"{prefix}/v1/chat/completions", chat_completions, methods=["POST"])]
    routes += ui_routes(campaigns, latest)
    middleware = [Middleware(_Auth, key=opts.api_key)] if opts.api_key else []
    async def internal(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return error(500, "internal error in tagengine serve (see its log)", "internal_error", "server_error")

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {HTTPException: not_found,
                                                                                Exception: internal}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers, lifespan=lifespan)


async def read_body(request: Request) -> bytes:
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY:
            raise Refused(400, f"the request body is over {MAX_BODY} bytes", "request_too_large")
        parts.append(part)
    return b"".join(parts)


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request as JSON; a body that is not an object with a list of messages is a 400 naming why."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"the request body is not JSON: {e}", "invalid_json") from None
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object", "invalid_request")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "`messages` must be a non-empty list of messages", "invalid_messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise Refused(400, f"messages[{i}] is not a message: expected {{\"role\", \"content\"}}",
                          "invalid_messages")
    return body


def text_of(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
    return None


def marked_campaign(messages: list[dict[str, Any]]) -> str | None:
    """The last `[tagengine: campaign="NAME"]` marker in a system or user message (the Author's Note is per
    chat); a model's reply cannot switch the campaign."""
    found = None
    for m in messages:
        if str(m.get("role")).lower() not in ("system", "user"):
            continue
        text = text_of(m.get("content"))
        if text:
            for hit in MARKER.finditer(text):
                found = hit.group(1)
    return found


def plain_history(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Role and text of each message, markers stripped; a message left empty by its marker is dropped."""
    out = []
    for i, m in enumerate(messages):
        text = text_of(m.get("content"))
        if text is None:
            if m.get("content") is None and m["role"].lower() == "assistant":
                continue  # a tool-call turn: nothing for the engine
            raise Refused(400, f"messages[{i}].content must be text", "invalid_messages")
        stripped = MARKER.sub("", text) if "[tagengine:" in text else text
        if stripped != text and not stripped.strip():
            continue
        role = m["role"].lower()  # F-10: roles without case, as everywhere else
        role = role if role in ROLES else "system"
        out.append({"role": role, "content": stripped})
    return out


def budget_of(body: dict[str, Any], context: int | None) -> Budget:
    response = body.get("max_completion_tokens", body.get("max_tokens"))
    if not isinstance(response, int) or isinstance(response, bool) or response <= 0:
        response = DEFAULT_RESPONSE
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if model is not None and len(model) > MAX_MODEL_NAME:  # a model name keys caches: a long one names no family
        model = None
    return Budget(context=context or DEFAULT_CONTEXT, response=response, response_min=min(256, response),
                  model=model)
