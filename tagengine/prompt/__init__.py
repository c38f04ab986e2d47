"""The prompt: stable system prompt, per-turn reminder, token budget (DESIGN section 8)."""

from .budget import Budget, BudgetError, Report
from .build import Prompt, SystemPrompt, build_prompt, reminder, system_prompt, world_prompt
from .tokens import TiktokenCounter, Tokenizer, encoding, for_model

__all__ = ["Budget", "BudgetError", "Prompt", "Report", "SystemPrompt", "TiktokenCounter", "Tokenizer",
           "build_prompt", "encoding", "for_model", "reminder", "system_prompt", "world_prompt"]
