"""Writing tags back (DEC-4) and hiding them from the narration (DEC-12, CLOCK-24)."""

from __future__ import annotations

from functools import lru_cache

from .model import Attr, written
from .scan import scan
from .vocabulary import VOCABULARY, Vocabulary


@lru_cache(maxsize=8192)
def canonical(name: str, attrs: tuple[Attr, ...], result: tuple[Attr, ...]) -> str:
    """`[name: k="v" flag ... result="ok" now="..."]`: the model's attributes, then the engine's. For a
    parsed tag this is `tag.head + written(result) + "]"`, each part worked out once."""
    return f"[{name}:{written((*attrs, *result))}]"


def narration(text: str, vocabulary: Vocabulary = VOCABULARY) -> str:
    """The reply with every tag hidden; a line that held only tags goes with its line break. Never raises."""
    spans = scan(text, vocabulary)
    if not spans:
        return text
    out: list[str] = []
    line: list[str] = []  # the current line's text outside tags
    had_tag = False

    def add_text(chunk: str) -> None:
        nonlocal had_tag
        *done, rest = chunk.split("\n")
        for piece in done:
            line.append(piece)
            if not (had_tag and not "".join(line).strip()):
                out.append("".join(line) + "\n")
            line.clear()
            had_tag = False
        line.append(rest)

    pos = 0
    for f in spans:
        add_text(text[pos:f.start])
        had_tag = True
        pos = f.end
    add_text(text[pos:])
    if had_tag and not "".join(line).strip():
        if out and out[-1].endswith("\n"):
            out[-1] = out[-1][:-1]
    else:
        out.append("".join(line))
    return "".join(out)
