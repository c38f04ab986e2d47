"""A streamed answer (server-sent events, or a passed-through body) sent from the request's own task.

Starlette's StreamingResponse (under an ASGI server of spec 2.3, as uvicorn is) starts a task group and
streams from a new task: the first byte waited for that task's turn (0.15 ms of a streamed turn's first
byte on the benchmark machine, SB-13). Here the head is sent at once and the body follows from this task;
a watcher task waits for the client to leave and then cancels the stream (the upstream request is closed
by the stream's own clean-up, as before: nothing is kept). Holding the head back until the first piece came
was slower (the client then read the head only after the piece); under `tagengine serve` the head leaves
with the first piece only when that piece is ready in the same turn of the event loop (head_join.py).

A body that raises `Incomplete` ends the response without its end (no last chunk: uvicorn closes the connection), so
the client knows the answer is incomplete instead of taking what came for all of it (S-34).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class Incomplete(Exception):
    """Raised by a Streamed body: the answer is incomplete, and the client must be able to tell."""


class Streamed(Response):
    """`document`: the body is one document, not a stream of events (a passed-through JSON answer): each piece
    goes once the next is known, so the last goes with the body's end, in one write with the head when the
    answer came whole (SB-16); a client reads a document whole anyway."""

    def __init__(self, body: AsyncIterator[bytes], headers: Mapping[str, str] | None = None,
                 status_code: int = 200, media_type: str = "text/event-stream", document: bool = False) -> None:
        self.body_iterator = body
        self.document = document
        self.status_code = status_code
        self.media_type = media_type
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        gone = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            task.cancel()

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            last = b""
            try:
                async for chunk in self.body_iterator:
                    if not self.document:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        continue
                    if last:
                        await send({"type": "http.response.body", "body": last, "more_body": True})
                    last = chunk
            except Incomplete:
                # what came goes out; the response is left without its end, so the server closes the connection
                if last:
                    await send({"type": "http.response.body", "body": last, "more_body": True})
                return
            await send({"type": "http.response.body", "body": last, "more_body": False})
        except asyncio.CancelledError:
            if not gone:
                raise
            task.uncancel()  # the client left: the stream is closed, nothing more to send
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:  # the cancel came in a send: the stream waits at a yield, not closed yet
                await aclose()
        finally:
            watcher.cancel()
