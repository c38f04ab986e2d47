"""Public names imported on first use, from one table per public module (`tagengine`, `tagengine.chatapp`).

A public module lists each of its names once, `name -> the internal module that defines it`; its `__all__`
and its `__getattr__` are made from that table, so `tagengine --version` and a cold `tagengine preview`
import only what they touch. A name that moved keeps working for one version, with a DeprecationWarning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


class Moved:
    """A public name that moved: where it is defined now, and what to write instead. A plain class: a named
    tuple here cost every command and every `import tagengine` about 2 ms (typing compiles each field's
    postponed annotation, and the first such compilation in a process is the dearest, PF-44)."""

    __slots__ = ("home", "instead", "name")

    def __init__(self, home: str, name: str, instead: str) -> None:
        self.home = home  # the internal module (under tagengine._internal) that defines it
        self.name = name  # its name there
        self.instead = instead  # what the warning tells the caller to use


def attribute(module: str, name: str, table: Mapping[str, str], namespace: dict[str, Any],
              load: Callable[[str], ModuleType], moved: Mapping[str, Moved] | None = None) -> Any:
    """`module.name`, imported from its home in `table` and kept in `namespace` (the module's globals), so
    later reads are plain look-ups. A `moved` name warns on every read and is not kept. AttributeError
    names the module for anything else, as Python's own message does. `load(home)` imports a home: the
    caller's own `import_module`, so what a module can load is written in that module, where the layer
    rules of tests/test_layers.py read it (this module, in the foundation, imports nothing above it)."""
    home = table.get(name)
    if home is not None:
        value = namespace[name] = getattr(load(home), name)
        return value
    gone = (moved or {}).get(name)
    if gone is not None:
        warnings.warn(f"{module}.{name} is deprecated and goes in the next version: use {gone.instead}",
                      DeprecationWarning, stacklevel=3)
        return getattr(load(gone.home), gone.name)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
