"""SillyTavern chat files, read and written back exactly (docs/sillytavern.md, "Chat files"; STF-1..).

A chat file is JSON Lines, written by SillyTavern as `chat.map(JSON.stringify).join("\\n")` (no line
break after the last line). The first line is a header when it is one: `chat_metadata` (with its
`integrity` slug, which SillyTavern compares before it accepts a save), and in older files `user_name`,
`character_name`, `create_date`. Group chats written by older versions have no header. Every other
line is a message: `name`, `is_user`, `is_system` (true also for a message hidden with `/hide`),
`send_date`, `mes` (the selected swipe's text), `swipes`, `swipe_id`, `swipe_info` (one per swipe),
`extra` (`extra.type` marks a system note: a help text, a `/sys` narration, a comment).

Reading keeps every line's bytes; writing back replaces only the lines whose content changed, each
serialised as `JSON.stringify` does (`js_dumps`), so every other line stays byte for byte as it was and
every key keeps its place. A malformed line is named with its line number and key (`ChatFileError`);
the checks are on the keys the replay reads, and any other key passes untouched.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem, TagengineError
from ..files import BOM, TooLarge, json_problem, read_limited
from ..records import frozen

MAX_CHAT_FILE_BYTES = 64 * 1024 * 1024  # one chat file, as one transcript line (F-5)
HEADER_KEYS = ("chat_metadata", "user_name", "character_name", "create_date")
TAGENGINE = "tagengine"  # the key our states go under: chat_metadata.tagengine, extra.tagengine
MAX_SAFE_INTEGER = 2**53  # beyond it JavaScript holds a number as the nearest double


@frozen(slots=True)
class LineProblem(Problem):
    """A `Problem` (code + path + message) in one line of a chat file: `line` counts from 1 (0 is the file as
    a whole), `path` is where in that line's JSON (`$` the whole line)."""

    line: int = 0

    def __str__(self) -> str:
        return f"{self.line}: {Problem.__str__(self)}"  # zero-argument super() fails in a slots dataclass


class ChatFileError(TagengineError, ValueError):
    """A chat file that cannot be replayed; every malformed line is named at once, as FILE:LINE: key."""

    def __init__(self, path: str, problems: Iterable[LineProblem]) -> None:
        self.path = path
        self.problems: tuple[LineProblem, ...] = tuple(problems)
        super().__init__("; ".join(self.lines(5)))

    def lines(self, most: int | None = None) -> list[str]:
        """`FILE:LINE: key: code: message` for each problem (the first `most` of them, then how many more)."""
        shown = self.problems if most is None else self.problems[:most]
        out = [f"{self.path}:{p}" if p.line else f"{self.path}: {Problem.__str__(p)}" for p in shown]
        if len(shown) < len(self.problems):
            out.append(f"{self.path}: and {len(self.problems) - len(shown)} more problem(s)")
        return out


@frozen(slots=True)
class Entry:
    """One line that holds JSON: its index among the file's lines (from 0) and what it holds."""

    index: int
    doc: dict[str, Any]

    @property
    def line(self) -> int:
        return self.index + 1

    @property
    def is_user(self) -> bool:
        return self.doc.get("is_user") is True

    @property
    def is_note(self) -> bool:
        """A system note (`extra.type` set: help, narration, comment...): not the Game Master's, skipped."""
        extra = self.doc.get("extra")
        return isinstance(extra, dict) and isinstance(extra.get("type"), str) and extra["type"] != ""


@dataclass
class ChatFile:
    """A chat file as read: its lines' bytes (each without its `\\n`), the header if it has one, the messages."""

    path: str
    prefix: bytes  # a byte order mark, written back as it came
    lines: list[bytes]
    header: Entry | None
    messages: list[Entry] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, Any] | None:
        meta = self.header.doc.get("chat_metadata") if self.header else None
        return meta if isinstance(meta, dict) else None

    def render(self, changed: dict[int, dict[str, Any]]) -> bytes:
        """The file with the lines at these indexes holding these documents; a document that serialises as
        the line's own did keeps the line's bytes. Every other line is copied byte for byte."""
        lines = list(self.lines)
        docs = {e.index: e.doc for e in ([self.header] if self.header else []) + self.messages}
        for index, doc in changed.items():
            new = js_dumps(doc)
            if new == js_dumps(docs[index]):
                continue
            cr = b"\r" if lines[index].endswith(b"\r") else b""
            lines[index] = new.encode("utf-8") + cr
        return self.prefix + b"\n".join(lines)


