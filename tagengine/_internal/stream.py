"""Streaming filter for chat apps: feed the chunks of a reply, show narration as it arrives.

No partial tag is ever shown. Text is held back only while it could still be, or belong to, a tag:
an unfinished tag and, on a line that so far holds nothing but white space and tags, that line (a
line of only tags disappears with its line break, DEC-12). At the end the whole reply is applied.
Any split of a reply into chunks shows exactly `narration(reply)`.
"""

from __future__ import annotations

import re

from .commands import Applied, apply_reply
from .ruleset import Ruleset
from .state import GameState
from .tags import narration
from .tags.scan import CANDIDATE

# A suffix that may still grow into `[sheet:` or `[clock:`.
_PARTIAL = re.compile(r"\[[ \t]*(?:[Ss](?:[Hh](?:[Ee](?:[Ee](?:[Tt][ \t]*)?)?)?)?|[Cc](?:[Ll](?:[Oo](?:[Cc](?:[Kk]"
                      r"[ \t]*)?)?)?)?)?\Z")


def _hold_from(text: str) -> int:
    """Where text that could still be a tag begins (len(text) when nothing could)."""
    pos = 0
    while True:
        m = CANDIDATE.search(text, pos)
        if m is None:
            break
        if m.end() == len(text) and not text.endswith("]"):
            return m.start()  # an unfinished tag: it may still close, even on a later line
        pos = m.end() if m.end() > m.start() else m.start() + 1
    p = _PARTIAL.search(text, max(0, len(text) - 16))
    return p.start() if p else len(text)


def safe_prefix(text: str) -> int:
    """The longest raw prefix whose narration no continuation can change."""
    hold = _hold_from(text)
    line_start = text.rfind("\n", 0, hold) + 1
    if narration(text[line_start:hold]).strip():
        return hold  # this line has prose, so it can never be a line of only tags
    return max(0, line_start - 1)  # hold the line, and the line break before it


class StreamFilter:
    """`feed(chunk) -> str` gives the text to show now; `finish() -> (str, Applied)` the rest and the result."""

    def __init__(self, rs: Ruleset, state: GameState) -> None:
        self.rs, self.state = rs, state
        self._text = ""
        self._shown = ""

    def _show(self, display: str) -> str:
        if not display.startswith(self._shown):  # pragma: no cover - safe_prefix guarantees this
            return ""
        out, self._shown = display[len(self._shown):], display
        return out

    def feed(self, chunk: str) -> str:
        self._text += chunk
        return self._show(narration(self._text[: safe_prefix(self._text)]))

    def finish(self) -> tuple[str, Applied]:
        rest = self._show(narration(self._text))
        return rest, apply_reply(self.rs, self.state, self._text)

    @property
    def text(self) -> str:
        return self._text
