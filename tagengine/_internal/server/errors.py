"""Errors as the client gets them: `Refused` (raised deep, answered at the route in the OpenAI error format),
and the upstream's failures mapped to it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, ParamSpec

import httpx
from starlette.responses import Response

from .limits import MAX_REPLY
from .upstream.client import AnswerTooLarge
from .wire.answers import json_response
from .wire.chat_completions import error_doc, error_message
from .wire.json_codec import loads_or_none
from .wire.sse import EventTooLarge

P = ParamSpec("P")


def error(status: int, message: str, code: str, kind: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> Response:
    """The one error body every route answers with: `{"error": {"message", "type", "code"}}`."""
    return json_response(error_doc(message, code, kind), status, headers)


class Refused(Exception):
    """A request the server answers with an error; raised deep, turned into a response at the route."""

    def __init__(self, status: int, message: str, code: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind = status, message, code, kind

    def doc(self) -> dict[str, Any]:
        """The error as the wire has it, for a stream's error event."""
        return error_doc(self.message, self.code, self.kind)

    def response(self) -> Response:
        return json_response(self.doc(), self.status)


def refusals_as_responses(handler: Callable[P, Awaitable[Response]]) -> Callable[P, Awaitable[Response]]:
    """A handler whose `Refused` raised anywhere below it becomes the error response it carries."""

    @wraps(handler)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> Response:
        try:
            return await handler(*args, **kwargs)
        except Refused as r:
            return r.response()

    return wrapped


def upstream_failure(e: Exception) -> Refused:
    """An httpx failure (or an event past the reader's bound) as the client's error (the key is in no
    message httpx makes)."""
    if isinstance(e, httpx.TimeoutException):
        return Refused(504, "the upstream model did not answer in time", "upstream_timeout", "upstream_error")
    if isinstance(e, httpx.ConnectError):
        return Refused(502, "the upstream model cannot be reached", "upstream_unreachable", "upstream_error")
    if isinstance(e, EventTooLarge | AnswerTooLarge):  # past a bound (FZ-13, SEC-3)
        return Refused(502, str(e), "upstream_too_large", "upstream_error")
    return Refused(502, f"the upstream connection failed: {type(e).__name__}", "upstream_failed", "upstream_error")


def reply_too_large() -> Refused:
    """A reply from the upstream past MAX_REPLY characters: not applied, not kept (SEC-3)."""
    return Refused(502, f"the upstream model's reply is over {MAX_REPLY} characters, the most this server applies",
                   "reply_too_large", "upstream_error")


def upstream_status(status: int, body: bytes) -> Refused:
    """An upstream 4xx/5xx as an error with the same status; the upstream's own message when it has one. A
    status past 599, which no server can answer with (uvicorn writes 100..599), is a 502."""
    message = f"the upstream model answered {status}"
    detail = error_message(loads_or_none(body))
    if detail is not None:
        message += f": {detail[:500]}"
    return Refused(status if status < 600 else 502, message, "upstream_error", "upstream_error")
