"""Streaming with receipts: prose passes at once, each tag is held until it closes and then sent as its
receipt, so the text the chat app puts together is exactly `apply_reply(rs, state, reply).text`.

Only the text from the last `[` that has no `]` after it is held: a candidate ends at its first bracket
of either kind (tags/scan.py), so every tag before that point is whole and its receipt will not change.
The text so far is applied again only when a bracket arrives; prose in between is appended as it is
(text outside tags is copied byte for byte, DEC-5).
"""

from __future__ import annotations

import logging
import re

from ..commands import Applied, apply_reply
from ..ruleset import Ruleset
from ..state import GameState

log = logging.getLogger("tagengine.serve")
_BRACKET = re.compile(r"[\[\]]")


class ReceiptStream:
    """`feed(chunk) -> str` the text to send now; `finish() -> (str, Applied)` the rest and the result."""

    def __init__(self, rs: Ruleset, state: GameState) -> None:
        self.rs, self.state = rs, state
        self._parts: list[str] = []
        self._size = 0
        self._applied_upto = 0  # the reply's length when it was last applied
        self._applied_text = ""  # apply_reply of reply[:_applied_upto]
        self._sent: list[str] = []
        self._sent_size = 0

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def _emit(self, out: str) -> str:
        sent = self._sent_size
        if len(out) <= sent:
            return ""
        piece = out[sent:]
        self._sent.append(piece)
        self._sent_size = len(out)
        return piece

    def feed(self, chunk: str) -> str:
        if not chunk:
            return ""
        self._parts.append(chunk)
        self._size += len(chunk)
        text = self.text
        held = text.rfind("[")
        cut = held if held != -1 and "]" not in text[held:] else self._size
        if _BRACKET.search(text, self._applied_upto, cut):
            self._applied_text = apply_reply(self.rs, self.state, text[:cut]).text
            self._applied_upto = cut
        return self._emit(self._applied_text + text[self._applied_upto:cut])

    def finish(self) -> tuple[str, Applied]:
        applied = apply_reply(self.rs, self.state, self.text)
        sent = "".join(self._sent)
        if not applied.text.startswith(sent):  # never seen; would mean a receipt changed after it was sent
            log.warning("streamed text differs from the applied reply; the chat app keeps what it was sent")
            return "", applied
        return applied.text[len(sent):], applied
