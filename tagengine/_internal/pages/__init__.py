"""Pages a person looks at: the game sheet, the prompt preview and the ruleset checker, as HTML.

The templates and the stylesheet are files in `pages/` (package data, found like `prompts/`); these
modules turn engine data into plain values for them. Nothing here imports the server: `tagengine sheet
--html` renders the same sheet page offline.
"""

from .game_sheet import sheet_context, sheet_html
from .prompt_preview import prompt_context
from .ruleset_inspection import inspection_context
from .templates import render_page, stylesheet

__all__ = ["inspection_context", "prompt_context", "render_page", "sheet_context", "sheet_html", "stylesheet"]
