"""A chat request that names no campaign: it goes upstream byte for byte, the client's headers too (S-18),
and the answer comes back the same way (a stream cut short ends with an error event, S-31; a document cut
short is cut for the client too, S-34)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping

import httpx
from starlette.responses import Response

from ..errors import upstream_failure, upstream_status
from ..upstream.client import Upstream, media_type
from ..wire.sse import data_event
from ..wire.streamed import Incomplete, Streamed

log = logging.getLogger("tagengine.serve")


async def passthrough(upstream: Upstream, incoming: Mapping[str, str], raw: bytes, stream: bool,
                      headers: Mapping[str, str] | None = None) -> Response:
    """`headers`: the server's own x-tagengine-* headers for the answer (a warning, a quiet request's reason)."""
    req = upstream.passthrough("/chat/completions", incoming, raw)
    try:
        got = await upstream.send(req, stream=True)
    except httpx.HTTPError as e:
        return upstream_failure(e).response()
    if got.status_code >= 600:  # no server can answer with it
        try:
            return upstream_status(got.status_code, await got.aread()).response()
        except httpx.HTTPError as e:
            return upstream_failure(e).response()
        finally:
            await got.aclose()
    media = media_type(got)
    is_sse = media.split(";")[0].strip().lower() == "text/event-stream"
    return Streamed(_piped(got, is_sse), headers, status_code=got.status_code, media_type=media,
                    document=not (is_sse or stream))


async def _piped(got: httpx.Response, is_sse: bool) -> AsyncIterator[bytes]:
    """The answer's bytes as they came; a fault mid-answer ends it as the client can tell."""
    try:
        async for part in got.aiter_raw():
            yield part
    except httpx.HTTPError as e:
        refused = upstream_failure(e)
        log.warning("upstream failed mid-answer: %s", refused.message)
        if not is_sse:  # a document cut short: the client's answer is cut too (S-34)
            raise Incomplete from None
        # a stream cut short ends with an error event, as a campaign's does (S-31); the blank lines first end
        # an event the cut left open
        yield b"\n\n" + data_event(refused.doc())
    finally:
        await got.aclose()
