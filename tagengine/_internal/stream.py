"""Streaming filter for chat apps: feed the chunks of a reply, show narration as it arrives.

No partial tag is ever shown. Text is held back only while it could still be, or belong to, a tag:
an unfinished tag and, on a line that so far holds nothing but white space and tags, that line and
the line break before it (a line of only tags disappears with its line break, DEC-12). At the end
the whole reply is applied. Any split of a reply into chunks shows exactly `narration(reply)`.

The work is linear in the reply: each chunk is looked at once, and scanning resumes where it
stopped. Only an unfinished opener or candidate and the current line are kept back; a candidate is
judged (tags/scan.py `judge`, the same code as `scan`) once, when its first bracket arrives.
"""

from __future__ import annotations

import re

from .commands import Applied, apply_reply
from .ruleset import Ruleset
from .state import GameState
from .tags.parse import broken
from .tags.scan import judge
from .tags.vocabulary import VOCABULARY, Vocabulary

_BRACKET = re.compile(r"[\[\]]")
_BLANKS = frozenset(" \t")

_TEXT, _OPEN, _CANDIDATE = range(3)
EARLY_UP_TO = 1024  # characters: a longer unfinished candidate is held until its bracket or the end


class StreamFilter:
    """`feed(chunk) -> str` gives the text to show now; `finish() -> (str, Applied)` the rest and the result.

    `vocabulary` is the tag names' patterns (tags/vocabulary.py); it decides what is held back and hidden.
    `finish` applies the reply with the engine's own vocabulary, so pass another only to test the filter
    (tests do, to show that a new name needs nothing but its row).
    """

    def __init__(self, rs: Ruleset, state: GameState, vocabulary: Vocabulary = VOCABULARY) -> None:
        self.rs, self.state, self.vocabulary = rs, state, vocabulary
        self._parts: list[str] = []  # the reply so far, joined only when asked for
        self._mode = _TEXT
        self._held: list[str] = []  # _OPEN: a `[` that may still become an opener; _CANDIDATE: the candidate
        self._out: list[str] = []  # shown by the current call
        # The current narration line (text outside tags since the last line break outside tags):
        self._newline = ""  # the line break ending the last line shown, held until this line shows prose
        self._blank: list[str] = []  # this line's white space so far, while it has no prose
        self._prose = False  # this line has shown something other than white space
        self._had_tag = False
        self._size = 0  # _CANDIDATE: its length so far
        self._next_look = 0  # _CANDIDATE: its length when it is next read for an early verdict

    # -- narration, one piece of text outside tags at a time (tags/render.py `narration`, streamed)

    def _words(self, piece: str) -> None:
        if not piece:
            return
        if self._prose:
            self._out.append(piece)
        elif piece.strip():
            self._prose = True
            self._out += (self._newline, *self._blank, piece)
            self._newline, self._blank = "", []
        else:
            self._blank.append(piece)

    def _line_break(self) -> None:
        if self._prose:
            self._newline = "\n"
        elif not self._had_tag:  # a blank line without tags stays
            self._out += (self._newline, *self._blank)
            self._newline = "\n"
        # else a line of only tags goes, with its line break
        self._blank, self._prose, self._had_tag = [], False, False

    def _prose_text(self, text: str) -> None:
        if "\n" not in text:
            self._words(text)
            return
        *lines, last = text.split("\n")
        for line in lines:
            self._words(line)
            self._line_break()
        self._words(last)

    def _judge(self, candidate: str) -> None:
        """A whole candidate (it ends at its first bracket, or at the end of the reply): a tag, then prose."""
        m = self.vocabulary.candidate.match(candidate)
        assert m is not None and m.end() == len(candidate)
        found = judge(candidate, m)
        self._had_tag = True
        self._prose_text(candidate[found.end:])

    def _decide_early(self) -> None:
        """An unfinished candidate that spans lines is kept whole only if it parses. Once its finished
        lines fail to parse it will be cut back to its first line whatever follows: judge it now and
        show the lines after it. It is read again only each time it has doubled, so the reads cost no
        more than twice its length; one longer than EARLY_UP_TO waits for its bracket or the end."""
        size = self._size
        if size > EARLY_UP_TO or size < self._next_look:
            return
        candidate = "".join(self._held)
        self._held = [candidate]
        lines = candidate[: candidate.rfind("\n")]
        self._next_look = 2 * size
        if broken(lines):
            self._held, self._mode = [], _TEXT
            self._judge(candidate)

    # -- scanning, resumed chunk by chunk

    def _take(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self._mode == _TEXT:
                j = text.find("[", i)
                if j == -1:
                    self._prose_text(text[i:])
                    return
                self._prose_text(text[i:j])
                self._mode, i = _OPEN, j
            elif self._mode == _OPEN:
                if self._held:  # a partial opener from an earlier chunk: go on from its `[`
                    if self._held[-1][-1] in "[ \t" and _BLANKS.issuperset(text[i:]):
                        self._held.append(text[i:])  # more blanks keep it partial; nothing to look at again
                        return
                    text, self._held = "".join(self._held) + text[i:], []
                    i, n = 0, len(text)
                m = self.vocabulary.opener.match(text, i)
                if m:
                    self._mode, self._held, i = _CANDIDATE, [text[i:m.end()]], m.end()
                    self._size, self._next_look = m.end() - m.start(), 0
                elif self.vocabulary.partial.match(text, i):
                    self._held = [text[i:]]
                    return
                else:
                    self._mode, i = _TEXT, i + 1
                    self._prose_text("[")
            else:
                b = _BRACKET.search(text, i)
                if b is None:
                    piece = text[i:]
                    self._held.append(piece)
                    self._size += len(piece)
                    if "\n" in piece:  # a line of the candidate is finished
                        self._decide_early()
                    return
                end = b.end() if b.group() == "]" else b.start()
                self._held.append(text[i:end])
                candidate, self._held, self._mode, i = "".join(self._held), [], _TEXT, end
                self._judge(candidate)

    def _flush(self) -> str:
        out, self._out = "".join(self._out), []
        return out

    def feed(self, chunk: str) -> str:
        """The text to show now for this chunk (possibly empty); never raises."""
        if chunk:
            self._parts.append(chunk)
            self._take(chunk)
        return self._flush()

    def finish(self) -> tuple[str, Applied]:
        """The rest of the narration and the whole reply applied (apply_reply); never raises."""
        if self._mode == _CANDIDATE:  # unclosed at the end of the reply
            self._judge("".join(self._held))
        elif self._mode == _OPEN:  # never became an opener: prose
            self._prose_text("".join(self._held))
        self._mode, self._held = _TEXT, []
        if not (self._had_tag and not self._prose):  # else a last line of only tags goes, with the break before it
            self._out += (self._newline, *self._blank)
        self._newline, self._blank = "", []
        return self._flush(), apply_reply(self.rs, self.state, self.text)

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""
