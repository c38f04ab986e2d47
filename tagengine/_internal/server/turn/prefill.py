"""Continue (an assistant prefill): a request whose last message is the assistant's, which the model goes
on from (SillyTavern's "Continue"). The prefill and what the model adds are one reply (S-17): its tags
are applied together, from the state before the prefill, and the response carries only what comes after
the prefill, so the chat app's text (prefill + response) is what `apply_reply` gives for the whole reply.

The prefill goes through the reply's filter first (`ReceiptStream`, or `StreamFilter` with --hide-tags);
what the filter sends for it is not sent again. A tag the prefill leaves open is held; when it closes,
its receipt is sent without the part the app already has, when the receipt starts with it (the model
wrote the tag the canonical way). When it does not, or when the prefill's own text came out rewritten (a
tag in it without its receipt), the app's text cannot equal the engine's: the route sees that `shown`
differs from the applied text, logs it and keeps nothing, so the next request replays what the app holds.
With --hide-tags, `shown` (what the app holds) is what the narration mapping is keyed by.
"""

from __future__ import annotations

from ...commands import Applied
from .relay import Filter


def split_prefill(history: list[dict[str, str]]) -> tuple[list[dict[str, str]], str | None]:
    """(the history before the prefill, the prefill), or (history, None) when the last message is not the
    assistant's."""
    if history and history[-1]["role"] == "assistant":
        return history[:-1], history[-1]["content"]
    return history, None


def prefill_last(messages: list[dict[str, str]], prefill: str) -> bool:
    """Move the prefill (the last assistant message) after the reminder, where the model continues it;
    False when fitting dropped it."""
    at = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if at is None or messages[at]["content"] != prefill:
        return False
    messages.append(messages.pop(at))
    return True


class Continued:
    """A Filter over another: the prefill fed first, then only the continuation's output passed on."""

    def __init__(self, inner: Filter, prefill: str) -> None:
        self.inner, self.prefill = inner, prefill
        first = inner.feed(prefill)
        self.held = prefill[len(first):]  # the prefill's tail the filter holds (an open tag)
        self.sent: list[str] = []

    def _past_prefill(self, out: str) -> str:
        """What the inner filter gave, without the prefill's held tail the app already has."""
        if self.held and out:
            if out.startswith(self.held):
                out = out[len(self.held):]
            self.held = ""
        self.sent.append(out)
        return out

    def feed(self, chunk: str) -> str:
        return self._past_prefill(self.inner.feed(chunk))

    def finish(self) -> tuple[str, Applied]:
        rest, applied = self.inner.finish()
        return self._past_prefill(rest), applied

    @property
    def shown(self) -> str:
        """The text the chat app holds after this reply: the prefill and what was sent."""
        return self.prefill + "".join(self.sent)
