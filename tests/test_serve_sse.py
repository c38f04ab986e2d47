"""Issue 12, S-26: the upstream's server-sent events read as bytes, split at CRLF, LF or CR only."""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal.server.limits import MAX_ANSWER
from tagengine._internal.server.wire.sse import EventTooLarge, read_events


class Chunks(httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for p in self.parts:
            yield p


def read(parts: list[bytes], limit: int = MAX_ANSWER) -> list[str]:
    async def run() -> list[str]:
        return [e async for e in read_events(httpx.Response(200, stream=Chunks(parts)).aiter_bytes(), limit)]

    return asyncio.run(run())


def spec(body: bytes) -> list[str]:
    """The SSE format's data events, read the plain way: the whole body less a leading byte order mark, its
    lines, blank lines between (and, leniently as `events`, a last event with no blank line after it)."""
    out, data = [], []
    for line in body.removeprefix(codecs.BOM_UTF8).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
        if not line:
            if data:
                out.append(b"\n".join(data).decode("utf-8", "replace"))
            data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
    if data:
        out.append(b"\n".join(data).decode("utf-8", "replace"))
    return out


LINE = st.one_of(st.sampled_from([b"", b"data: [DONE]", b": a comment", b"event: x", b"data:", b"id: 7"]),
                 st.text(max_size=12).map(lambda t: b"data: " + t.encode("utf-8", "surrogatepass")))
END = st.sampled_from([b"\n", b"\r\n", b"\r"])


@settings(max_examples=examples(300), deadline=None)
@given(st.booleans(), st.lists(st.tuples(LINE, END), max_size=12), LINE, st.data())
def test_events_split_anywhere_are_the_events_of_the_whole_body(bom, lines, last, data):
    """`last`: the body's last line, without a line end (read as the plain way reads it); `bom`: the body
    starts with a byte order mark, which may be split too."""
    body = (codecs.BOM_UTF8 if bom else b"") + b"".join(line + end for line, end in lines) + last
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=6)))
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert read(parts) == spec(body)


def test_a_line_separator_inside_the_json_is_not_a_line_end():
    """U+2028 is a line end to str.splitlines (what httpx's text lines used), not to the SSE format: a reply
    that holds one stays one event."""
    doc = '{"choices": [{"index": 0, "delta": {"content": "one\u2028two\u0085three"}}]}'
    assert read([b"data: " + doc.encode() + b"\n\n", b"data: [DONE]\n\n"]) == [doc, "[DONE]"]


def test_a_crlf_split_between_two_chunks_ends_one_line():
    assert read([b"data: a\r", b"\ndata: b\r\n\r\n"]) == ["a\nb"]
    assert read([b"data: a\r", b"\r", b"data: b\r"]) == ["a", "b"]


def test_a_leading_byte_order_mark_is_ignored_even_split():
    assert read([b"\xef", b"\xbb", b"\xbfdata: a\n\n"]) == ["a"]
    assert read([b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n"]) == ["a"]  # only the first


def test_an_event_past_max_event_is_an_error_and_many_small_ones_are_not():
    """FZ-13: what one upstream event can make the server hold is bounded: a line that never ends, or an
    event of many data lines, past MAX_ANSWER bytes is an EventTooLarge (the relay's error event)."""
    with pytest.raises(EventTooLarge, match="more than 1000 bytes"):
        read([b"data: " + b"x" * 300, *[b"x" * 300] * 4], 1000)
    with pytest.raises(EventTooLarge):
        read([b"data: " + b"y" * 50 + b"\n"] * 30, 1000)
    assert read([b"data: " + b"y" * 50 + b"\n\n"] * 300, 1000) == ["y" * 50] * 300
    assert read([b"data: " + b"z" * 900, b"\n\n", b"data: " + b"z" * 900, b"\n\n"], 1000) == ["z" * 900] * 2
