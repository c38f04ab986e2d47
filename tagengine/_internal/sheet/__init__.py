"""Pure evaluation of a character or party sheet: references, derived values, visibility, check numbers."""

from .evaluate import character, party, sheet_of
from .evaluator import Eval
from .views import CheckNumber, HealthView, PoolView, SheetView, StateView, TrackView, WoundLevel, WoundView

__all__ = ["CheckNumber", "Eval", "HealthView", "PoolView", "SheetView", "StateView", "TrackView", "WoundLevel",
           "WoundView", "character", "party", "sheet_of"]
