"""What a chat app adds on top of the core (`tagengine`): sheets to show, rests, a card edit's pool maxima, the
world-generation prompt.

    sheet = tagengine.chatapp.view_character(rs, state, "Mira")     # a SheetView: every number, and why
    state, touched = tagengine.chatapp.take_rest(rs, state, "Mira", "breath")
    state = tagengine.chatapp.clamp_maxima(rs, before, edited)        # after a player edits a card (R-5)
    form = tagengine.chatapp.edit_form(rs, state, "Mira")            # the sheet editor's form (docs/editor.md)
    edited = tagengine.chatapp.edit_sheet(rs, state, "Mira", {"fields.oath": "Never again"})  # problems, or the state

A player's edit made in a chat goes into the chat itself: `tagengine.Chat.edit`, `edit_party`, `save_party`; a
server keeping its own history writes `edit_receipts(...)` at the start of the next reply (docs/editor.md).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._internal.lazy import attribute

if TYPE_CHECKING:  # for type checkers: the names of `_API` below, from the same homes (tests/test_house.py)
    from ._internal.commands.edit import PlayerEdit as PlayerEdit
    from ._internal.commands.edit import Receipted as Receipted
    from ._internal.commands.edit import edit_receipts as edit_receipts
    from ._internal.commands.pools import clamp_maxima as clamp_maxima
    from ._internal.commands.sheet_edits import Edited as Edited
    from ._internal.commands.sheet_edits import edit_party as edit_party
    from ._internal.commands.sheet_edits import edit_sheet as edit_sheet
    from ._internal.prompt.build import world_prompt as world_prompt
    from ._internal.ruleset.sheet import RestDef as RestDef
    from ._internal.sheet.edit_paths import Change as Change
    from ._internal.sheet.edit_paths import parse_change as parse_change
    from ._internal.sheet.form import BoxView as BoxView
    from ._internal.sheet.form import ChipView as ChipView
    from ._internal.sheet.form import ColumnView as ColumnView
    from ._internal.sheet.form import FormView as FormView
    from ._internal.sheet.form import HideRuleView as HideRuleView
    from ._internal.sheet.form import InputView as InputView
    from ._internal.sheet.form import PlayView as PlayView
    from ._internal.sheet.form import RowView as RowView
    from ._internal.sheet.form import SectionView as SectionView
    from ._internal.sheet.form import TableView as TableView
    from ._internal.sheet.form import WoundBoxesView as WoundBoxesView
    from ._internal.sheet.form import edit_form as edit_form
    from ._internal.sheet.form import play_controls as play_controls
    from ._internal.sheet.form import with_chip as with_chip
    from ._internal.sheet.rests import Touched as Touched
    from ._internal.sheet.rests import take_rest as take_rest
    from ._internal.sheet.sheet_views import view_character as view_character
    from ._internal.sheet.sheet_views import view_party as view_party
    from ._internal.sheet.views import CheckNumber as CheckNumber
    from ._internal.sheet.views import HealthView as HealthView
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
    "WoundLevel": "sheet.views", "StateView": "sheet.views", "HealthView": "sheet.views",
    # a rest the players take, outside a reply
    "take_rest": "sheet.rests", "Touched": "sheet.rests", "RestDef": "ruleset.sheet",
    # a card edited by hand lowered a pool's maximum
    "clamp_maxima": "commands.pools",
    # the prompt that asks the model for a world
    "world_prompt": "prompt.build",
    # a player's edits: checked as the sheet editor checks them, the editor's form, the receipts a chat keeps
    "edit_sheet": "commands.sheet_edits", "edit_party": "commands.sheet_edits", "Edited": "commands.sheet_edits",
    "Change": "sheet.edit_paths", "parse_change": "sheet.edit_paths",
    "edit_form": "sheet.form", "play_controls": "sheet.form", "with_chip": "sheet.form", "FormView": "sheet.form",
    "SectionView": "sheet.form", "InputView": "sheet.form", "ChipView": "sheet.form", "HideRuleView": "sheet.form",
    "TableView": "sheet.form", "ColumnView": "sheet.form", "RowView": "sheet.form", "PlayView": "sheet.form",
    "WoundBoxesView": "sheet.form", "BoxView": "sheet.form",
    "edit_receipts": "commands.edit", "PlayerEdit": "commands.edit", "Receipted": "commands.edit",
}

__all__ = [*_API]


def __getattr__(name: str) -> Any:
    return attribute(__name__, name, _API, globals(), _import_chatapp_home)


def _import_chatapp_home(home: str) -> ModuleType:
    return import_module(f"tagengine._internal.{home}")


def __dir__() -> list[str]:
    return sorted(__all__)