def read_chat(path: str, opener: Callable[[], Any] | None = None) -> ChatFile:
    """Read and check a chat file; ChatFileError names every malformed line, or why the file is unreadable.
    `opener` opens it elsewhere (an fsspec file system, `replay --dask`); `path` then only names it."""
    try:
        with (opener() if opener is not None else open(path, "rb")) as f:
            prefix = BOM if f.read(3) == BOM else b""  # dropped for reading (F-6), written back as it came
            f.seek(0)
            data = read_limited(f, MAX_CHAT_FILE_BYTES, path)
    except TooLarge as e:
        raise ChatFileError(path, [LineProblem("$", "too-large", f"a chat file is at most {e.limit} bytes, "
                                               "tagengine's limit for one chat")]) from None
    except OSError as e:
        raise ChatFileError(path, [LineProblem("$", "unreadable", e.strerror or str(e))]) from None
    return parse_chat(data, path, prefix)


def parse_chat(data: bytes, path: str, prefix: bytes = b"") -> ChatFile:
    """A chat file's content (its BOM already dropped) as a ChatFile; ChatFileError names each bad line."""
    lines = data.split(b"\n")
    chat = ChatFile(path, prefix, lines, None)
    problems: list[LineProblem] = []
    first = True
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        number = index + 1
        doc = _chat_line_doc(raw, number, problems)
        if doc is None:
            first = False
            continue
        if first and _is_header(doc):
            chat.header = Entry(index, doc)
            problems += header_problems(doc, number)
        else:
            chat.messages.append(Entry(index, doc))
            problems += message_problems(doc, number)
        first = False
    if problems:
        raise ChatFileError(path, problems)
    return chat


def looks_like_chat(first_line: bytes) -> bool:
    """Whether a file's first line is a SillyTavern header or message, rather than one of our transcripts."""
    try:
        doc = json.loads(first_line.removeprefix(BOM))
    except (RecursionError, ValueError):
        return False
    return isinstance(doc, dict) and "messages" not in doc and ("mes" in doc or _is_header(doc))


def first_line(path: str, limit: int = 1 << 20, opener: Callable[[], Any] | None = None) -> bytes:
    """The first non-blank line of a file, at most `limit` bytes of it (for `looks_like_chat`). `opener`
    opens it elsewhere (an fsspec file system, `replay --dask`), as for `read_chat`."""
    with (opener() if opener is not None else open(path, "rb")) as f:
        while True:
            line: bytes = f.readline(limit)
            if not line or line.strip():
                return line


def _is_header(doc: dict[str, Any]) -> bool:
    return "mes" not in doc and "is_user" not in doc and any(k in doc for k in HEADER_KEYS)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _chat_line_doc(raw: bytes, number: int, problems: list[LineProblem]) -> dict[str, Any] | None:
    """A chat file line's JSON object, read strictly (UTF-8, no NaN or Infinity), or None with its problem noted."""
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (RecursionError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        code = "not-utf8" if isinstance(e, UnicodeDecodeError) else "not-json"
        problems.append(LineProblem("$", code, json_problem(e), line=number))
        return None
    if not isinstance(doc, dict):
        problems.append(LineProblem("$", "wrong-type", f"a line is a JSON object, not {_kind(doc)}", line=number))
        return None
    return doc


def _kind(value: Any) -> str:
    """What a value is, quoting it (shortened), so the message names the offending input."""
    if value is None:
        return "null"
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)
    try:
        quoted = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return kind
    return f"{kind}, {quoted if len(quoted) <= 40 else quoted[:37] + '...'}"


def header_problems(doc: dict[str, Any], number: int) -> list[LineProblem]:
    out: list[LineProblem] = []
    meta = doc.get("chat_metadata")
    if "chat_metadata" in doc and not isinstance(meta, dict):
        out.append(LineProblem("chat_metadata", "wrong-type", f"an object, not {_kind(meta)}", line=number))
    elif isinstance(meta, dict) and TAGENGINE in meta:
        out += tagengine_problems(meta[TAGENGINE], number, "chat_metadata.tagengine")
    return out


def tagengine_problems(value: Any, number: int, key: str) -> list[LineProblem]:
    """`chat_metadata.tagengine` as export writes it: `characters` (names) or `start` (a state), and `state`."""
    if not isinstance(value, dict):
        return [LineProblem(key, "wrong-type", f"an object, not {_kind(value)}", line=number)]
    out = []
    names = value.get("characters")
    if "characters" in value and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        out.append(LineProblem(f"{key}.characters", "wrong-type", "a list of names", line=number))
    if "start" in value and not isinstance(value["start"], dict):
        out.append(LineProblem(f"{key}.start", "wrong-type", f"a state object, not {_kind(value['start'])}",
                               line=number))
    return out


