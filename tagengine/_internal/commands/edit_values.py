"""What a player may type into a sheet: each value checked against its field, column, ability or live value
(SHEET-11..18, docs/editor.md, decisions ED-3). A value arrives as a form posts it (text) or as JSON (a number,
a flag); either way it is checked here and stored in its type, or refused with a problem that keeps what was
typed. `<script>` is text like any other: it is stored as typed and every page escapes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import Problem
from ..ruleset.sheet import ColumnDef, FieldDef
from ..sheet.edit_paths import text_limit
from ..text import normalise, prompt_unsafe, writable
from .numbers import parse_int

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # control characters but tab and line feed
# U-19: a `dice` value is NdS with an optional +M or -M: `1d8`, `d20`, `2d6+1` (ED-3)
DICE = re.compile(r"(?:[1-9][0-9]{0,2})?[dD][1-9][0-9]{0,3}(?:[+-][0-9]{1,4})?")
DICE_MAX = 16  # characters of a `dice` value: the longest the pattern reads, with room for spaces around it
_TRUE, _FALSE = frozenset({"true", "on", "yes", "1"}), frozenset({"false", "off", "no", "0", ""})


def _wrong(path: str, raw: Any, what: str) -> Problem:
    return Problem(path, "wrong-type", f"expected {what}, not {type(raw).__name__} {_shown(raw)}", raw)


def _shown(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:59] + "…"


def whole_number(raw: Any, path: str, lo: int | None, hi: int | None) -> int | Problem:
    """A whole number within lo..hi: an int, or text spelling one (DEC-9: at most nine digits)."""
    if isinstance(raw, bool):
        return _wrong(path, raw, "a whole number")
    if isinstance(raw, str):
        value = parse_int(raw) if len(raw) <= 32 else None
        if value is None:
            return Problem(path, "wrong-type", f"{_shown(raw)} is not a whole number", raw)
    elif isinstance(raw, int):
        value = raw
    else:
        return _wrong(path, raw, "a whole number")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
        return Problem(path, "out-of-range", f"{value} is outside {span}", raw)
    return value


def flag(raw: Any, path: str) -> bool | Problem:
    """On or off: a JSON flag, or `true`/`false`, `on`/`off` (an HTML checkbox), `yes`/`no`, `1`/`0`; blank is off."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
        return raw.strip().lower() in _TRUE
    return _wrong(path, raw, "on or off (true or false)")


def choice(raw: Any, path: str, values: Iterable[str], labels: dict[str, str] | None, what: str) -> str | Problem:
    """One of `values`, named by itself or by its label (DEC-8: case and spacing aside)."""
    values = list(values)
    if not isinstance(raw, str):
        return _wrong(path, raw, f"one of the {what}'s values")
    if raw in values:
        return raw
    key = normalise(raw)
    hits = [v for v in values if key in (normalise(v), normalise((labels or {}).get(v, v)))]
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(values[:12]) + (", …" if len(values) > 12 else "")
    return Problem(path, "unknown-value", f"{_shown(raw)} is not one of the {what}'s values: {shown}", raw)


def typed_text(raw: Any, path: str, limit: int, *, lines: bool) -> str | Problem:
    """Text of at most `limit` characters: one line, or with `lines` several (a form's CR LF read as LF); no
    other control characters, nothing that is not UTF-8 (H-3)."""
    if not isinstance(raw, str):
        return _wrong(path, raw, "text")
    size = len(raw) - raw.count("\r\n") if lines else len(raw)  # a CR LF is one line feed
    if size > limit:  # first: the checks below read the whole text, which may be megabytes (SEC-14)
        return Problem(path, "too-long", f"is {size} characters; at most {limit}", raw)
    if not writable(raw):
        return Problem(path, "bad-text", "is not valid UTF-8 text, so no state could save it", raw)  # H-3
    value = raw.replace("\r\n", "\n").replace("\r", "\n") if lines else raw
    if not lines and ("\n" in value or "\r" in value):
        return Problem(path, "not-one-line", "is one line of text", raw)
    if _CONTROL.search(value) or (not lines and "\t" in value):
        return Problem(path, "bad-text", "must not contain control characters", raw)
    return value


def live_text(raw: Any, path: str, limit: int) -> str | Problem:
    """A live note (`op="text"` takes the same): one prompt-safe line (DEC-25), trimmed."""
    value = typed_text(raw, path, limit, lines=False)
    if isinstance(value, Problem):
        return value
    why = prompt_unsafe(value)
    if why:
        return Problem(path, "unsafe-text", f"a live note goes into the prompt, so it {why}", raw)  # DEC-25
    return value.strip()


def field_value(f: FieldDef | ColumnDef, raw: Any, path: str) -> Any:
    """A field's or cell's new value in its type (SHEET-12), or the problem with it. Suggestions never refuse
    typed text, whatever `pick` says (SHEET-15, SHEET-18)."""
    t = f.type
    if t == "number":
        return whole_number(raw, path, f.min, f.max)
    if t == "boolean":
        return flag(raw, path)
    if t == "enum":
        return choice(raw, path, f.values or [], f.valueLabels, "field" if isinstance(f, FieldDef) else "column")
    if t == "dice":
        value = typed_text(raw, path, DICE_MAX, lines=False)
        if isinstance(value, Problem) or value.strip() == "":
            return value if isinstance(value, Problem) else ""
        if not DICE.fullmatch(value.strip()):
            return Problem(path, "bad-dice", f"{_shown(raw)} is not dice such as 1d8, d20 or 2d6+1", raw)
        return value.strip().lower()
    return typed_text(raw, path, text_limit(f) or 0, lines=t == "longtext")
