"""Pure evaluation of a character or party sheet: references, derived values, visibility, check numbers."""

from .evaluator import Eval
from .sheet_views import view_card, view_character, view_party
from .views import CheckNumber, HealthView, PoolView, SheetView, StateView, TrackView, WoundLevel, WoundView

__all__ = ["CheckNumber", "Eval", "HealthView", "PoolView", "SheetView", "StateView", "TrackView", "WoundLevel",
           "WoundView", "view_card", "view_character", "view_party"]