def message_problems(doc: dict[str, Any], number: int) -> list[LineProblem]:
    """The keys a replay reads, checked: `mes` text, `is_user`/`is_system` booleans, `name` text, `extra`
    an object with `type` text, `swipes` a list of text, `swipe_id` one of them, `swipe_info` objects."""
    out: list[LineProblem] = []

    def bad(key: str, code: str, message: str) -> None:
        out.append(LineProblem(key, code, message, line=number))

    if "mes" not in doc:
        bad("mes", "missing-key", "a message has its text in `mes`")
    elif not isinstance(doc["mes"], str):
        bad("mes", "wrong-type", f"text, not {_kind(doc['mes'])}")
    for key in ("is_user", "is_system"):
        if key in doc and not isinstance(doc[key], bool):
            bad(key, "wrong-type", f"true or false, not {_kind(doc[key])}")
    if "name" in doc and not isinstance(doc["name"], str):
        bad("name", "wrong-type", f"text, not {_kind(doc['name'])}")
    extra = doc.get("extra")
    if "extra" in doc and not isinstance(extra, dict):
        bad("extra", "wrong-type", f"an object, not {_kind(extra)}")
    elif isinstance(extra, dict) and "type" in extra and not isinstance(extra["type"], str):
        bad("extra.type", "wrong-type", f"text, not {_kind(extra['type'])}")
    swipes = doc.get("swipes")
    if "swipes" in doc:
        if not isinstance(swipes, list):
            bad("swipes", "wrong-type", f"a list of text, not {_kind(swipes)}")
            swipes = None
        else:
            for j, s in enumerate(swipes):
                if not isinstance(s, str):
                    bad(f"swipes[{j}]", "wrong-type", f"text, not {_kind(s)}")
    sid = doc.get("swipe_id")
    if "swipe_id" in doc and swipes is not None:
        if not isinstance(sid, int) or isinstance(sid, bool):
            bad("swipe_id", "wrong-type", f"a whole number, not {_kind(sid)}")
        elif not 0 <= sid < len(swipes):
            bad("swipe_id", "out-of-range", f"{sid} names no swipe: there are {len(swipes)}")
    info = doc.get("swipe_info")
    if "swipe_info" in doc:
        if not isinstance(info, list):
            bad("swipe_info", "wrong-type", f"a list, not {_kind(info)}")
        else:
            for j, item in enumerate(info):
                if item is not None and not isinstance(item, dict):
                    bad(f"swipe_info[{j}]", "wrong-type", f"an object, not {_kind(item)}")
                elif isinstance(item, dict) and "extra" in item and not isinstance(item["extra"], dict):
                    bad(f"swipe_info[{j}].extra", "wrong-type", f"an object, not {_kind(item['extra'])}")
    return out


# -- JSON as SillyTavern writes it ------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _ESCAPES.get(c) or f"\\u{ord(c):04x}"


def js_string(text: str) -> str:
    """A string as `JSON.stringify` writes it: `"`, `\\` and control characters escaped (lower-case hex), a
    lone surrogate as `\\udxxx`, everything else as it is (no `\\u` for non-ASCII, none for U+2028)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def js_number(value: int | float) -> str:
    """A number as JavaScript's `Number.prototype.toString` writes it (ECMA-262 Number::toString): the
    shortest digits that read back (Python's `repr` finds the same), plain up to 21 digits, else `1e+21`;
    a whole number beyond 2**53 as the double JavaScript would hold; NaN and infinities as `null`."""
    if isinstance(value, int):
        if abs(value) <= MAX_SAFE_INTEGER:
            return str(value)
        value = float(value)
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    stripped = digits.lstrip("0")
    n = len(whole) + (int(exp) if exp else 0) - (len(digits) - len(stripped))  # value = 0.DIGITS * 10**n
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mant = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mant}e{'+' if e > 0 else '-'}{abs(e)}"


def js_dumps(value: Any) -> str:
    """`JSON.stringify(value)`: compact, strings and numbers as JavaScript writes them, keys in their order.
    One difference, on purpose: JavaScript puts keys like "0", "1" first in an object; here every key keeps
    the place it had in the file (a file SillyTavern wrote has them first already)."""
    parts: list[str] = []
    _dump(value, parts)
    return "".join(parts)


def _dump(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(js_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(js_number(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(js_string(str(k)))
            out.append(":")
            _dump(v, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _dump(v, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")
