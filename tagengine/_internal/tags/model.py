"""Tag values: what the scanner found and the parser made of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType
from typing import NamedTuple

from ..records import frozen
from ..text import writable

# Attributes the engine writes; the model's own copies are discarded (DEC-4, CLOCK-20).
RESULT_KEYS = frozenset({"result", "reason", "now"})
# Marks a tag the engine already judged malformed, so a second pass keeps it as it is (DEC-5).
RAW_KEY = "raw"
# No command takes more than a handful of attributes; a tag with more is malformed, unparsed (SC-3).
MAX_ATTRIBUTES = 64

Attr = tuple[str, str | None]  # (key, value); None for a bare flag such as `clear`


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def written(attrs: tuple[Attr, ...]) -> str:
    """Attributes as a receipt writes them (DEC-4): each after a space, `k="v"` or a bare `flag`."""
    return "".join(f" {k}" if v is None else f" {k}={quote(v)}" for k, v in attrs)


@frozen(slots=True)
class Tag:
    """A parsed tag: lower-case name and the model's attributes in the model's order, result keys dropped."""

    name: str
    attrs: tuple[Attr, ...]
    keys: tuple[str, ...] = field(init=False, compare=False, repr=False)
    keyset: frozenset[str] = field(init=False, compare=False, repr=False)  # the keys, for the commands' set tests
    attrmap: Mapping[str, str | None] = field(init=False, compare=False, repr=False)  # first value of each key
    repeated: bool = field(init=False, compare=False, repr=False)  # a key written twice (DEC-7)
    writable: bool = field(init=False, compare=False, repr=False)  # every value encodes to UTF-8 (H-3)
    # `[name: k="v" ...`: the receipt's text up to the engine's own attributes (render.canonical), once per tag
    head: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Worked out once per tag: parsed tags are cached and shared, so the map is read-only."""
        first: dict[str, str | None] = {}
        for k, v in self.attrs:
            first.setdefault(k, v)
        object.__setattr__(self, "keys", tuple(k for k, _ in self.attrs))
        object.__setattr__(self, "keyset", frozenset(first))
        object.__setattr__(self, "attrmap", MappingProxyType(first))
        object.__setattr__(self, "repeated", len(first) != len(self.attrs))
        object.__setattr__(self, "writable", all(v is None or writable(v) for _, v in self.attrs))
        object.__setattr__(self, "head", f"[{self.name}:{written(self.attrs)}")

    def get(self, key: str) -> str | None:
        return self.attrmap.get(key)

    def has(self, key: str) -> bool:
        return key in self.attrmap


class Found(NamedTuple):
    """One tag-shaped span of a reply: `tag` when it parsed, else `raw` and `error` (malformed, DEC-2).
    A named tuple, where the house's values are frozen dataclasses: the scanner makes one per candidate,
    and a tuple is made in a third of the time."""

    start: int
    end: int
    name: str
    tag: Tag | None
    raw: str = ""
    error: str | None = None
