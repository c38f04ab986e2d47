"""Relaying a streamed answer: the upstream's events rewritten chunk by chunk (receipts.py, or the narration
with --hide-tags), the snapshot kept only once the reply is complete. Everything the engine does not read
(other fields, `reasoning_content`/`reasoning` deltas, `usage`, other choices) passes untouched.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import anyio
import httpx

from ...commands import Applied
from ..errors import Refused, reply_too_large, upstream_failure
from ..limits import LOOP_CHARS, MAX_REPLY
from ..runtime.worker_threads import Workers
from ..wire.chat_completions import (
    content_chunk,
    delta_content,
    error_doc,
    first_choice,
    is_error_event,
    set_delta_content,
)
from ..wire.json_codec import loads_or_none
from ..wire.sse import DONE_EVENT, EventTooLarge, data_event, is_done

log = logging.getLogger("tagengine.serve")
DRAIN_SECONDS = 0.25  # the most a finished stream waits for the upstream's body to end


class Filter(Protocol):
    """What a reply's chunks go through: ReceiptStream (receipts), or StreamFilter (narration, --hide-tags)."""

    def feed(self, chunk: str) -> str: ...

    def finish(self) -> tuple[str, Applied]: ...


async def _drain(rest: AsyncIterator[str]) -> None:
    """Read what the upstream sends after [DONE] (normally just its body's end), so that its connection goes
    back to the upstream transport's pool instead of being closed: the next streamed turn then opens none
    (SB-3). Bounded by DRAIN_SECONDS: an upstream that holds its body open after [DONE] is cut off, as before."""
    with anyio.move_on_after(DRAIN_SECONDS), contextlib.suppress(httpx.HTTPError, EventTooLarge):
        async for _ in rest:
            pass


async def relay_stream(response: httpx.Response, events: AsyncGenerator[str, None], filt: Filter,
                       completed: Callable[[Applied], Awaitable[None]], disconnected: Callable[[], Any], *,
                       continued: bool = False, workers: Workers | None = None) -> AsyncIterator[bytes]:
    """The client's SSE stream, from `events` (the data of each event: the upstream's own, or with
    `continued` the mid-reply checks' continuations, mid_reply.py, which read and close their own
    generations). `completed(applied)` runs once the upstream said [DONE] and the client, still there, has been
    sent its own [DONE]; a fault, or a reply past MAX_REPLY characters, sends an error event and ends the
    stream with nothing kept. With `workers`, a piece of more than LOOP_CHARS characters is applied in a
    worker thread, and so is the end of a reply longer than that (SEC-2)."""
    applied: Applied | None = None
    last: dict[str, Any] = {}
    reply = Reply(filt, workers)
    try:
        async for data in events:
            if is_done(data):
                if applied is None:
                    rest, applied = await reply.finish()
                    if rest:
                        yield data_event(content_chunk(rest, like=last))
                gone = await disconnected()
                yield DONE_EVENT
                if not gone:  # after [DONE] has gone out: the client does not wait for the snapshot (S-24)
                    await completed(applied)
                if not continued:
                    await _drain(events)
                return
            doc = loads_or_none(data)
            if not isinstance(doc, dict):
                log.warning("upstream sent an event that is not a JSON object; the reply is dropped")
                yield data_event(error_doc("the upstream model sent a malformed event stream", "upstream_malformed",
                                           "upstream_error"))
                return
            if is_error_event(doc):
                yield data_event(doc)  # the upstream's own error event: passed on, nothing kept
                return
            last = doc
            choice = first_choice(doc)
            if choice is not None and applied is None:
                content = delta_content(choice)
                out = await reply.feed(content) if content is not None else ""
                if choice.get("finish_reason") is not None:
                    rest, applied = await reply.finish()
                    out += rest
                if content is not None or out:  # a last chunk may carry no delta: the held rest goes out
                    set_delta_content(choice, out)
            yield data_event(doc)
        log.warning("the upstream stream ended without [DONE]; the reply is dropped")
        yield data_event(error_doc("the upstream model's stream ended early", "upstream_incomplete", "upstream_error"))
    except (httpx.HTTPError, EventTooLarge, Refused) as e:
        refused = e if isinstance(e, Refused) else upstream_failure(e)
        log.warning("upstream failed mid-stream: %s", refused.message)
        yield data_event(refused.doc())
    finally:
        if continued:
            await events.aclose()
        await response.aclose()


class Reply:
    """A streamed reply's text through its filter, counted: past MAX_REPLY characters, `reply_too_large`
    (SEC-3); a big piece, or the end of a long reply, applied in a worker thread when there are `workers`."""

    def __init__(self, filt: Filter, workers: Workers | None) -> None:
        self.filt, self.workers, self.size = filt, workers, 0

    async def feed(self, content: str) -> str:
        self.size += len(content)
        if self.size > MAX_REPLY:
            raise reply_too_large()
        if self.workers is not None and len(content) > LOOP_CHARS:
            return await self.workers.run(self.filt.feed, content)
        return self.filt.feed(content)

    async def finish(self) -> tuple[str, Applied]:
        if self.workers is not None and self.size > LOOP_CHARS:  # a filter may apply the whole reply at its end
            return await self.workers.run(self.filt.finish)
        return self.filt.finish()
