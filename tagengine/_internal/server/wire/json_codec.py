"""The server's JSON: request bodies, upstream answers, events and what it writes back (SB-2).

Read as the standard library reads it, by orjson where that gives the same values (a long chat's request
about four times faster); written compact and not ASCII-escaped, a lone surrogate as its escape. The store's
own JSON (snapshots, canonical and sorted, `campaigns.canonical_json`) is a storage format, not this one.
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

import orjson

from ...prefix_memo import ITEM_CHARS, PrefixMemo, held_message_chars

_BIG = 2.0 ** 63  # orjson reads an integer beyond 64 bits as a float, of at least this size: json reads it


class _Unusual(float):
    """A number only the standard library reads (NaN, Infinity, 1e400): orjson would write it as null, so
    `dumps` leaves the document to the standard library, which writes it back as it came (SB-2)."""


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _Unusual(text)


def loads(data: bytes | str, rebuilt: str | None = None) -> Any:
    """JSON read as the standard library reads it, by orjson where that gives the same values (a long chat's
    request about four times faster, SB-2). Raises ValueError (or RecursionError) as `json.loads` does.
    `rebuilt`: a top-level key whose value the caller rebuilds from its texts alone (a chat request's
    messages), so its numbers need not come out as json's: not looked through (SB-13)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if not raw.startswith(codecs.BOM_UTF8):  # a BOM: json's rule
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:  # not JSON to orjson (NaN, lone surrogates, deep nesting...): json decides
            pass
        else:
            if not _huge_float([v for k, v in doc.items() if k != rebuilt] if rebuilt and type(doc) is dict else doc):
                return doc
    return json.loads(data, parse_constant=_Unusual, parse_float=_float)


def loads_or_none(data: bytes | str) -> Any:
    """`loads`, or None for what is not JSON or is nested too deep to read (an upstream's answer, FZ-2)."""
    try:
        return loads(data)
    except (ValueError, RecursionError):
        return None


def _huge_float(doc: Any) -> bool:
    """Whether `doc` holds a float of 2**63 or more either way: maybe an integer orjson could not read as one
    (a walk of the parsed document, about 40 us for a long chat: a scan of its bytes for long runs of digits
    took twice that, SB-13)."""
    stack = [doc]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is dict:
            stack.extend(x.values())
        elif t is list:
            stack.extend(x)
        elif t is float and not -_BIG < x < _BIG:
            return True
    return False


def dumps(doc: Any) -> bytes:
    """JSON bytes; a lone surrogate (text that was not UTF-8) is written as its `\\udXXX` escape, never an
    encoding error after the response has begun."""
    try:
        return orjson.dumps(doc)  # compact, not ASCII-escaped: as json.dumps below, about ten times faster
    except TypeError:  # a lone surrogate, an integer beyond 64 bits, an _Unusual number: the standard library
        pass
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, separators=(",", ":")).encode()


class ChatBodies:
    """`dumps` of the chat bodies a server sends upstream, each message's JSON written once while it is kept. A turn's
    history holds the very message objects of the turn before for the start it shares with it (`RecentHistories`),
    and a body's messages are its system prompt, that history and the reminder: the messages' JSON is kept by them
    (a `PrefixMemo`, which finds the shared start by identity and compares another object by its value), and a body
    is written with the kept JSON in place (`orjson.Fragment`), a quarter of writing it whole (PF-61). The messages
    are read-only once written (the server's are)."""

    def __init__(self) -> None:
        self._written: PrefixMemo[Any, orjson.Fragment] = PrefixMemo(_message_chars)

    def dumps(self, body: dict[str, Any]) -> bytes:
        """`dumps(body)`, the same document."""
        messages = body.get("messages")
        if type(messages) is not list or not messages:
            return dumps(body)
        # the last message (the user's new one, or the reminder after it) is written on its own: kept, it would
        # keep each turn's body beside the next one's, which starts with all but it
        written = [*self._written.values(messages[:-1], _written_more), orjson.Fragment(dumps(messages[-1]))]
        try:
            return orjson.dumps({**body, "messages": written})
        except TypeError:  # another field only the standard library writes: the whole body by `dumps`
            return dumps(body)


def _written_more(known: list[orjson.Fragment], messages: list[Any]) -> list[orjson.Fragment]:
    # copied to bytes of their own size: orjson's answer keeps the 4 KiB buffer it was written into, 1.2 MB for a
    # 200-message chat kept
    known += [orjson.Fragment(memoryview(dumps(m)).tobytes()) for m in messages[len(known):]]
    return known


def _message_chars(message: Any) -> int:
    """A kept message's size: the message as `held_message_chars` counts it, and its JSON, a second copy of its text
    (a message of another shape, parts, not text, by its JSON's length, twice)."""
    if type(message) is dict and type(message.get("content")) is str:
        return held_message_chars(message) + len(message["content"])
    return 2 * len(dumps(message)) + ITEM_CHARS
