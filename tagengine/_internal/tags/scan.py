"""Find the tags in a reply: one compiled regular expression proposes candidates, Lark judges each.

A candidate runs from an opener (`[sheet:`, `[clock:`: the names of tags/vocabulary.py) to the
first bracket. No value may hold a bracket (DEC-25), so a candidate never runs past another `[` and
a broken tag cannot hide a later one. A candidate keeps more than its own line only when it parses
(DEC-1 lets attributes sit on several lines); one with no `]`, or one that reaches a `]` on a later
line but does not parse, keeps only the rest of its own line (DEC-3), so the prose after a cut-off
tag survives, and the rewrite closes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .model import RAW_KEY, Found
from .parse import verdict
from .vocabulary import VOCABULARY, Vocabulary

_CONTROLS_AND_SPACES = re.compile(r"[\x00-\x20\x7f]+")
UNCLOSED = "no closing ] before the end of the tag"
CUT = "no closing ] on its own line, and it does not parse across lines"


def _raw(body: str) -> str:
    """The malformed body as one prompt-friendly line (kept in the receipt's `raw`)."""
    return _CONTROLS_AND_SPACES.sub(" ", body).strip() if body else ""


def judge(text: str, m: re.Match[str]) -> Found:
    """What the candidate `m` of `text` is. Its span may be shorter than `m` (cut back to its line);
    the rest of `m` is prose and holds no `[`, so scanning goes on at `m.end()`."""
    start, end = m.span()
    if text[end - 1] == "]":
        candidate = m.group()
        tag = verdict(candidate)
        if not isinstance(tag, str):
            if RAW_KEY in tag.attrmap:
                return Found(start, end, tag.name, None, _raw(tag.get(RAW_KEY) or ""), "refused as malformed before")
            return Found(start, end, tag.name, tag)  # the name the candidate matched, lower-cased as parsed
        name = m.group("name").lower()
        if "\n" not in candidate:
            body = candidate[m.end("name") - start:-1].lstrip(" \t:")
            return Found(start, end, name, None, _raw(body), tag)
        error = CUT  # a tag missing its `]` must not swallow the lines up to a later `]` (DEC-3)
    else:
        error = UNCLOSED
        name = m.group("name").lower()
    newline = text.find("\n", start, end)
    # Unclosed (DEC-3): the tag keeps the rest of its line.
    if newline != -1:
        end = newline
    while text[end - 1] in " \t\r":  # the opener ends with `:`, so this stops there at the latest
        end -= 1
    body = text[m.end("name"):end].lstrip(" \t:")
    return Found(start, end, name, None, _raw(body), error)


def scan(text: str, vocabulary: Vocabulary = VOCABULARY) -> list[Found]:
    """Every tag-shaped span of `text`, in order, without overlaps. Never raises.

    Matches never overlap and a candidate holds no `[`, so cutting one back to its line leaves no
    other opener behind it: one pass of finditer sees every tag.
    """
    if "[" not in text:
        return []
    return [judge(text, m) for m in vocabulary.candidate.finditer(text)]


def found_in(text: str, vocabulary: Vocabulary = VOCABULARY) -> Iterator[Found]:
    """`scan`, one span at a time: a caller that is done with each span lets it go at once, so a reply
    of 150,000 openers does not hold 150,000 of them (and the collector does not walk them)."""
    if "[" in text:
        for m in vocabulary.candidate.finditer(text):
            yield judge(text, m)
