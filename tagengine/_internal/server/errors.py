"""Errors in the OpenAI wire format: `{"error": {"message", "type", "code"}}` with the right status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response


def error(status: int, message: str, code: str, kind: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error_body(message, code, kind)}, status_code=status, headers=headers)


def error_body(message: str, code: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"message": message, "type": kind, "code": code}


class Refused(Exception):
    """A request the server answers with an error; raised deep, turned into a response at the route."""

    def __init__(self, status: int, message: str, code: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind = status, message, code, kind

    def doc(self) -> dict[str, Any]:
        """The error as the wire has it, for a stream's error event."""
        return {"error": error_body(self.message, self.code, self.kind)}

    def response(self) -> JSONResponse:
        return JSONResponse(self.doc(), status_code=self.status)


def refusals_as_responses(route: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A route whose `Refused` raised anywhere below it becomes the error response it carries."""

    @wraps(route)
    async def wrapped(request: Request) -> Response:
        try:
            return await route(request)
        except Refused as r:
            return r.response()

    return wrapped
