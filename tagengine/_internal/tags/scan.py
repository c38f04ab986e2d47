"""Find the tags in a reply: one compiled regular expression proposes candidates, Lark judges each.

A candidate runs from `[sheet:` or `[clock:` to the first `]`. No value may hold a bracket (DEC-25),
so a candidate never runs past another `[` and a broken tag cannot hide a later one; a quote only
closes on its own line, so an unclosed quote cannot swallow the rest of the reply. A candidate with
no `]` (DEC-3) keeps only the rest of its own line; the rewrite closes it.
"""

from __future__ import annotations

import re

from .model import RAW_KEY, Found
from .parse import Malformed, parse

CANDIDATE = re.compile(
    r'\[[ \t]*(?P<name>[Ss][Hh][Ee][Ee][Tt]|[Cc][Ll][Oo][Cc][Kk])[ \t]*:'
    r'(?:[^\[\]"]+|"(?:[^"\\\n\[\]]|\\["\\])*"|")*'
    r'\]?'
)
_SPACES = re.compile(r"[\x00-\x20\x7f]+")


def _raw(body: str) -> str:
    """The malformed body as one prompt-friendly line (kept in the receipt's `raw`)."""
    return _SPACES.sub(" ", body).strip()


def scan(text: str) -> list[Found]:
    """Every tag-shaped span of `text`, in order, without overlaps. Never raises.

    Matches never overlap and a candidate holds no `[`, so cutting an unclosed one back to its line
    leaves no other opener behind it: one pass of finditer sees every tag.
    """
    if "[" not in text:
        return []
    found: list[Found] = []
    for m in CANDIDATE.finditer(text):
        start, end = m.start(), m.end()
        name = m.group("name").lower()
        if text[end - 1] == "]":
            candidate = text[start:end]
            try:
                tag = parse(candidate)
            except Malformed as e:
                body = candidate[m.end("name") - start:-1].lstrip(" \t:")
                found.append(Found(start, end, name, None, _raw(body), str(e)))
            else:
                if RAW_KEY in tag.attrmap:
                    found.append(Found(start, end, name, None, _raw(tag.get(RAW_KEY) or ""),
                                       "refused as malformed before"))
                else:
                    found.append(Found(start, end, name, tag))
            continue
        # Unclosed (DEC-3): the tag keeps the rest of its line.
        newline = text.find("\n", start, end)
        if newline != -1:
            end = newline
        while end > start and text[end - 1] in " \t\r":
            end -= 1
        body = text[m.end("name"):end].lstrip(" \t:")
        found.append(Found(start, end, name, None, _raw(body), "no closing ] before the end of the tag"))
    return found
