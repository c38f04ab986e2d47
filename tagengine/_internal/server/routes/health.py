"""GET /healthz: whether the server answers (the one route `--api-key` leaves open)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..context import ServerContext
from ..wire.answers import json_response
from .base import route


async def healthz(request: Request) -> Response:
    return json_response({"ok": True})


def health_routes(ctx: ServerContext) -> list[Route]:
    return [route("/healthz", healthz)]
