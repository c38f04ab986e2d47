"""The prompt: stable system prompt, per-turn reminder, token budget (DESIGN section 8).

Names are imported on first use: `prompt/tokens.py` alone must stay light, because a cold
`tagengine preview` builds the encoding in a second process while this one imports the rest."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..lazy import attribute

if TYPE_CHECKING:
    from .budget import Budget, BudgetError, Report
    from .build import Prompt, SystemPrompt, build_prompt, reminder, system_prompt, world_prompt
    from .registry import for_model
    from .tokens import TiktokenTokenizer, Tokenizer, encoding

# name -> the module that defines it, imported on first use (`lazy.py`, as for the public modules)
_HOME = {"Budget": "budget", "BudgetError": "budget", "Report": "budget",
         "Prompt": "build", "SystemPrompt": "build", "build_prompt": "build",
         "reminder": "build", "system_prompt": "build", "world_prompt": "build",
         "TiktokenTokenizer": "tokens", "Tokenizer": "tokens", "encoding": "tokens",
         "for_model": "registry"}

__all__ = ["Budget", "BudgetError", "Prompt", "Report", "SystemPrompt", "TiktokenTokenizer", "Tokenizer",
           "build_prompt", "encoding", "for_model", "reminder", "system_prompt", "world_prompt"]


def __getattr__(name: str) -> Any:
    return attribute(__name__, name, _HOME, globals(), _import_prompt_module)


def _import_prompt_module(home: str) -> ModuleType:
    return import_module(f".{home}", __name__)
