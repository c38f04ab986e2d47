"""GET /healthz: whether the server answers (the one route `--api-key` leaves open)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..context import ServerContext


def health_routes(ctx: ServerContext) -> list[Route]:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    return [Route("/healthz", healthz)]
