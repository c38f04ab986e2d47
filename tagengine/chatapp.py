"""What a chat app adds on top of the core (`tagengine`): sheets to show, rests, a card edit's pool maxima, the
world-generation prompt.

    sheet = tagengine.chatapp.view_character(rs, state, "Mira")     # a SheetView: every number, and why
    state, touched = tagengine.chatapp.take_rest(rs, state, "Mira", "breath")
    state = tagengine.chatapp.clamp_maxima(rs, before, edited)        # after a player edits a card (R-5)

A player's edit of the party sheet is saved through the chat: `tagengine.Chat.save_party`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._internal.lazy import attribute

if TYPE_CHECKING:  # for type checkers: the names of `_API` below, from the same homes (tests/test_house.py)
    from ._internal.commands.pools import clamp_maxima as clamp_maxima
    from ._internal.prompt.build import world_prompt as world_prompt
    from ._internal.ruleset.sheet import RestDef as RestDef
    from ._internal.sheet.rests import Touched as Touched
    from ._internal.sheet.rests import take_rest as take_rest
    from ._internal.sheet.sheet_views import view_character as view_character
    from ._internal.sheet.sheet_views import view_party as view_party
    from ._internal.sheet.views import CheckNumber as CheckNumber
    from ._internal.sheet.views import PoolView as PoolView
    from ._internal.sheet.views import SheetView as SheetView
    from ._internal.sheet.views import StateView as StateView
    from ._internal.sheet.views import TrackView as TrackView
    from ._internal.sheet.views import WoundLevel as WoundLevel
    from ._internal.sheet.views import WoundView as WoundView

# This module's names, one row each: name -> the module under tagengine._internal that defines it; `__all__`
# and the lazy `__getattr__` are made from it, as in `tagengine`.
_API = {
    # a sheet for people: every number with where it came from
    "view_character": "sheet.sheet_views", "view_party": "sheet.sheet_views", "SheetView": "sheet.views",
    "CheckNumber": "sheet.views", "PoolView": "sheet.views", "TrackView": "sheet.views", "WoundView": "sheet.views",
    "WoundLevel": "sheet.views", "StateView": "sheet.views",
    # a rest the players take, outside a reply
    "take_rest": "sheet.rests", "Touched": "sheet.rests", "RestDef": "ruleset.sheet",
    # a card edited by hand lowered a pool's maximum
    "clamp_maxima": "commands.pools",
    # the prompt that asks the model for a world
    "world_prompt": "prompt.build",
}

__all__ = [*_API]


def __getattr__(name: str) -> Any:
    return attribute(__name__, name, _API, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
