"""Find the grammar and prompt files in an installed wheel (tagengine/grammars) or a checkout (./grammars)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # tagengine/


@cache
def resource_dir(name: str) -> Path:
    """The folder `name` (grammars, prompts, pages): inside the installed package, else beside it."""
    for base in (_PACKAGE / name, _PACKAGE.parent / name):
        if base.is_dir():
            return base
    raise FileNotFoundError(f"tagengine cannot find its {name}/ folder next to {_PACKAGE}")


def read_text(folder: str, filename: str) -> str:
    return (resource_dir(folder) / filename).read_text(encoding="utf-8")
