"""The Jinja environment over `pages/` (package data): HTML-escaped always, undefined names are errors.

Ruleset and model text reach the templates only as values, so autoescape makes them text, never markup
(decision UI-3).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, StrictUndefined

from ..prompt.render import environment
from ..resources import read_text

STYLESHEET = "pages.css"
REFRESH_SCRIPT = "refresh.js"
EDITOR_SCRIPT = "editor.js"  # chips, live derived values, hiding as typed, saves without a reload


@cache
def html_env() -> Environment:
    """The pages' environment: every value autoescaped (UI-3), unlike the prompts' plain-text one
    (prompt/render.env)."""
    return environment("pages", undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       autoescape=True)  # every template is HTML, whatever its name ends in


@cache
def stylesheet() -> str:
    return read_text("pages", STYLESHEET)


@cache
def refresh_script() -> str:
    return read_text("pages", REFRESH_SCRIPT)


@cache
def editor_script() -> str:
    return read_text("pages", EDITOR_SCRIPT)


def render_page(template: str, context: dict[str, Any], *, inline: bool = False) -> str:
    """A whole page. `inline`: the stylesheet goes into the page (one self-contained file, no server)."""
    base = {"inline_css": stylesheet() if inline else None, "css_href": None if inline else "/ui/" + STYLESHEET,
            "refresh": None}
    return html_env().get_template(template).render(**{**base, **context})
