"""A request's body, read within a bound: as it comes (`body_within`), as the JSON API's object of known keys
(`object_body`). Every route that reads a body reads it here, so no route holds more than its bound (SEC-1)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from ..errors import Refused
from ..limits import MAX_BODY
from .json_codec import loads


async def body_within(request: Request, limit: int) -> bytes | None:
    """The request's body, read as it comes; None as soon as it is over `limit` bytes."""
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
    return b"".join(parts)


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """The body, at most `limit` bytes (MAX_BODY): a Content-Length past it is refused before a byte is read
    (SEC-1)."""
    limit = MAX_BODY if limit is None else limit
    declared = request.headers.get("content-length", "")
    raw = None if declared.isdigit() and int(declared) > limit else await body_within(request, limit)
    if raw is None:
        raise Refused(413, f"the request body is over {limit} bytes, the most this server reads",
                      "request_too_large")
    return raw


def object_body(raw: bytes, keys: tuple[str, ...]) -> dict[str, Any]:
    """A JSON API's body: an object of `keys` only, else the 400 that says why (not JSON, not an object, or
    the first key it does not take)."""
    try:
        body = loads(raw)
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"the request body is not JSON: {e}", "invalid_json") from None
    if not isinstance(body, dict):
        raise Refused(400, f"the request body must be a JSON object of {', '.join(keys)}", "invalid_request")
    unknown = sorted(k for k in body if k not in keys)
    if unknown:
        raise Refused(400, f"unknown key {unknown[0][:60]!r}: the body holds {', '.join(keys)}", "invalid_request")
    return body
