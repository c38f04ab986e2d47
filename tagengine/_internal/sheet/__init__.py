"""Pure evaluation of a character or party sheet: references, derived values, visibility, check numbers."""

from .context import Eval
from .evaluate import character, party, sheet_of
from .model import CheckNumber, PoolView, Sheet, StateView, TrackView, WoundLevel, WoundView

__all__ = ["CheckNumber", "Eval", "PoolView", "Sheet", "StateView", "TrackView", "WoundLevel", "WoundView",
           "character", "party", "sheet_of"]
