"""tagengine: apply a Game Master's `[sheet: ...]` and `[clock: ...]` tags to game state; build its prompt.

This module is the whole public API: everything in `__all__`, nothing else. The implementation lives
under `tagengine._internal` (docs/architecture.md is the map) and may change between versions.

    rs = tagengine.Ruleset.load("samples/rulesets/gravewatch.json")      # RulesetError lists every problem
    state = tagengine.GameState.new(rs, ["Mira", "Bram"])
    out = tagengine.apply_reply(rs, state, reply)    # Applied(text, state, receipts); `state` is untouched
    tagengine.narration(out.text)                     # what the player sees
    prompt = tagengine.build_prompt(rs, out.state, history, tagengine.Budget(context=8192, model="gpt-4o"))

Every error raised on purpose is a `TagengineError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._internal.batch import Summary, replay
    from ._internal.chat import Chat
    from ._internal.commands import REASONS, Applied, Receipt, apply_reply
    from ._internal.commands.party_save import PartyConflict, save_party
    from ._internal.commands.pools import clamp_maxima
    from ._internal.errors import (
        HistoryError,
        NotFoundError,
        Problem,
        ProblemsError,
        RulesetError,
        StateError,
        TagengineError,
    )
    from ._internal.prompt import Budget, BudgetError, Prompt, Report, Tokenizer, build_prompt, world_prompt
    from ._internal.prompt.tokens import EncodingError
    from ._internal.ruleset import Ruleset
    from ._internal.sheet import SheetView, character, party
    from ._internal.sheet.rests import Touched, take_rest
    from ._internal.state import Clock, GameState, LiveValues, WoundMarks
    from ._internal.stream import StreamFilter
    from ._internal.tags import narration

# name -> the internal module that defines it; imported on first use, so `tagengine --version` and a cold
# `tagengine preview` do not pay for what they do not touch.
_HOME = {
    "Applied": "commands", "Receipt": "commands", "apply_reply": "commands", "REASONS": "commands",
    "Ruleset": "ruleset",
    "Clock": "state", "GameState": "state", "LiveValues": "state", "WoundMarks": "state",
    "PartyConflict": "commands.party_save", "save_party": "commands.party_save",
    "narration": "tags",
    "SheetView": "sheet", "character": "sheet", "party": "sheet", "take_rest": "sheet.rests",
    "Touched": "sheet.rests", "clamp_maxima": "commands.pools",
    "Chat": "chat", "StreamFilter": "stream", "replay": "batch", "Summary": "batch",
    "Budget": "prompt", "BudgetError": "prompt", "Prompt": "prompt", "Report": "prompt", "Tokenizer": "prompt",
    "build_prompt": "prompt", "world_prompt": "prompt", "EncodingError": "prompt.tokens",
    "TagengineError": "errors", "ProblemsError": "errors", "Problem": "errors", "RulesetError": "errors",
    "StateError": "errors", "HistoryError": "errors", "NotFoundError": "errors",
}

__all__ = [
    "REASONS", "Applied", "Budget", "BudgetError", "Chat", "Clock", "EncodingError", "GameState", "HistoryError",
    "LiveValues", "NotFoundError", "PartyConflict", "Problem", "ProblemsError", "Prompt", "Receipt", "Report",
    "Ruleset", "RulesetError", "SheetView", "StateError", "StreamFilter", "Summary", "TagengineError", "Tokenizer",
    "Touched", "WoundMarks", "__version__", "apply_reply", "build_prompt", "character", "clamp_maxima", "narration",
    "party", "replay", "save_party", "take_rest", "world_prompt",
]


def __getattr__(name: str) -> Any:
    """Import the heavier parts on first use, so `tagengine --version` or `preview` start fast."""
    if name == "__version__":
        from ._internal.version import version

        globals()[name] = value = version()
        return value
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'tagengine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"._internal.{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
