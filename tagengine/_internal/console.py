"""The `tagengine` console script and `python -m tagengine`: a process that runs one command line, then exits.

Such a process owns its interpreter, so it may do what a library must not do to its caller's: here, before the
command line is imported, modules it imports for nothing are put off until something reads them (`defer`).
`dataclasses` imports `inspect` for one call, the signature in the docstring of a class that has none, which
`records` writes itself; with ast, dis and tokenize, `inspect` was some 6-8 ms of every cold command (PF-68). Lark
imports `regex` only to know whether it could use it, and `tempfile` only to name its own cache's file, neither of
which tagengine's grammar asks for: some 26 ms, with shutil, of every command that builds the tag parser (PF-70); and
`hashlib` only for its own cache's keys and the grammar files a grammar imports, and hashlib loads OpenSSL and
lists its digests (PF-72). A command that needs one (the server's libraries, a ruleset validated by pydantic) loads
it on its first read, in full. One switch away from the plain import: `TAGENGINE_IMPORTS=eager` in the environment.
"""

from __future__ import annotations

import gc
import os
import sys
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any

DEFERRED = ("inspect", "regex", "tempfile", "hashlib")  # loaded on a first read in a command line process


class Deferred(ModuleType):
    """A module that is imported in full on the first read of any name it lacks, and then takes the stand-in's
    place in `sys.modules`; whoever imported the stand-in before reads, writes and lists the real module through
    it. `import` finds the stand-in in `sys.modules` and reads only its `__spec__` (the real module's, which `defer`
    found, so `importlib.util.find_spec` answers for it as for the module), so importing it loads nothing."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loaded(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.loaded(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.loaded(), name)

    def __dir__(self) -> list[str]:
        return dir(self.loaded())

    def loaded(self) -> ModuleType:
        """The real module, imported now if no one has yet (under the import system's lock for its name, so two
        threads that read at once get the one module)."""
        if sys.modules.get(self.__name__) is self:
            sys.modules.pop(self.__name__, None)
        __import__(self.__name__)
        return sys.modules[self.__name__]


def defer(names: tuple[str, ...] = DEFERRED) -> None:
    """Stand a `Deferred` in for each module of `names` that no one has imported yet and that is there to import:
    `import` of one that is not must still fail at once (lark tries `regex`, and goes on without it)."""
    for name in names:
        spec = None if name in sys.modules else PathFinder.find_spec(name)
        if spec is not None:
            stand_in = Deferred(name)
            ModuleType.__setattr__(stand_in, "__spec__", spec)  # its own attribute: the module's is not loaded for it
            sys.modules[name] = stand_in


def script() -> None:
    """What the console script runs: the command line, in a process of its own."""
    # the collector off, as `cli.main` turns it off (PF-11), from before the command line's own imports: they make
    # thousands of objects that live until the process ends, which each collection would walk for nothing
    gc.disable()
    if os.environ.get("TAGENGINE_IMPORTS") != "eager":
        defer()
    from .cli import main as run_command_line

    run_command_line()
