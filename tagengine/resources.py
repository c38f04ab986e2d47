"""Find the grammar and prompt files in an installed wheel (tagengine/grammars) or a checkout (../grammars)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


@cache
def resource_dir(name: str) -> Path:
    for base in (_HERE / name, _HERE.parent / name):
        if base.is_dir():
            return base
    raise FileNotFoundError(f"tagengine cannot find its {name}/ folder next to {_HERE}")


def read_text(folder: str, filename: str) -> str:
    return (resource_dir(folder) / filename).read_text(encoding="utf-8")
