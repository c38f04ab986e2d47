"""The model behind the server: an OpenAI-compatible base URL reached with httpx, or `demo`, a scripted
upstream in this process that answers with the bundled transcript's replies (no model, no key).

The upstream key comes from TAGENGINE_UPSTREAM_KEY, else from the client's Authorization header (only
when the server itself has no --api-key, since that header then carries the server's key). It is sent
upstream and nowhere else: never logged, never stored.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..tags import scan
from .relay import sse_data
from .transport import HTTP11Transport

KEY_VARIABLE = "TAGENGINE_UPSTREAM_KEY"
# not forwarded by a proxy (RFC 9110 7.6.1), and what httpx sets itself for the upstream (S-18)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
# what httpx's client would have added (S-28): a client's own Accept and User-Agent are passed through
DEFAULT_HEADERS = {"accept": "*/*", "user-agent": "tagengine"}
DEMO = "demo"
DEMO_BASE = "http://demo.invalid/v1"
SAMPLES = Path(__file__).resolve().parents[3] / "samples"


class Upstream:
    def __init__(self, url: str, *, forward_client_key: bool, timeout: float = 300.0,
                 transport: httpx.AsyncBaseTransport | None = None, samples: Path | None = None) -> None:
        if url == DEMO:
            transport = httpx.ASGITransport(app=demo_app(samples))
            url = DEMO_BASE
        elif transport is None and not proxied(url):  # else httpx's own, which reads the proxy settings
            transport = HTTP11Transport()
        self.base = url.rstrip("/")
        self.forward_client_key = forward_client_key
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._timeouts = self.timeout.as_dict()
        self._urls: dict[str, httpx.URL] = {}
        self.transport = transport  # None: a proxy applies, and the client's own transports go through it
        self.client = httpx.AsyncClient(timeout=self.timeout, transport=transport)

    async def send(self, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
        """The upstream's answer; with `stream`, its body is still to be read (then closed by the caller).
        Straight to the transport where there is one: the client's redirects, cookies and hooks are not
        wanted for a model's answer, and its layer cost 0.2 ms a request (SB-13)."""
        if self.transport is None:
            return await self.client.send(request, stream=stream)
        response = await self.transport.handle_async_request(request)
        response.request = request
        if not stream:
            try:
                await response.aread()  # closes the stream, handing its connection back
            except BaseException:  # a fault or a cancel mid-body: aread left it open (httpx's client closes it)
                await response.aclose()
                raise
        return response

    def headers(self, incoming: Mapping[str, str]) -> dict[str, str]:
        out = {"content-type": "application/json", "accept-encoding": "identity"}  # passthrough stays byte for byte
        key = os.environ.get(KEY_VARIABLE)
        if key:
            out["authorization"] = f"Bearer {key}"
        elif self.forward_client_key and incoming.get("authorization"):
            out["authorization"] = incoming["authorization"]
        return out

    def request(self, method: str, path: str, incoming: Mapping[str, str], body: bytes | None = None) -> httpx.Request:
        return self._request(method, path, [*DEFAULT_HEADERS.items(), *self.headers(incoming).items()], body)

    def _request(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes | None) -> httpx.Request:
        url = self._urls.get(path)
        if url is None:  # parsed once: a URL is a third of the cost of a request object (SB-13)
            url = self._urls[path] = httpx.URL(f"{self.base}{path}")
        try:
            return httpx.Request(method, url, headers=headers, content=body, extensions={"timeout": self._timeouts})
        except UnicodeEncodeError:  # a client's header with bytes beyond ASCII (obs-text): httpx encodes as ASCII
            return httpx.Request(method, url, headers=wire_headers(headers), content=body,
                                 extensions={"timeout": self._timeouts})

    def forwarded(self, incoming: Mapping[str, str]) -> list[tuple[str, str]]:
        """A passthrough's headers: the client's, except the hop-by-hop ones (and those its Connection
        header names), Host and Content-Length; Authorization as `headers` decides; identity encoding, so
        the answer's bytes come back as the upstream sent them."""
        items = list(incoming.items())  # Starlette's Headers gives every pair, repeated names too
        named = {t.strip().lower() for k, v in items if k.lower() == "connection" for t in v.split(",")}
        own = self.headers(incoming)
        drop = HOP_BY_HOP | named | own.keys() | {"authorization"}
        kept = [(k, v) for k, v in items if k.lower() not in drop]
        names = {k.lower() for k, _ in kept}
        return [(k, v) for k, v in DEFAULT_HEADERS.items() if k not in names] + kept + list(own.items())

    def passthrough(self, path: str, incoming: Mapping[str, str], body: bytes) -> httpx.Request:
        return self._request("POST", path, self.forwarded(incoming), body)

    async def close(self) -> None:
        await self.client.aclose()


