"""Commands: the dispatcher and one module per command family."""

from .dispatch import Applied, Receipt, apply_reply
from .reasons import REASONS

__all__ = ["REASONS", "Applied", "Receipt", "apply_reply"]
