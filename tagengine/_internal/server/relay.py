"""Relaying the upstream's answer: the non-streamed reply rewritten, or its SSE stream rewritten chunk by
chunk (receipts.py), the snapshot kept only once the reply is complete. Everything the engine does not
read (other fields, `reasoning_content`/`reasoning` deltas, `usage`, other choices) passes untouched.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import anyio
import httpx
import orjson

from ..commands import Applied
from .errors import Refused, error_body

log = logging.getLogger("tagengine.serve")


class Filter(Protocol):
    """What a reply's chunks go through: ReceiptStream (receipts), or StreamFilter (narration, --hide-tags)."""

    def feed(self, chunk: str) -> str: ...

    def finish(self) -> tuple[str, Applied]: ...


def upstream_failure(e: Exception) -> Refused:
    """An httpx failure as the client's error (the key is in no message httpx makes)."""
    if isinstance(e, httpx.TimeoutException):
        return Refused(504, "the upstream model did not answer in time", "upstream_timeout", "upstream_error")
    if isinstance(e, httpx.ConnectError):
        return Refused(502, "the upstream model cannot be reached", "upstream_unreachable", "upstream_error")
    return Refused(502, f"the upstream connection failed: {type(e).__name__}", "upstream_failed", "upstream_error")


def upstream_status(status: int, body: bytes) -> Refused:
    """An upstream 4xx/5xx as an error with the same status; the upstream's own message when it has one. A
    status past 599, which no server can answer with (uvicorn writes 100..599), is a 502."""
    message = f"the upstream model answered {status}"
    try:
        doc = loads(body)
        inner = doc.get("error") if isinstance(doc, dict) else None
        detail = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(detail, str) and detail:
            message += f": {detail[:500]}"
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read
        pass
    return Refused(status if status < 600 else 502, message, "upstream_error", "upstream_error")


def first_content(doc: Any) -> str | None:
    """choices[0].message.content of a chat completion, when it is text."""
    try:
        content = doc["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def first_choice(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A streamed chunk's choice of index 0 (an index left out is 0); None when it has none, whatever its
    `choices` holds."""
    choices = doc.get("choices")
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


MAX_EVENT = 32 * 1024 * 1024  # bytes of one server-sent event from the upstream (as MAX_BODY for a request)
DRAIN_SECONDS = 0.25  # the most a finished stream waits for the upstream's body to end
_BIG = 2.0 ** 63  # orjson reads an integer beyond 64 bits as a float, of at least this size: json reads it


class _Unusual(float):
    """A number only the standard library reads (NaN, Infinity, 1e400): orjson would write it as null, so
    `dumps` leaves the document to the standard library, which writes it back as it came (SB-2)."""


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _Unusual(text)


def loads(data: bytes | str, rebuilt: str | None = None) -> Any:
    """JSON read as the standard library reads it, by orjson where that gives the same values (a long chat's
    request about four times faster, SB-2). Raises ValueError (or RecursionError) as `json.loads` does.
    `rebuilt`: a top-level key whose value the caller rebuilds from its texts alone (a chat request's
    messages), so its numbers need not come out as json's: not looked through (SB-13)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if not raw.startswith(codecs.BOM_UTF8):  # a BOM: json's rule
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:  # not JSON to orjson (NaN, lone surrogates, deep nesting...): json decides
            pass
        else:
            if not _huge_float([v for k, v in doc.items() if k != rebuilt] if rebuilt and type(doc) is dict else doc):
                return doc
    return json.loads(data, parse_constant=_Unusual, parse_float=_float)


def _huge_float(doc: Any) -> bool:
    """Whether `doc` holds a float of 2**63 or more either way: maybe an integer orjson could not read as one
    (a walk of the parsed document, about 40 us for a long chat: a scan of its bytes for long runs of digits
    took twice that, SB-13)."""
    stack = [doc]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is dict:
            stack.extend(x.values())
        elif t is list:
            stack.extend(x)
        elif t is float and not -_BIG < x < _BIG:
            return True
    return False


def dumps(doc: Any) -> bytes:
    """JSON bytes; a lone surrogate (text that was not UTF-8) is written as its `\\udXXX` escape, never an
    encoding error after the response has begun."""
    try:
        return orjson.dumps(doc)  # compact, not ASCII-escaped: as json.dumps below, about ten times faster
    except TypeError:  # a lone surrogate, an integer beyond 64 bits, an _Unusual number: the standard library
        pass
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, separators=(",", ":")).encode()


def sse_data(doc: Any) -> bytes:
    return b"data: " + dumps(doc) + b"\n\n"


