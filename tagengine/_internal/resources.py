"""Find the grammar and prompt files in an installed wheel (tagengine/grammars) or a checkout (./grammars)."""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# os.path, not pathlib, for what a cold command reads here: pathlib imports urllib.parse and ipaddress, some
# 5 ms of a cold `tagengine apply` (PF-44); `resource_dir` still answers a Path
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # tagengine/


@cache
def resource_folder(name: str) -> str:
    """The folder `name` (grammars, prompts, pages): inside the installed package, else beside it."""
    for base in (os.path.join(_PACKAGE, name), os.path.join(os.path.dirname(_PACKAGE), name)):
        if os.path.isdir(base):
            return base
    raise FileNotFoundError(f"tagengine cannot find its {name}/ folder next to {_PACKAGE}")


def resource_dir(name: str) -> Path:
    """`resource_folder(name)` as a Path."""
    from pathlib import Path

    return Path(resource_folder(name))


def read_bytes(folder: str, filename: str) -> bytes:
    with open(os.path.join(resource_folder(folder), filename), "rb") as f:
        return f.read()


def read_text(folder: str, filename: str) -> str:
    with open(os.path.join(resource_folder(folder), filename), encoding="utf-8") as f:
        return f.read()
