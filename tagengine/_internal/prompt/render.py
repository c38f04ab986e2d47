"""The Jinja environment over `prompts/` (package data): StrictUndefined, blocks trimmed, no autoescape.

Only the template files are compiled; ruleset and chat strings reach Jinja as values.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..resources import resource_dir


@cache
def env() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(resource_dir("prompts"))),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
        auto_reload=False,
    )


def render(template: str, context: dict[str, Any]) -> str:
    return env().get_template(template).render(**context).strip() + "\n"
