"""SSE reading benchmark (FZ-11): `relay.events` over one long event (1, 4, 16 and 30 MB of data; more is
refused, FZ-13), in 16 KiB chunks as a socket gives them, against the same bytes in chunks of a normal
reply's events.

A buggy or hostile upstream may send an event of megabytes (a base64 image, a runaway line); reading it
runs on the event loop, so every other chat waits meanwhile. Before FZ-11 each chunk was appended to the
line and the whole line scanned again: 16 MB took 3 s. Prints CPU seconds per MB; linear reading keeps
it flat as the event grows.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx

from tagengine._internal.server.limits import MAX_ANSWER
from tagengine._internal.server.wire.sse import read_events

CHUNK = 16 * 1024


async def chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for p in parts:
        yield p


async def read(body: bytes) -> tuple[float, int]:
    parts = [body[i:i + CHUNK] for i in range(0, len(body), CHUNK)]
    start = time.process_time()
    got = 0
    async for data in read_events(httpx.Response(200, content=chunks(parts)).aiter_bytes(), MAX_ANSWER):
        got += len(data)
    return time.process_time() - start, got


def main() -> None:
    print(f"{'event':>8} {'cpu s':>8} {'s/MB':>8}   (one event, {CHUNK // 1024} KiB chunks)")
    for mb in (1, 4, 16, 30):
        body = b"data: " + json.dumps({"x": "a" * (mb * 1_000_000)}).encode() + b"\n\n"
        seconds, got = asyncio.run(read(body))
        assert got == len(body) - 8
        print(f"{mb:>6}MB {seconds:>8.3f} {seconds / mb:>8.4f}")
    small = b"".join(b"data: " + json.dumps({"choices": [{"delta": {"content": "word "}}]}).encode() + b"\n\n"
                     for _ in range(100_000))
    seconds, _ = asyncio.run(read(small))
    print(f"{len(small) / 1e6:>6.1f}MB {seconds:>8.3f} {seconds / (len(small) / 1e6):>8.4f}   "
          "(100 000 small events, the same chunks)")


if __name__ == "__main__":
    main()
