"""A JSON answer, written one way: the server's codec (`json_codec.dumps`), never cached by a browser or a proxy
between (every JSON answer is about a game that moves). An error answer is the OpenAI-shaped document
(`chat_completions.error_doc`) through the same function, whatever the route."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.background import BackgroundTask
from starlette.responses import Response

from .json_codec import dumps

NO_STORE = {"cache-control": "no-store"}


def json_response(doc: Any, status: int = 200, headers: Mapping[str, str] | None = None,
                  background: BackgroundTask | None = None) -> Response:
    return Response(dumps(doc), status_code=status, media_type="application/json",
                    headers={**NO_STORE, **(headers or {})}, background=background)
