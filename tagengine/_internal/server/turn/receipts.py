"""Streaming with receipts: prose passes at once, each tag is held until it closes and then sent as its
receipt, so the text the chat app puts together is exactly `apply_reply(rs, state, reply).text`.

A candidate tag ends at its first bracket of either kind (tags/scan.py), so a point just before a `[`,
or after prose that holds no `[`, is outside every tag: the reply can be applied part by part between
such points (`apply_part`, which carries the state and DEC-6's command count). Only the text from the
last `[` that has no `]` after it is held. Each part is applied once, when a bracket ends it, so the
work stays linear in the reply however it is split.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ...commands import Applied
from ...commands.dispatch import Receipt, apply_part
from ...ruleset import Ruleset
from ...state import GameState

_BRACKET = re.compile(r"[\[\]]")


class ReceiptStream:
    """`feed(chunk) -> str` the text to send now; `finish() -> (str, Applied)` the rest and the result."""

    def __init__(self, rs: Ruleset, state: GameState) -> None:
        self.rs, self.state = rs, state
        self._held: list[str] = []  # from an unclosed `[` on: not sent yet
        self._sent: list[str] = []  # the output so far
        self._commands = 0
        self._receipts: list[Receipt] = []  # spans in the whole output, as apply_reply gives them
        self._length = 0  # characters in the output so far

    def _apply(self, part: str) -> str:
        applied, self._commands = apply_part(self.rs, self.state, part, self._commands)
        self.state = applied.state
        at = self._length  # the part's output goes right after what was sent
        self._receipts += (replace(r, start=r.start + at, end=r.end + at) for r in applied.receipts)
        return applied.text

    def _send(self, text: str) -> None:
        self._sent.append(text)
        self._length += len(text)

    def feed(self, chunk: str) -> str:
        if not chunk:
            return ""
        if _BRACKET.search(chunk) is None:
            if self._held:
                self._held.append(chunk)
                return ""
            self._send(chunk)  # prose outside any tag: as it is
            return chunk
        last_open = chunk.rfind("[")
        upto = last_open if last_open != -1 and "]" not in chunk[last_open:] else len(chunk)  # then held
        part = "".join(self._held) + chunk[:upto]
        self._held = [chunk[upto:]] if upto < len(chunk) else []
        out = self._apply(part) if part else ""
        self._send(out)
        return out

    @property
    def sent(self) -> str:
        """The text given out so far (what is held is not in it)."""
        return "".join(self._sent)

    def finish(self) -> tuple[str, Applied]:
        rest = self._apply("".join(self._held)) if self._held else ""
        self._held = []
        self._send(rest)
        return rest, Applied("".join(self._sent), self.state, tuple(self._receipts))
