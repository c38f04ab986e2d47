"""Issue 12, S-25: the access line is written once a response has gone out, and for one cut short too."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from tagengine._internal.server.runtime.access_log import AccessLog

SCOPE = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "query_string": b"a=1",
         "http_version": "1.1", "client": ("127.0.0.1", 5555), "headers": [(b"authorization", b"Bearer k")]}


def serve(app, caplog) -> list[str]:
    sent: list[str] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message["type"])
        assert not [r for r in caplog.records if r.name == "tagengine.access"], "logged before the last byte"

    async def run():
        with contextlib.suppress(RuntimeError):  # the app's own fault, after the line is written
            await AccessLog(app)(dict(SCOPE), receive, send)

    with caplog.at_level(logging.INFO, logger="tagengine.access"):
        asyncio.run(run())
    return [r.getMessage() for r in caplog.records if r.name == "tagengine.access"]


def test_a_whole_answer_gets_one_line_after_its_last_byte(caplog):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    assert serve(app, caplog) == ['127.0.0.1:5555 - "POST /v1/chat/completions?a=1 HTTP/1.1" 200']


def test_a_stream_cut_short_is_logged_as_such_and_no_header_is(caplog):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"data: x\n\n", "more_body": True})
        raise RuntimeError("the client left")

    lines = serve(app, caplog)
    assert lines == ['127.0.0.1:5555 - "POST /v1/chat/completions?a=1 HTTP/1.1" 200 (cut short)']
    assert "Bearer" not in lines[0]
