"""Fitting a prompt under the context window (DEC-32..34), with a report of every trim and cut.

The system prompt is fitted once per ruleset, tokenizer and budget against a fixed allowance
(context - response_min - reserve), so it is byte-identical from turn to turn (DEC-30). Each turn then
drops the oldest history (never the last user message) and lowers the response budget down to its
minimum; a turn that still does not fit raises BudgetError naming each part's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import TagengineError
from ..records import frozen
from .registry import choose, given
from .tokens import TokenCounter, Tokenizer, TokenizerChoice, counter, cut_text

CUT_MARKER = "(The rules reference is cut here to fit the context: {kept:,} of {total:,} characters kept.)"
GUIDANCE_CUT_ORDER = ("clocks.text", "party.advancement.text", "party.text", "sheetGuidance", "checkGuidance")


class BudgetError(TagengineError, ValueError):
    """The prompt cannot fit the context even after every trim and cut; `parts` gives each size."""

    def __init__(self, message: str, parts: dict[str, int]) -> None:
        sizes = ", ".join(f"{k} {v}" for k, v in parts.items())
        super().__init__(f"{message} ({sizes})")
        self.parts = parts


@frozen
class Budget:
    """Token budget for one request. `reserve` keeps room for the reminder and the last user message
    (default a quarter of the context); `margin` is the share kept free for an unknown model's tokenizer.
    `tokenizer_file`: the model's `tokenizer.json` (counts exact; registry.py says what counts otherwise)."""

    context: int = 8192
    response: int = 1024
    response_min: int = 256
    model: str | None = None
    encoding: str | None = None
    reserve: int | None = None
    margin: float | None = None
    reminder_in_user: bool = False  # DEC-29: merge the reminder into the last user message
    tokenizer: Tokenizer | None = field(default=None, compare=False)
    tokenizer_file: str | None = None

    def choice(self) -> TokenizerChoice:
        """The tokenizer and chat format this budget's model calls for, with its safety margin (DEC-33). A
        tokenizer built for the registry's choice elsewhere (forked.py) carries that choice;
        any other Tokenizer passed in is taken as the model's own."""
        if self.tokenizer is not None:
            own = getattr(self.tokenizer, "choice", None)
            chosen = own if isinstance(own, TokenizerChoice) else given(self.tokenizer, self.model)
        else:
            chosen = choose(self.model, self.encoding, self.tokenizer_file)
        return chosen if self.margin is None else replace(chosen, margin=self.margin)

    @property
    def reserve_tokens(self) -> int:
        return self.reserve if self.reserve is not None else max(256, self.context // 4)

    def usable(self, chosen: TokenizerChoice | None = None) -> int:
        """The context less the margin kept free (the margin is the choice's: nothing is built here).
        `chosen`: this budget's choice(), when the caller has made it already."""
        return int(self.context * (1 - (chosen or self.choice()).margin))


def cut_reference(c: TokenCounter, reference: str, keep_tokens: int) -> tuple[str, int]:
    """Keep about `keep_tokens` of the reference, ending at a word boundary and never inside a
    character, then add a marker saying how much was kept. One encode and one decode (DEC-34), or the
    tokenizer's own `cut` (offsets). Returns the text and how many characters of the reference it kept."""
    head = cut_text(c.tokenizer, reference, keep_tokens)
    if head == reference:
        return reference, len(reference)
    if len(head) < len(reference) and not reference[len(head):len(head) + 1].isspace():
        cut = head.rfind(" ")
        head = head[:cut] if cut > 0 else ""
    head = head.rstrip()
    marker = CUT_MARKER.format(kept=len(head), total=len(reference))
    return (f"{head} {marker}" if head else marker), len(head)


@dataclass
class Report:
    """What was counted and how: `encoding` and `tokenizer` name the tokenizer, `exact` says whether it is
    the model's own (else the count is an estimate and `margin` of the context was kept free), `chat`
    names the chat format whose overhead was counted and `family` the model family."""

    context: int
    response: int
    total: int = 0
    encoding: str = ""
    margin: float = 0.0
    parts: dict[str, int] = field(default_factory=dict)
    cuts: list[dict[str, Any]] = field(default_factory=list)
    exact: bool = True
    chat: str = "openai"
    family: str = "openai"
    # the choice that counted (not written in `to_json`): a server counts its reply ahead with it (S-32), without
    # choosing again (choosing looks for the user's tokenizers.toml)
    choice: TokenizerChoice | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"context": self.context, "response": self.response, "total": self.total, "encoding": self.encoding,
                "margin": self.margin, "parts": dict(self.parts), "cuts": list(self.cuts),
                "tokenizer": self.encoding, "exact": self.exact, "chat": self.chat, "family": self.family}


def count_ahead(budget: Budget, role: str, text: str, chosen: TokenizerChoice | None = None) -> None:
    """Count a message the next turn will carry, before it comes: a server's reply, which the chat app sends
    back as it is or trimmed (SillyTavern trims it), is then known to the fit (S-32). `chosen`: the budget's
    choice() the prompt was counted with (`Report.choice`), when there is one."""
    c = get_counter(budget, chosen)
    c.message(role, text)
    if text.strip() != text:
        c.message(role, text.strip())


def get_counter(budget: Budget, chosen: TokenizerChoice | None = None) -> TokenCounter:
    """The counter for this budget; `chosen`: its choice(), when the caller has made it already (choosing
    looks for the user's tokenizers.toml)."""
    chosen = chosen or budget.choice()
    tokenizer = budget.tokenizer if budget.tokenizer is not None else chosen.build()
    return counter(tokenizer, chosen.chat)
