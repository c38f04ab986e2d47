"""The command families the engine is built from, in order: one per tag kind of the vocabulary.

markdown-it's rule chain is the model: an explicit, ordered table. The tag kinds themselves (their names,
the module of each family, its teaching template) are listed once, in `tags/vocabulary.py`; this module
loads each kind's family from its module.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..tags.vocabulary import TAG_KINDS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .family import Family


@cache
def families() -> Mapping[str, Family]:
    """Tag name -> its command family, in the vocabulary's order."""
    out: dict[str, Family] = {}
    for kind in TAG_KINDS:
        family = family_of(kind.name)
        assert family is not None  # every kind of the vocabulary
        out[kind.name] = family
    return MappingProxyType(out)


@cache
def family_of(name: str) -> Family | None:
    """The command family of the tag kind `name` (None for a name of no kind), its module imported on first
    use: applying a reply imports the families of its tags only (PF-44)."""
    kind = next((k for k in TAG_KINDS if k.name == name), None)
    if kind is None:
        return None
    family: Family = import_module(f"{__package__}.{kind.family}").FAMILY
    if family.name != kind.name:
        raise RuntimeError(f"commands/{kind.family}.py defines family {family.name!r}, not {kind.name!r}")
    return family
