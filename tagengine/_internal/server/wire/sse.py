"""Server-sent events (the format of a streamed chat completion): the upstream's events read, the client's
written. Only the `data` field is read or written; a stream of chat completion chunks needs no other."""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

from .json_codec import dumps

SLICE = 16  # events given from one chunk before the event loop is given back (SEC-2); a model's stream has one
DONE = "[DONE]"  # the data of a chat completion stream's last event
DONE_EVENT = b"data: [DONE]\n\n"


class EventTooLarge(ValueError):
    """An event of more than the reader's limit: the stream ends with an error event (FZ-13)."""


def data_event(doc: Any) -> bytes:
    """One event whose data is `doc` as JSON."""
    return b"data: " + dumps(doc) + b"\n\n"


def is_done(data: str) -> bool:
    """Whether an event's data ends a chat completion stream."""
    return data.strip() == DONE


async def read_events(chunks: AsyncIterable[bytes], limit: int) -> AsyncGenerator[str, None]:
    """The `data` of each event in `chunks` (its data lines joined); other fields are dropped. Lines end
    with CRLF, LF or CR, and a leading byte order mark is ignored (the SSE format's rules); a last event
    with no blank line after it is still given (the format would drop it: a reply's end is kept, as
    before). Split as bytes and decoded an event at a time (S-26). A line's pieces with no line end in them
    are kept apart and joined once its end comes: a long line (an event of megabytes) costs time linear in
    its length, not quadratic (a 16 MB event took 3 s of the event loop in 16 KiB chunks, FZ-11). An event of
    more than `limit` bytes raises EventTooLarge (FZ-13). A chunk that holds many events (an upstream that
    sends faster than the server relays) gives the event loop back every SLICE events, so the relay of one
    stream cannot keep other requests waiting for the whole chunk (SEC-2)."""
    data: list[bytes] = []
    rest = b""
    pieces: list[bytes] = []  # of a line whose end has not come yet; `rest` is their first
    head = True  # a leading byte order mark is ignored (the SSE format's rule)
    held = 0  # bytes of the event not given yet: its data lines and the open line
    async for chunk in chunks:
        held += len(chunk)
        if held > limit:  # what one upstream event can make the server hold is bounded
            raise EventTooLarge(f"the upstream sent an event of more than {limit} bytes")
        if not head and rest and b"\n" not in chunk and b"\r" not in chunk and not rest.endswith(b"\r"):
            pieces.append(chunk)
            continue
        rest = b"".join([rest, *pieces, chunk]) if pieces else rest + chunk
        pieces = []
        if head:
            if len(rest) < len(codecs.BOM_UTF8) and codecs.BOM_UTF8.startswith(rest):
                continue  # maybe a mark split between chunks
            head, rest = False, rest.removeprefix(codecs.BOM_UTF8)
        if b"\r" in rest:
            cr = rest.endswith(b"\r")  # maybe the first half of a CRLF: decided with the next chunk
            rest = (rest[:-1] if cr else rest).replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if cr else b"")
        *lines, rest = rest.split(b"\n")
        given = 0
        for line in lines:
            if not line:
                if data:
                    yield b"\n".join(data).decode("utf-8", "replace")
                    data = []
                    given += 1
                    if given % SLICE == 0:  # a chunk of many events (a fast upstream) lets other requests in
                        await asyncio.sleep(0)
            elif line.startswith(b"data:"):
                data.append(_value(line))
        held = len(rest) + sum(map(len, data))
    line = b"".join([rest, *pieces]).removesuffix(b"\r")
    if line.startswith(b"data:"):
        data.append(_value(line))
    if data:
        yield b"\n".join(data).decode("utf-8", "replace")


def _value(line: bytes) -> bytes:
    """A `data:` line's value: after the colon and one space, if there is one."""
    return line[6:] if line.startswith(b"data: ") else line[5:]
