"""The tag vocabulary, defined once: every tag kind the engine knows, in the order the engine
is built, and the patterns the scanner and the stream filter use, built from it.

The grammar (grammars/tags.lark) takes any word as a name, since only the scanner proposes candidates;
the command table (commands/table.py) loads each kind's family from the module a row names. Adding a
tag kind is a row here, its command module (commands/<family>.py, defining FAMILY), its teaching in
the prompt templates, and its docs.
"""

from __future__ import annotations

import re
from functools import cache

from ..records import frozen


@frozen(slots=True)
class TagKind:
    """One kind of command tag, a row of the vocabulary: its name, the family that applies it, how it is read."""

    name: str  # written `[name: ...]`, a lower-case ASCII word matched in either case (DEC-1)
    family: str  # the module under commands/ whose FAMILY applies it
    # Receipt attributes the engine writes beside result/now/reason (a check's roll record): like the
    # result keys, the model's own copies are dropped when the tag is read (DEC-4, DEC-5).
    record: tuple[str, ...] = ()
    # A command of the model's, counted toward the 40 a reply may carry (DEC-6). An edit receipt is not: the
    # engine writes it at the start of a reply, for the player's edits (docs/decisions.md ED-7).
    command: bool = True


TAG_KINDS: tuple[TagKind, ...] = (
    TagKind("sheet", "sheet"),
    TagKind("clock", "clock"),
    TagKind("check", "check", record=("dice", "rolled", "target", "successes", "roll", "total", "sum", "penalty",
                                      "adjust", "outcome")),
    TagKind("edit", "edit", command=False),
)
TAG_NAMES: tuple[str, ...] = tuple(k.name for k in TAG_KINDS)
RECORD_KEYS: dict[str, frozenset[str]] = {k.name: frozenset(k.record) for k in TAG_KINDS if k.record}
UNCOUNTED: frozenset[str] = frozenset(k.name for k in TAG_KINDS if not k.command)

Trie = dict[str, "Trie"]  # letter -> what may follow; "" marks the end of a whole name
_NAME = re.compile(r"[a-z]+")
_BLANK = "[ \\t]*"


def _letter(c: str) -> str:
    """One letter in either ASCII case; `(?i)` would also let `ſ` stand for `s` and the Kelvin sign for `k`."""
    return f"[{c.upper()}{c}]"


def _grow(trie: Trie, done: bool) -> str:
    """What may follow a prefix of some name: the next letter of one, or blanks after a whole name."""
    parts = [_letter(c) + (f"(?:{rest})?" if (rest := _grow(sub, "" in sub)) else "")
             for c, sub in sorted(trie.items()) if c]
    if done:
        parts.append("[ \\t]+")
    return "|".join(parts)


@frozen(slots=True)
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
    trie: Trie = {}
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
