"""A Tokenizer over counts the model's own server gave (`serve --count-with-upstream`, K-9..K-12).

Budget fitting is synchronous; asking the upstream is not. So the fitting never waits: it runs over a table
of token ids already fetched, and a text missing from the table stops it with `NotCounted(text)` before
anything is cached (no memo, no fitted system prompt keeps a guess). The server fetches that text, with the
others it already knew it would need, and fits again (`server/upstream/counting.py`).

A cut needs offsets, which a tokenize endpoint does not give. `cut` keeps the same share of the text as of
the upstream's tokens, measured with the registry's local tokenizer for the model (`stand_in`): it never
splits a character (the local tokenizer's cut does not), and the text it keeps is counted again by the
upstream before the prompt is accepted, so the count the budget checks stays exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field

from ..records import frozen
from .registry import model_family
from .tokens import Tokenizer, TokenizerChoice, cut_text


class NotCounted(LookupError):
    """A text the upstream has not counted yet: the caller fetches it and fits again. Control flow between
    `build_prompt` and the server, never seen by a user."""

    def __init__(self, text: str) -> None:
        super().__init__("a text the upstream has not counted yet")
        self.text = text


@frozen
class UpstreamTokenizer:
    """The upstream's token ids for the texts `lookup` knows; `NotCounted` for any other.

    Equal (and hashing alike) for the same upstream kind, model and table of counts (`table`: one per
    server), so the process-wide caches that key on a tokenizer (the fitted system prompt, the memoising
    counter) find their entries again next request, and never another server's."""

    kind: str  # "llama.cpp", "vllm", "koboldcpp"
    model: str | None
    table: int
    lookup: Callable[[str], Sequence[int] | None] = field(compare=False, repr=False)
    stand_in: Tokenizer = field(compare=False, repr=False)  # the registry's local tokenizer, for cuts only

    @property
    def name(self) -> str:
        return f"upstream:{self.kind}"

    @property
    def choice(self) -> TokenizerChoice:
        """What `Budget.choice()` reports: exact, nothing kept free, the model family's chat format."""
        fam = model_family(self.model)
        return TokenizerChoice(self.name, 0.0, lambda: self, fam.chat, True, fam.name)

    def _ids(self, text: str) -> Sequence[int]:
        ids = self.lookup(text)
        if ids is None:
            raise NotCounted(text)
        return ids

    def encode(self, text: str) -> list[int]:
        return list(self._ids(text))

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        raise NotImplementedError("an upstream count has no decoder: cuts go through `cut`")

    def cut(self, text: str, keep_tokens: int) -> str:
        """The head of `text` holding the same share of it as `keep_tokens` is of the upstream's count,
        measured and cut with the local stand-in (never inside a character)."""
        total = self.count(text)
        if keep_tokens >= total:
            return text
        if keep_tokens <= 0:
            return ""
        local = len(self.stand_in.encode(text))
        return cut_text(self.stand_in, text, local * keep_tokens // total)
