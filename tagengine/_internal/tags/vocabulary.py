"""The tag vocabulary, defined once: every tag kind the engine knows, in the order the engine is built.

The scanner, the stream filter and the command table all read this table; the grammar names no tag at
all. Adding a tag kind is a row here, its command module (commands/<family>.py, which defines FAMILY),
its teaching template (prompts/teach/<name>.j2) and its docs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TagKind:
    name: str  # written `[name: ...]`, matched without regard to case (DEC-1)
    family: str  # the module under commands/ whose FAMILY applies it


TAG_KINDS: tuple[TagKind, ...] = (
    TagKind("sheet", "sheet"),
    TagKind("clock", "clock"),
)
TAG_NAMES: tuple[str, ...] = tuple(k.name for k in TAG_KINDS)
