"""tagengine: apply a Game Master's `[sheet: ...]` and `[clock: ...]` tags to game state; build its prompt."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tagengine")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0.0.0+source"

from typing import TYPE_CHECKING, Any

from .errors import Problem, RulesetError, StateError

if TYPE_CHECKING:
    from .commands import Applied, Receipt, apply_reply
    from .ruleset import Ruleset
    from .state import Clock, GameState
    from .tags import narration

_LAZY = {"Applied": "commands", "Receipt": "commands", "apply_reply": "commands", "Ruleset": "ruleset",
         "Clock": "state", "GameState": "state", "narration": "tags"}


def __getattr__(name: str) -> Any:
    """Import the heavier parts on first use, so `tagengine --version` or `preview` start fast."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tagengine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Applied", "Clock", "GameState", "Problem", "Receipt", "Ruleset", "RulesetError", "StateError", "__version__",
    "apply_reply", "narration",
]