async def events(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event (its data lines joined); other fields are dropped. Lines end
    with CRLF, LF or CR, and a leading byte order mark is ignored (the SSE format's rules); a last event
    with no blank line after it is still given (the format would drop it: a reply's end is kept, as
    before). Split as bytes and decoded an event at a time (S-26). A line's pieces with no line end in them
    are kept apart and joined once its end comes: a long line (an event of megabytes) costs time linear in
    its length, not quadratic (a 16 MB event took 3 s of the event loop in 16 KiB chunks, FZ-11). An event of
    more than MAX_EVENT bytes is a RemoteProtocolError: the stream ends with an error event (FZ-13)."""
    data: list[bytes] = []
    rest = b""
    pieces: list[bytes] = []  # of a line whose end has not come yet; `rest` is their first
    head = True  # a leading byte order mark is ignored (the SSE format's rule)
    held = 0  # bytes of the event not given yet: its data lines and the open line
    async for chunk in response.aiter_bytes():
        held += len(chunk)
        if held > MAX_EVENT:  # what one upstream event can make the server hold is bounded
            raise httpx.RemoteProtocolError(f"the upstream sent an event of more than {MAX_EVENT} bytes")
        if not head and rest and b"\n" not in chunk and b"\r" not in chunk and not rest.endswith(b"\r"):
            pieces.append(chunk)
            continue
        rest = b"".join([rest, *pieces, chunk]) if pieces else rest + chunk
        pieces = []
        if head:
            if len(rest) < len(codecs.BOM_UTF8) and codecs.BOM_UTF8.startswith(rest):
                continue  # maybe a mark split between chunks
            head, rest = False, rest.removeprefix(codecs.BOM_UTF8)
        if b"\r" in rest:
            cr = rest.endswith(b"\r")  # maybe the first half of a CRLF: decided with the next chunk
            rest = (rest[:-1] if cr else rest).replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if cr else b"")
        *lines, rest = rest.split(b"\n")
        for line in lines:
            if not line:
                if data:
                    yield b"\n".join(data).decode("utf-8", "replace")
                    data = []
            elif line.startswith(b"data:"):
                data.append(_value(line))
        held = len(rest) + sum(map(len, data))
    line = b"".join([rest, *pieces]).removesuffix(b"\r")
    if line.startswith(b"data:"):
        data.append(_value(line))
    if data:
        yield b"\n".join(data).decode("utf-8", "replace")


def _value(line: bytes) -> bytes:
    """A `data:` line's value: after the colon and one space, if there is one."""
    return line[6:] if line.startswith(b"data: ") else line[5:]


async def _drain(rest: AsyncIterator[str]) -> None:
    """Read what the upstream sends after [DONE] (normally just its body's end), so that its connection goes
    back to the upstream transport's pool instead of being closed: the next streamed turn then opens none
    (SB-3). Bounded by DRAIN_SECONDS: an upstream that holds its body open after [DONE] is cut off, as before."""
    with anyio.move_on_after(DRAIN_SECONDS), contextlib.suppress(httpx.HTTPError):
        async for _ in rest:
            pass


async def relay_stream(response: httpx.Response, filt: Filter, done: Callable[[Applied], Awaitable[None]],
                       disconnected: Callable[[], Any],
                       source: AsyncGenerator[str, None] | None = None) -> AsyncIterator[bytes]:
    """The client's SSE stream. `done(applied)` runs once the upstream said [DONE] and the client, still
    there, has been sent its own [DONE]; a fault sends an error event and ends the stream with nothing
    kept. `source`, when given, is read in place of the upstream's own events (settle.py: checks settled
    mid-reply)."""
    applied: Applied | None = None
    last: dict[str, Any] = {}
    upstream_events = events(response)
    try:
        async for data in source if source is not None else upstream_events:
            if data.strip() == "[DONE]":
                if applied is None:
                    rest, applied = filt.finish()
                    if rest:
                        yield sse_data({**{k: last[k] for k in ("id", "object", "created", "model") if k in last},
                                        "choices": [{"index": 0, "delta": {"content": rest}, "finish_reason": None}]})
                gone = await disconnected()
                yield b"data: [DONE]\n\n"
                if not gone:  # after [DONE] has gone out: the client does not wait for the snapshot (S-24)
                    await done(applied)
                if source is None:  # settle.py reads and closes its own generations
                    await _drain(upstream_events)
                return
            try:
                doc = loads(data)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to read
                doc = None
            if not isinstance(doc, dict):
                log.warning("upstream sent an event that is not a JSON object; the reply is dropped")
                yield sse_data({"error": error_body("the upstream model sent a malformed event stream",
                                                    "upstream_malformed", "upstream_error")})
                return
            if "error" in doc and "choices" not in doc:
                yield sse_data(doc)  # the upstream's own error event: passed on, nothing kept
                return
            last = doc
            choice = first_choice(doc)
            if choice is not None and applied is None:
                delta = choice.get("delta")
                content = delta.get("content") if isinstance(delta, dict) else None
                out = filt.feed(content) if isinstance(content, str) else ""
                if choice.get("finish_reason") is not None:
                    rest, applied = filt.finish()
                    out += rest
                if isinstance(content, str) or out:  # a last chunk may carry no delta: the held rest goes out
                    if not isinstance(delta, dict):
                        delta = choice["delta"] = {}
                    delta["content"] = out
            yield sse_data(doc)
        log.warning("the upstream stream ended without [DONE]; the reply is dropped")
        yield sse_data({"error": error_body("the upstream model's stream ended early", "upstream_incomplete",
                                            "upstream_error")})
    except httpx.HTTPError as e:
        refused = upstream_failure(e)
        log.warning("upstream failed mid-stream: %s", refused.message)
        yield sse_data(refused.doc())
    finally:
        if source is not None:
            await source.aclose()
        await response.aclose()
