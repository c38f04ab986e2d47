"""The Jinja environment over `prompts/` (package data): StrictUndefined, blocks trimmed, no autoescape.

Only the template files are compiled; ruleset and chat strings reach Jinja as values.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from functools import cache
from typing import Any

import jinja2
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from jinja2.bccache import Bucket, BytecodeCache

from .. import disk_cache
from ..resources import resource_dir

TEMPLATES_KIND = "templates"  # the cache folder's subfolder for compiled templates


class TemplateCache(BytecodeCache):
    """Jinja's compiled templates kept in the cache folder (decision PF-5): a cold `preview` or `sheet --html`
    loads its templates' code instead of compiling them (about 15 ms and 30 ms). Jinja keys an entry by the
    template's name and file and rejects one whose source or Python version changed; the key here adds
    `settings`, the environment's options that change the compiled code, and Jinja's version. An entry
    Jinja cannot read is a miss, as disk_cache.py's are."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = repr(sorted(settings.items())) + f"; jinja2 {jinja2.__version__}"

    def _key(self, bucket: Bucket) -> str:
        return disk_cache.digest(bucket.key.encode(), self.settings.encode())

    def load_bytecode(self, bucket: Bucket) -> None:
        data = disk_cache.read_entry(TEMPLATES_KIND, self._key(bucket))
        if data is not None:
            try:
                bucket.bytecode_from_string(data)
            except Exception:  # whatever the bytes hold, Jinja compiles the template as if none were kept
                bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        disk_cache.write_entry(TEMPLATES_KIND, self._key(bucket), bucket.bytecode_to_string())


class FlatGlobals(Environment):
    """Jinja's environment, each template's globals one plain dict (a copy of the environment's, under the
    template's own). Jinja makes them a ChainMap over the environment's, and every `render` copies that map and
    makes a set of its keys: a ChainMap is iterated in Python, some 6 us of a sheet block's 15 us render, twice a
    turn (PF-59). The ChainMap is there so that globals changed after a template is loaded reach it, which Jinja
    itself advises against: nothing here changes them. Jinja's public hook (`make_globals`, Jinja 3.0+); the plain
    `Environment` is the switch back (tests/test_golden_prompts.py writes every sample's prompts and pages both
    ways, each in a new process)."""

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


def environment(folder: str, **settings: Any) -> Environment:
    """A Jinja environment over one of the package's template folders, its compiled templates kept."""
    return FlatGlobals(loader=FileSystemLoader(str(resource_dir(folder))), bytecode_cache=TemplateCache(settings),
                       auto_reload=False, **settings)


@cache
def env() -> Environment:
    return environment("prompts", undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=False, autoescape=False)


@cache
def template(name: str) -> jinja2.Template:
    """`env()`'s template `name`, kept by its name: with `auto_reload` off Jinja gives this same object again, after
    a look-up (a lock, the name checked and joined to the folder's) of some 1.9 us, twice a reminder (PF-63)."""
    return env().get_template(name)


def render(name: str, context: dict[str, Any]) -> str:
    return template(name).render(**context).strip() + "\n"


def include_text(name: str, context: dict[str, Any]) -> str:
    """What template `name` writes where another template includes it: its text as rendered, not stripped."""
    return template(name).render(**context)
