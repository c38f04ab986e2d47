"""Layer order (issue 25): a module imports only modules of its own layer or a lower one, at any depth of its
file. The ranks are in LAYERS below, once; docs/architecture.md's "Layers" list must say the same."""

from __future__ import annotations

import re
from pathlib import Path

import import_graph as ig
import pytest

from conftest import ROOT

# Rank, the name docs/architecture.md gives the layer, and its modules: dotted prefixes under
# `tagengine._internal` (a folder covers all it holds, however its files are named or moved). A module no prefix
# covers fails the test: add it here and to the architecture page.
LAYERS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "Foundation", ("errors", "text", "files", "history", "resources", "memo", "prefix_memo", "version", "lazy",
                       "disk_cache", "digests", "ordered_pool", "samples", "records",
                       "record_inits")),
    (2, "ruleset/", ("ruleset",)),
    (3, "state/", ("state",)),
    (4, "sheet/", ("sheet",)),
    (5, "tags/", ("tags",)),
    (6, "commands/", ("commands",)),
    (7, "prompt/", ("prompt",)),
    (8, "Middleware", ("chat", "stream", "batch", "batch_dask", "states_dir", "progress")),
    (9, "Pages", ("pages",)),
    (10, "Entry points", ("cli", "console", "schema", "sillytavern", "openwebui", "server")),
)
INTERNAL = "tagengine._internal"
PUBLIC = 11  # the public face: `tagengine/__init__.py` and any module of `tagengine/` outside `_internal/`


def covers(prefix: str, module: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def rank_of(module: str) -> int | None:
    """The module's layer; 0 for `_internal/__init__.py` (its docstring only, below everything), PUBLIC for the
    public face (above everything: it reaches into any layer); None for a module of no layer."""
    if module == INTERNAL:
        return 0
    if covers("tagengine", module) and not covers(INTERNAL, module):
        return PUBLIC
    for rank, _, prefixes in LAYERS:
        if any(covers(f"{INTERNAL}.{p}", module) for p in prefixes):
            return rank
    return None


def layer_name(rank: int) -> str:
    return next((title for r, title, _ in LAYERS if r == rank), "the public face" if rank == PUBLIC else "-")


def offences(edges: list[ig.Edge], mods: set[str]) -> list[str]:
    """Each import of a higher layer, each module in no layer, each dynamic import that could reach higher."""
    out = [f"{m}: in no layer of tests/test_layers.py LAYERS; add its folder or module there (and to the "
           "Layers list of docs/architecture.md)" for m in sorted(mods) if rank_of(m) is None]
    for e in edges:
        src = rank_of(e.source)
        if src is None:
            continue
        where = f"{e.source} (layer {src}, {layer_name(src)}), line {e.line}"
        if e.exact:
            dst = rank_of(e.target)
            if dst is not None and dst > src:
                out.append(f"{where} imports {e.target} (layer {dst}, {layer_name(dst)}): a layer imports only "
                           "its own and lower layers (docs/architecture.md)")
            continue
        reach = [r for m in mods if (e.target == "" or covers(e.target, m)) and (r := rank_of(m)) is not None]
        if not e.target or max(reach, default=99) > src:
            out.append(f"{where} imports a module named at run time under {e.target or '(a name it builds)'}, "
                       f"which can reach layer {max(reach, default='?')}: name a module of its own or a lower layer")
    return out


def test_no_layer_imports_a_higher_one():
    """Function-level imports and `TYPE_CHECKING` blocks count too: a lower layer that names a higher one's type
    depends on it as surely, and none does today."""
    mods = ig.modules()
    problems = offences(ig.package_edges(mods), set(mods))
    assert not problems, "\n".join(problems)


def parse(source: str, name: str = f"{INTERNAL}.text") -> list[str]:
    """offences() of `source` as the module `name`, beside the real modules."""
    mods = set(ig.modules()) | {name}
    return offences(ig.within(ig.imports(name, source), mods), mods)


@pytest.mark.parametrize("source", [
    "from .server import store\n",
    "def f():\n    from .server.memory.store import Store\n    return Store\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .prompt import Budget\n",
    "import tagengine._internal.batch\n",
    "class A:\n    def m(self):\n        import tagengine._internal.pages.templates as t\n        return t\n",
    "from importlib import import_module\nimport_module('tagengine._internal.server.memory.store')\n",
    "import importlib\ndef f(x):\n    return importlib.import_module(f'.{x}', 'tagengine._internal.server')\n",
    "import importlib\ndef f(x):\n    return importlib.import_module(x)\n",
])
def test_a_foundation_module_importing_upward_is_refused(source):
    """The check itself: each way of writing an import of a higher layer from `text.py` (layer 1) is seen."""
    assert parse(source), source


@pytest.mark.parametrize("source", [
    "from .errors import Problem\nfrom . import files\n",
    "def f():\n    from .history import Message\n",
    "from importlib import import_module\nimport_module(f'{__package__}.errors')\n",
])
def test_imports_of_the_same_or_a_lower_layer_pass(source):
    assert parse(source) == [], source


def test_the_public_face_is_above_every_layer():
    """A public submodule (`tagengine/chatapp.py`, say) may import any layer; no layer may import it."""
    assert rank_of("tagengine") == rank_of("tagengine.chatapp") == rank_of("tagengine.__main__") == PUBLIC
    assert parse("from .. import apply_reply\n") and parse("import tagengine\n")
    assert parse("from ._internal.server import app\n", "tagengine.chatapp") == []


def test_a_module_in_no_layer_is_named():
    found = offences([], set(ig.modules()) | {f"{INTERNAL}.newthing"})
    assert found == [f"{INTERNAL}.newthing: in no layer of tests/test_layers.py LAYERS; add its folder or module "
                     "there (and to the Layers list of docs/architecture.md)"]


def architecture_layers() -> list[tuple[int, str, str]]:
    """(number, bold title, the item's text) for each item of the Layers list of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"\n(?=\d+\. )", section)
    out = []
    for item in items[1:]:
        m = re.match(r"(\d+)\. \*\*(.+?)\*\*", item)
        assert m, item[:80]
        out.append((int(m[1]), m[2].replace("`", ""), item))
    return out


def test_the_architecture_page_lists_the_same_layers():
    """The page names each layer in the order and with the modules of LAYERS; each `x.py` or `x/` it names under
    a layer exists in that layer (or, as `prompts/`, at the top of the repository)."""
    documented = architecture_layers()
    assert [(n, t) for n, t, _ in documented] == [(r, t) for r, t, _ in LAYERS]
    internal = ROOT / "tagengine" / "_internal"
    for (rank, title, prefixes), (_, _, item) in zip(LAYERS, documented, strict=True):
        named = set(re.findall(r"`(\w[\w/]*(?:\.py|/))`", item))
        for p in prefixes:
            assert f"{p}.py" in named or f"{p}/" in named, f"layer {rank} ({title}) of the page does not name {p}"
        for n in sorted(named):
            assert any(holds(internal / p, n) for p in prefixes) or (ROOT / n).exists(), \
                f"docs/architecture.md names `{n}` under layer {rank} ({title}); it is not there"


def holds(home: Path, named: str) -> bool:
    """Whether `home` (a module path without .py, or a folder) is the file or folder `named`, or holds it."""
    leaf = named.rstrip("/").rpartition("/")[2]
    if named.endswith("/"):
        return home.is_dir() and (home.name == leaf or any(p.is_dir() for p in home.rglob(leaf)))
    return (home.with_suffix(".py").name == leaf and home.with_suffix(".py").is_file()) or (
        home.is_dir() and any(home.rglob(leaf)))
