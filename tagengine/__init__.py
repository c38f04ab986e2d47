"""tagengine: apply a Game Master's `[sheet: ...]` and `[clock: ...]` tags to game state; build its prompt."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tagengine")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0.0.0+source"

from .commands import Applied, Receipt, apply_reply
from .errors import Problem, RulesetError, StateError
from .ruleset import Ruleset
from .state import Clock, GameState
from .tags import narration

__all__ = [
    "Applied", "Clock", "GameState", "Problem", "Receipt", "Ruleset", "RulesetError", "StateError", "__version__",
    "apply_reply", "narration",
]
