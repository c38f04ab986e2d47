"""Text rules shared by rulesets, tags and state: prompt-safe lines (DEC-25) and name matching (DEC-8)."""

from __future__ import annotations

import re
from functools import cache, lru_cache

_SPACES = re.compile(r"\s+")


@cache
def _pattern(source: str) -> re.Pattern[str]:
    """`source` compiled on its first use. A class of characters beyond U+00FF takes `re` half a millisecond to
    compile (it builds a table of every such character), which every command's start paid for each pattern here,
    most of which a command never uses."""
    return re.compile(source)


_CONTROL = r"[\x00-\x1f\x7f-\x9f\u2028\u2029]"
# the same for ASCII text, which most is: a class within Latin-1 compiles in a tenth of the time
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def prompt_unsafe(text: str, *, label: bool = False) -> str | None:
    """Say why `text` may not go into a prompt or tag, or None when it may (DEC-25, GMREF-7, STATE-4/5)."""
    if "\n" in text or "\r" in text:
        return "must be a single line"
    if (_ASCII_CONTROL if text.isascii() else _pattern(_CONTROL)).search(text):
        return "must not contain control characters"
    if "[" in text or "]" in text:
        return "must not contain square brackets"
    if "{{" in text or "}}" in text:
        return "must not contain macro braces {{ or }}"
    if label and '"' in text:
        return "must not contain double quotes"
    return None


_LINE_BREAK = "\r\n|[\n\r\u2028\u2029]"
_BRACKETS = str.maketrans("[]", "()")
_BRACES = re.compile(r"\{\{+|\}\}+")


def prompt_inert(text: str) -> str:
    """`text` made safe to stand in a prompt as a value (DEC-25), for text a player typed where the prompt
    shows it and the state keeps it as typed (a field, a list cell, a row's name): square brackets read as
    round ones, so no tag opens; a run of braces as one brace, so no chat-app macro (`{{user}}`) expands;
    a line break as ` / ` and any other control character as a space, so a value stays on its own line.
    `prompt_unsafe` has nothing to say of the result; text it already allows comes back unchanged."""
    if prompt_unsafe(text) is None:
        return text
    text = _pattern(_CONTROL).sub(" ", _pattern(_LINE_BREAK).sub(" / ", text))
    return _BRACES.sub(lambda m: m.group()[0], text.translate(_BRACKETS))


_SURROGATE = "[\ud800-\udfff]"


def writable(text: str) -> bool:
    """True when `text` encodes to UTF-8. Text decoded with `surrogateescape` (a reply that is not clean
    UTF-8) or a JSON `\\ud800` escape can hold lone surrogates, which no state file could save (H-3). Strict
    UTF-8 refuses those and only those; ASCII text, which most is, is known to hold none."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_NOT_A_BYTE = "[\ud800-\udc7f\udd00-\udfff]"  # surrogateescape gives U+DC80..U+DCFF only


def escaped_surrogate(text: str, *, bytes_kept: bool) -> str | None:
    """The first lone surrogate in `text` that stands for no character: one written as a JSON escape
    (`\\udfff`), which no UTF-8 output can hold (TR-9). `bytes_kept`: the text came from a line that was not
    UTF-8 and was read with `surrogateescape`, so U+DC80..U+DCFF there are its bytes, kept as they came (H-3)."""
    if text.isascii():
        return None
    found = _pattern(_NOT_A_BYTE if bytes_kept else _SURROGATE).search(text)
    return None if found is None else found.group()


@lru_cache(maxsize=8192)
def normalise(name: str) -> str:
    """Case-insensitive name key: trimmed, inner white space collapsed (DEC-8)."""
    return _SPACES.sub(" ", name.strip()).casefold()
