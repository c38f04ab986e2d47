"""tagengine: apply a Game Master's `[sheet: ...]` and `[clock: ...]` tags to game state; build its prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._internal.errors import Problem, RulesetError, StateError

if TYPE_CHECKING:
    from ._internal.commands import Applied, Receipt, apply_reply
    from ._internal.ruleset import Ruleset
    from ._internal.state import Clock, GameState
    from ._internal.tags import narration

_LAZY = {"Applied": "commands", "Receipt": "commands", "apply_reply": "commands", "Ruleset": "ruleset",
         "Clock": "state", "GameState": "state", "narration": "tags"}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # 70 ms: only for those who ask

    try:
        return version("tagengine")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0.0.0+source"


def __getattr__(name: str) -> Any:
    """Import the heavier parts on first use, so `tagengine --version` or `preview` start fast."""
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tagengine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"._internal.{module}", __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Applied", "Clock", "GameState", "Problem", "Receipt", "Ruleset", "RulesetError", "StateError", "__version__",
    "apply_reply", "narration",
]