def wire_headers(headers: Mapping[str, str] | list[tuple[str, str]]) -> httpx.Headers:
    """Headers whose values go out as the bytes they came as: Starlette reads a header as latin-1, so a
    value with bytes beyond ASCII (HTTP's obs-text) is encoded back the same way."""
    return httpx.Headers(headers, encoding="latin-1")


def media_type(response: httpx.Response) -> str:
    """The answer's Content-Type as the bytes it came as: httpx reads a header as UTF-8 where it can, and
    Starlette writes one as latin-1, which a character beyond it (a euro sign) made a UnicodeEncodeError."""
    raw = next((v for k, v in response.headers.raw if k.lower() == b"content-type"), None)
    return "application/json" if raw is None else raw.decode("latin-1")


def proxied(url: str) -> bool:
    """Whether a proxy from the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY) applies to `url`."""
    parts = urlsplit(url)
    proxies = getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not proxy_bypass(parts.hostname or "")


def demo_replies(samples: Path | None) -> list[str]:
    path = (samples or SAMPLES) / "transcripts" / "crew-night.jsonl"
    doc = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return [m["content"] for m in doc["messages"] if m["role"] == "assistant"]


def demo_app(samples: Path | None = None) -> Starlette:
    """A scripted OpenAI-compatible model: reply n is the transcript's reply n (n = the replies in the
    request, so regenerating gives the same reply again), streamed in small random pieces. A last user
    message that says roll gets the demo's check reply, which it continues from a prefill (demo_check)."""
    replies = demo_replies(samples)
    check = DemoCheck.load(samples)

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "tagengine-demo", "object": "model",
                                                          "created": 0, "owned_by": "tagengine"}]})

    async def chat(request: Request) -> Response:
        body = await request.json()
        n = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        text = check.answer(body.get("messages", []))
        text = replies[n % len(replies)] if text is None else text
        base = {"id": f"demo-{n}", "created": 0, "model": body.get("model") or "tagengine-demo"}
        if body.get("stream") is not True:
            return JSONResponse({**base, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})

        async def pieces() -> AsyncIterator[bytes]:
            rng = random.Random(n)
            i = 0
            while i < len(text):
                j = i + rng.randint(1, 9)
                yield sse_data({**base, "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {"content": text[i:j]}, "finish_reason": None}]})
                i = j
            yield sse_data({**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {}, "finish_reason": "stop"}]})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])


_ROLL = re.compile(r"\broll", re.IGNORECASE)
_OUTCOME = re.compile(r'\boutcome="(\w+)"')


@dataclass(frozen=True)
class DemoCheck:
    """samples/transcripts/demo-check.json: a reply that ends with a check, and what follows the check for
    each outcome when the demo is asked to continue it (serve --settle-checks), or without a receipt."""

    reply: str
    after: dict[str, str]
    unsettled: str

    @classmethod
    def load(cls, samples: Path | None) -> DemoCheck:
        doc = json.loads(((samples or SAMPLES) / "transcripts" / "demo-check.json").read_text(encoding="utf-8"))
        return cls(doc["reply"], doc["after"], doc["unsettled"])

    @cached_property
    def opening(self) -> str:
        """The reply up to its check tag."""
        tags = scan(self.reply)
        return self.reply[:tags[-1].start] if tags else self.reply

    def answer(self, messages: list[Any]) -> str | None:
        """The reply with the check (a last user message that says roll); the part after the check for a
        prefill that holds its receipt (its outcome read from the receipt); None for anything else."""
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        if last.get("role") == "assistant" and isinstance(last.get("content"), str):  # a prefill: continue it
            if not last["content"].startswith(self.opening):
                return ""  # not the demo's own reply: nothing to add
            outcomes = _OUTCOME.findall(last["content"])
            return self.after.get(outcomes[-1], "") if outcomes else self.unsettled
        user = next((m.get("content") for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"),
                    None)  # the engine's reminder may come after it
        if isinstance(user, str) and _ROLL.search(user):
            return self.reply + self.unsettled
        return None
