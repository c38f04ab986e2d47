"""The tag names, written once (issue 11): the scanner and the stream filter build their patterns from here.

The grammar (grammars/tags.lark) takes any word as a name, since only the scanner proposes
candidates; so a new tag kind is one more entry in `TAG_NAMES` and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

TAG_NAMES: tuple[str, ...] = ("sheet", "clock")

_NAME = re.compile(r"[a-z]+")
_BLANK = "[ \\t]*"


def _letter(c: str) -> str:
    """One letter in either ASCII case; `(?i)` would also let `ſ` stand for `s` and the Kelvin sign for `k`."""
    return f"[{c.upper()}{c}]"


def _grow(trie: dict[str, dict], done: bool) -> str:
    """What may follow a prefix of some name: the next letter of one, or blanks after a whole name."""
    parts = [_letter(c) + (f"(?:{rest})?" if (rest := _grow(sub, "" in sub)) else "")
             for c, sub in sorted(trie.items()) if c]
    if done:
        parts.append("[ \\t]+")
    return "|".join(parts)


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The compiled patterns of one set of tag names.

    `candidate`: an opener `[name:` and everything up to the first bracket, that bracket included
    when it is `]` (DEC-25: no value holds a bracket). `opener`: just `[name:`. `partial`: a suffix
    of the text that may still grow into an opener (`[`, `[ sh`, `[clock `).
    """

    names: tuple[str, ...]
    candidate: re.Pattern[str]
    opener: re.Pattern[str]
    partial: re.Pattern[str]


@cache
def vocabulary(names: tuple[str, ...] = TAG_NAMES) -> Vocabulary:
    """Build (once per tuple) the patterns for `names`: lower-case ASCII words."""
    if not names or any(not _NAME.fullmatch(n) for n in names):
        raise ValueError(f"tag names must be lower-case ASCII words, got {names!r}")
    alternatives = "|".join("".join(map(_letter, n)) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    opener = rf"\[{_BLANK}(?P<name>{alternatives}){_BLANK}:"
    trie: dict[str, dict] = {}
    for n in names:
        node = trie
        for c in n:
            node = node.setdefault(c, {})
        node[""] = {}
    return Vocabulary(
        names=tuple(names),
        candidate=re.compile(opener + r"[^\[\]]*\]?"),
        opener=re.compile(opener),
        partial=re.compile(rf"\[{_BLANK}(?:{_grow(trie, False)})?\Z"),
    )


VOCABULARY = vocabulary(TAG_NAMES)
