"""The model behind the server, as the routes send to it: httpx requests to an OpenAI-compatible base URL,
over the transport its kind gave (`upstreams/kinds.py`: an HTTP server, or `demo` in this process). Every
upstream answer is read through `send` (a whole one) or `events` (a stream's), the one place to bound them.

The upstream key comes from TAGENGINE_UPSTREAM_KEY, else from the client's Authorization header (only
when the server itself has no --api-key, since that header then carries the server's key). It is sent
upstream and nowhere else: never logged, never stored.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

import httpx

from ...records import frozen
from ..limits import MAX_ANSWER, MAX_STREAM
from ..wire.sse import read_events

if TYPE_CHECKING:
    from ..options import Options

KEY_VARIABLE = "TAGENGINE_UPSTREAM_KEY"
# not forwarded by a proxy (RFC 9110 7.6.1), and what httpx sets itself for the upstream (S-18)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
# what httpx's client would have added (S-28): a client's own Accept and User-Agent are passed through
DEFAULT_HEADERS = {"accept": "*/*", "user-agent": "tagengine"}


@frozen
class UpstreamKind:
    """A row of `upstreams/kinds.KINDS`: its name, which `--upstream` values name it, and how it is reached
    (a base URL, and the transport that carries its requests: None for httpx's own)."""

    name: str
    accepts: Callable[[str], bool]
    reach: Callable[[str, Options], tuple[str, httpx.AsyncBaseTransport | None]]


class Upstream:
    """`base`: the OpenAI base URL; `transport`: what carries the requests, None for httpx's client and its
    own transports (which read the environment's proxies)."""

    def __init__(self, base: str, transport: httpx.AsyncBaseTransport | None = None, *, forward_client_key: bool,
                 timeout: float = 300.0) -> None:
        self.base = base.rstrip("/")
        self.forward_client_key = forward_client_key
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._timeouts = self.timeout.as_dict()
        self._urls: dict[str, httpx.URL] = {}
        self.transport = transport  # None: a proxy applies, and the client's own transports go through it
        self.client = httpx.AsyncClient(timeout=self.timeout, transport=transport)

    async def send(self, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
        """The upstream's answer; with `stream`, its body is still to be read (then closed by the caller).
        Its body is bounded (SEC-3): MAX_ANSWER bytes read whole, MAX_STREAM streamed; past the bound reading
        raises AnswerTooLarge. Straight to the transport where there is one: the client's redirects, cookies
        and hooks are not wanted for a model's answer, and its layer cost 0.2 ms a request (SB-13)."""
        if self.transport is None:
            response = await self.client.send(request, stream=True)
        else:
            response = await self.transport.handle_async_request(request)
            response.request = request
        response.stream = Bounded(response.stream, MAX_STREAM if stream else MAX_ANSWER)
        if not stream:
            try:
                await response.aread()  # closes the stream, handing its connection back
            except BaseException:  # a fault or a cancel mid-body: aread left it open (httpx's client closes it)
                await response.aclose()
                raise
        return response

    def events(self, response: httpx.Response) -> AsyncGenerator[str, None]:
        """The `data` of each event of a streamed answer (`send(..., stream=True)`), one at most MAX_ANSWER
        bytes (FZ-13, SEC-3)."""
        return read_events(response.aiter_bytes(), MAX_ANSWER)

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


class AnswerTooLarge(httpx.HTTPError):
    """The upstream's answer went past the bound its reader set (SEC-3). An httpx error, so every reader of
    an answer treats it as it treats a connection that failed: a 502, or a stream's error event."""


class Bounded(httpx.AsyncByteStream):
    """An answer's body that raises AnswerTooLarge once more than `limit` bytes have come: what one upstream
    answer can make the server hold, or relay, is bounded."""

    def __init__(self, stream: httpx.AsyncByteStream | httpx.SyncByteStream, limit: int) -> None:
        self.stream, self.limit, self.size = stream, limit, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not isinstance(self.stream, httpx.AsyncByteStream):
            raise TypeError("an upstream answer is read asynchronously")
        async for chunk in self.stream:
            self.size += len(chunk)
            if self.size > self.limit:
                raise AnswerTooLarge(f"the upstream's answer is over {self.limit} bytes, the most this server reads")
            yield chunk

    async def aclose(self) -> None:
        if isinstance(self.stream, httpx.AsyncByteStream):
            await self.stream.aclose()


def wire_headers(headers: Mapping[str, str] | list[tuple[str, str]]) -> httpx.Headers:
    """Headers whose values go out as the bytes they came as: Starlette reads a header as latin-1, so a
    value with bytes beyond ASCII (HTTP's obs-text) is encoded back the same way."""
    return httpx.Headers(headers, encoding="latin-1")


def media_type(response: httpx.Response) -> str:
    """The answer's Content-Type as the bytes it came as: httpx reads a header as UTF-8 where it can, and
    Starlette writes one as latin-1, which a character beyond it (a euro sign) made a UnicodeEncodeError."""
    raw = next((v for k, v in response.headers.raw if k.lower() == b"content-type"), None)
    return "application/json" if raw is None else raw.decode("latin-1")
