"""Validated rulesets kept in the cache folder by the digest of their file (decision PF-2).

A command started once per reply (`tagengine apply`) would otherwise build pydantic's validators for every
model of the file and run every import check before reading a byte of the reply: about 20 ms, most of it
pydantic importing its plugin machinery. A file read before is instead rebuilt from its entry (pickle, a
fraction of a millisecond) into the plain dataclasses it is made of: pydantic is not even imported (PF-27).

The key is the digest (`disk_cache.digest`) of the file's bytes, of the source of the code that validates it
(every module of this package, `errors.py`, `text.py` and `records.py`: an edit in a checkout changes it, as a new
release does), of pydantic's `version.py` (read, not imported: it names pydantic's version and the pydantic-core it
needs) and of Python's version. Only a file that imports is kept; its problems are worked out anew each time. An
entry is unpickled only when its header matches (disk_cache.py), and then only the classes a ruleset is made of
may be named in it: anything else is a miss.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import sys
from functools import cache
from typing import Any

from .. import disk_cache
from ..errors import Problem
from .base import BaseDef
from .index import ById, SheetIndex
from .top import RulesetDef

KIND = "rulesets"
# What a Ruleset is built from besides its source: the file's model, the two indexes, warnings, requires.
Parts = tuple[RulesetDef, SheetIndex, "SheetIndex | None", tuple[Problem, ...], "tuple[int, int] | None"]
_PACKAGE = os.path.dirname(os.path.realpath(__file__))  # os.path: no pathlib for a cold command (PF-44)
# Modules outside this package that decide what a kept ruleset reads back as: the problems' and the text
# rules' code, and how a definition is made and pickled (`records.frozen`).
_OUTSIDE = ("errors.py", "text.py", "records.py")


@cache
def _code() -> bytes:
    """The source of every module that decides what a valid ruleset reads as; b"" when one cannot be read
    (then nothing is kept: a key that ignores the code could return an old version's answer)."""
    # os.walk rather than Path.rglob: a third of the time, on every cold command (PF-44)
    top, parts = os.path.dirname(_PACKAGE), []
    try:
        names = sorted(os.path.relpath(os.path.join(folder, name), top).split(os.sep)
                       for folder, _, files in os.walk(_PACKAGE) for name in files if name.endswith(".py"))
        for name in [*names, *([name] for name in _OUTSIDE)]:
            with open(os.path.join(top, *name), "rb") as f:
                parts.append("/".join(name).encode() + b"\0" + f.read())
    except (OSError, ValueError):
        return b""
    return disk_cache.digest(*parts).encode()


@cache
def _validator_version() -> bytes:
    """pydantic's `version.py`, found and read without importing pydantic; b"" when it cannot be."""
    try:
        spec = importlib.util.find_spec("pydantic")
        if spec is None or spec.origin is None:
            return b""
        with open(os.path.join(os.path.dirname(spec.origin), "version.py"), "rb") as f:
            return f.read()
    except (OSError, ValueError, ImportError):
        return b""


def key(data: bytes) -> str | None:
    code, validator = _code(), _validator_version()
    if not (code and validator):
        return None
    return disk_cache.digest(data, code, validator, sys.implementation.cache_tag.encode())


class _Unpickler(pickle.Unpickler):
    """Names only the classes a ruleset is made of: an entry that names anything else is not one of ours."""

    def find_class(self, module: str, name: str) -> Any:
        if module == Problem.__module__ and name == "Problem":
            return Problem
        if module == __package__ or module.startswith(f"{__package__}."):
            found = getattr(sys.modules.get(module), name, None)
            if isinstance(found, type) and (issubclass(found, BaseDef) or found in (ById, SheetIndex)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a ruleset")


def recall(data: bytes) -> Parts | None:
    """The parts of the ruleset whose file holds `data`, when they were kept; else None."""
    k = key(data)
    payload = None if k is None else disk_cache.read_entry(KIND, k)
    if payload is None:
        return None
    try:
        parts = _Unpickler(io.BytesIO(payload)).load()
    except Exception:  # whatever the bytes are, a bad entry is a miss
        return None
    return parts if _well_formed(parts) else None


def keep(data: bytes, parts: Parts) -> None:
    k = key(data)
    if k is not None:
        disk_cache.write_entry(KIND, k, pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL))


def _well_formed(parts: Any) -> bool:
    if not (isinstance(parts, tuple) and len(parts) == 5):
        return False
    model, sheet, party, warnings, requires = parts
    return (isinstance(model, RulesetDef) and isinstance(sheet, SheetIndex)
            and (party is None or isinstance(party, SheetIndex))
            and isinstance(warnings, tuple) and all(isinstance(w, Problem) for w in warnings)
            and (requires is None or (isinstance(requires, tuple) and len(requires) == 2
                                      and all(type(n) is int for n in requires))))
