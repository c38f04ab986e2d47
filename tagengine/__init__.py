"""tagengine: apply a Game Master's `[sheet: ...]` and `[clock: ...]` tags to game state; build its prompt.

This module is the core of the public API: everything in `__all__`, nothing else. `tagengine.chatapp` holds
the helpers a chat app adds on top (sheet views, rests, maxima after a card edit, the world prompt). The
implementation lives under `tagengine._internal` (docs/architecture.md is the map) and may change between
versions.

    rs = tagengine.Ruleset.load("samples/rulesets/gravewatch.json")      # RulesetError lists every problem
    state = tagengine.GameState.new(rs, ["Mira", "Bram"])
    out = tagengine.apply_reply(rs, state, reply)    # Applied(text, state, receipts); `state` is untouched
    tagengine.narration(out.text)                     # what the player sees
    prompt = tagengine.build_prompt(rs, out.state, history, tagengine.Budget(context=8192, model="gpt-4o"))

Every error raised on purpose is a `TagengineError`.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._internal.lazy import Moved, attribute

if TYPE_CHECKING:  # for type checkers: the names of `_API` below, from the same homes (tests/test_house.py)
    from ._internal.batch import Summary as Summary
    from ._internal.batch import replay as replay
    from ._internal.chat import Chat as Chat
    from ._internal.commands.dispatch import Applied as Applied
    from ._internal.commands.dispatch import Receipt as Receipt
    from ._internal.commands.dispatch import apply_reply as apply_reply
    from ._internal.commands.party_save import PartyConflict as PartyConflict
    from ._internal.commands.reasons import REASONS as REASONS
    from ._internal.commands.reply_grammar import reply_grammar as reply_grammar
    from ._internal.errors import HistoryError as HistoryError
    from ._internal.errors import NotFoundError as NotFoundError
    from ._internal.errors import Problem as Problem
    from ._internal.errors import ProblemsError as ProblemsError
    from ._internal.errors import RulesetError as RulesetError
    from ._internal.errors import StateError as StateError
    from ._internal.errors import TagengineError as TagengineError
    from ._internal.prompt.budget import Budget as Budget
    from ._internal.prompt.budget import BudgetError as BudgetError
    from ._internal.prompt.budget import Report as Report
    from ._internal.prompt.build import Prompt as Prompt
    from ._internal.prompt.build import build_prompt as build_prompt
    from ._internal.prompt.tokens import ChatFormat as ChatFormat
    from ._internal.prompt.tokens import EncodingError as EncodingError
    from ._internal.prompt.tokens import Tokenizer as Tokenizer
    from ._internal.prompt.tokens import TokenizerChoice as TokenizerChoice
    from ._internal.ruleset import Ruleset as Ruleset
    from ._internal.state.model import GameState as GameState
    from ._internal.state.values import Clock as Clock
    from ._internal.state.values import Dice as Dice
    from ._internal.state.values import LiveValues as LiveValues
    from ._internal.state.values import WoundMarks as WoundMarks
    from ._internal.stream import StreamFilter as StreamFilter
    from ._internal.tags.render import narration as narration
    from ._internal.tags.vocabulary import Vocabulary as Vocabulary

# The public API, one row a name: name -> the module under tagengine._internal that defines it. `__all__` and
# the lazy `__getattr__` are made from it: a name is imported on first use, so `tagengine --version` and a
# cold `tagengine preview` do not pay for what they do not touch.
_API = {
    # loading a ruleset
    "Ruleset": "ruleset",
    # the game state
    "GameState": "state.model", "LiveValues": "state.values", "WoundMarks": "state.values", "Clock": "state.values",
    "Dice": "state.values",
    # applying a reply, and what the player sees of it
    "apply_reply": "commands.dispatch", "Applied": "commands.dispatch", "Receipt": "commands.dispatch",
    "REASONS": "commands.reasons", "reply_grammar": "commands.reply_grammar",
    "narration": "tags.render", "Vocabulary": "tags.vocabulary",
    # the prompt
    "build_prompt": "prompt.build", "Prompt": "prompt.build", "Budget": "prompt.budget", "Report": "prompt.budget",
    "Tokenizer": "prompt.tokens", "TokenizerChoice": "prompt.tokens", "ChatFormat": "prompt.tokens",
    # a chat with snapshots, a streamed reply, a replay of transcripts
    "Chat": "chat", "StreamFilter": "stream", "replay": "batch", "Summary": "batch",
    # the errors
    "TagengineError": "errors", "ProblemsError": "errors", "Problem": "errors", "RulesetError": "errors",
    "StateError": "errors", "HistoryError": "errors", "NotFoundError": "errors", "BudgetError": "prompt.budget",
    "EncodingError": "prompt.tokens", "PartyConflict": "commands.party_save",
}

# Names that left the top level (CHANGELOG.md): each still works for one more version, with a DeprecationWarning.
_MOVED = {
    "SheetView": Moved("sheet.views", "SheetView", "tagengine.chatapp.SheetView"),
    "character": Moved("sheet.sheet_views", "view_character", "tagengine.chatapp.view_character(rs, state, name)"),
    "party": Moved("sheet.sheet_views", "view_party", "tagengine.chatapp.view_party(rs, state)"),
    "take_rest": Moved("sheet.rests", "take_rest", "tagengine.chatapp.take_rest"),
    "Touched": Moved("sheet.rests", "Touched", "tagengine.chatapp.Touched"),
    "clamp_maxima": Moved("commands.pools", "clamp_maxima", "tagengine.chatapp.clamp_maxima"),
    "world_prompt": Moved("prompt.build", "world_prompt", "tagengine.chatapp.world_prompt"),
    "save_party": Moved("commands.party_save", "save_party", "Chat(rs, state).save_party(draft, opened_at)"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from ._internal.version import version

        globals()[name] = value = version()
        return value
    return attribute(__name__, name, _API, globals(), _import_home, _MOVED)


def _import_home(home: str) -> ModuleType:
    return import_module(f"._internal.{home}", __name__)


def __dir__() -> list[str]:
    return sorted(__all__)
