"""The house rules of issue 11: no import cycle, no reaching into another module's underscore names, a state
that nothing returned can change, one public API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tagengine
from conftest import ROOT
from tagengine._internal.ruleset import Ruleset

PKG = ROOT / "tagengine"


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of the package that `name` imports, at any depth of the file except typing-only blocks."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in known else target)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            visit(child)

    visit(tree)
    return {m for m in found if m in known and m != name}


def test_no_import_cycle():
    """A module graph with no cycle. Layer order (no layer imports a higher one) is tests/test_layers.py's."""
    mods = modules()
    graph = {m: imports_of(m, p, set(mods)) for m, p in mods.items()}
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    edges = {m: {d for d in deps if not (m in graph.get(d, set()) and d.startswith(m + "."))} for m, deps in
             graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(edges[m]):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (cycle := dfs(d)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            cycle = dfs(m)
            assert cycle is None, " -> ".join(cycle)


@pytest.mark.slow  # a fresh interpreter per module
def test_each_module_imports_alone():
    """Any module imported first, in a fresh interpreter, works (an import cycle would show here). One
    interpreter that has imported nothing of tagengine (only the libraries it uses, to save time) forks a
    child per module: each child is as fresh, as far as tagengine goes."""
    import subprocess
    import sys

    names = sorted(m for m in modules() if not m.endswith("__main__"))
    code = (
        "import importlib, os, sys, traceback\n"
        "import httpx, jinja2, lark, orjson, pydantic, starlette.applications, tiktoken\n"
        "for n in sys.argv[1:]:\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            importlib.import_module(n)\n"
        "        except BaseException:\n"
        "            print(n, traceback.format_exc()[-400:], flush=True)\n"
        "            os._exit(1)\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and not r.stdout, r.stdout + r.stderr[-400:]


def test_no_module_reads_another_modules_underscore_names():
    allowed = {("os", "_exit")}
    offences = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") and alias.name != "_internal":
                        offences.append(f"{name}: from {node.module} import {alias.name}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = node.value.id if isinstance(node.value, ast.Name) else None
                if owner in ("self", "cls") or (owner, node.attr) in allowed or node.attr == "_internal":
                    continue
                offences.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not offences, "\n".join(offences)


def test_public_api_is_complete_and_importable():
    for name in tagengine.__all__:
        assert getattr(tagengine, name) is not None, name
    for name in ("Chat", "StreamFilter", "build_prompt", "Budget", "replay", "TagengineError", "apply_reply",
                 "GameState", "Ruleset", "narration"):
        assert name in tagengine.__all__


@pytest.fixture(scope="module")
def grave() -> Ruleset:
    return Ruleset.load(ROOT / "samples" / "rulesets" / "gravewatch.json")


def test_state_is_read_only_all_the_way_down(grave):
    """Issue 11: changing what a public function returns raises, so it can never reach the state."""
    state = tagengine.GameState.load(grave, ROOT / "samples" / "states" / "gravewatch.json")
    before = state.to_json()
    name = state.characters[0]
    card = state.cards[name]
    with pytest.raises(TypeError):
        card["fields"]["watch"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        state.cards[name] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        state.party_sheet["fields"] = {}  # type: ignore[index]
    live = state.live_of(name)
    with pytest.raises(TypeError):
        live.pools["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        state.live["x"] = live  # type: ignore[index]
    for rows in card["lists"].values():
        assert isinstance(rows, tuple)
    # what to_json hands out is a copy: changing it changes nothing
    doc = state.to_json()
    doc["gameCharacterCards"][name]["fields"].clear()
    assert state.to_json() == before


def test_a_cached_sheet_view_cannot_be_changed(grave):
    """The sheet views are cached per snapshot: a caller's change must not show in later calls."""
    from tagengine._internal.sheet import character

    state = tagengine.GameState.load(grave, ROOT / "samples" / "states" / "gravewatch.json")
    name = state.characters[0]
    view = character(grave, state, name)
    with pytest.raises(TypeError):
        view.fields["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        view.derived["x"] = 1  # type: ignore[index]
    assert character(grave, state, name) is view


def test_input_dicts_are_copied_not_kept(grave):
    cards = {"Mira": {"abilities": {}, "fields": {"name": "a"}, "lists": {}}}
    state = tagengine.GameState(cards=cards)
    cards["Mira"]["fields"]["name"] = "b"
    assert state.cards["Mira"]["fields"]["name"] == "a"



def test_nothing_a_caller_keeps_reaches_a_state():
    """A read-only view the caller made over its own dict is copied too: changing the dict later changes
    nothing the state holds (the identity caches trust that)."""
    from types import MappingProxyType

    from tagengine._internal.errors import StateError

    cards = {"Mira": {"abilities": {}, "fields": {}, "lists": {}}}
    state = tagengine.GameState(cards=MappingProxyType(cards))
    cards["Evil"] = {}
    assert state.characters == ("Mira",)
    pools = {"grit": 2}
    live = tagengine.LiveValues(pools=MappingProxyType(pools))
    pools["grit"] = 9
    assert live.pools["grit"] == 2
    assert tagengine.WoundMarks(["cut"]).marks == ("cut",)  # type: ignore[arg-type]
    with pytest.raises(StateError):
        tagengine.GameState(cards=cards, live={"mira": {"pools": {}}})  # type: ignore[dict-item]


def top_level_names(path: Path) -> list[str]:
    """The public functions and classes a module defines at its top level."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [n.name for n in ast.parse(path.read_text()).body if isinstance(n, kinds) and not n.name.startswith("_")]


# Names each command family module defines by protocol: its `op_of` (which op a tag names) and `teach` (what the
# reminder teaches of it) go into its `Family` (commands/family.py), which the dispatcher and the prompt read, as
# markdown-it reads one rule per module. The same idea under the same name in each family, not a clash.
FAMILY_PROTOCOL = {
    "op_of": {"check", "clock", "sheet"},
    "teach": {"check", "clock", "sheet"},
}


def test_one_public_name_means_one_thing():
    """The developers' brief: one name means one thing across the package. A public top-level function or
    class (not `_name`) is defined in one module of `tagengine/` only, the family protocol above aside."""
    defined: dict[str, list[str]] = {}
    for name, path in modules().items():
        for n in top_level_names(path):
            defined.setdefault(n, []).append(name)
    allowed = {(n, f"tagengine._internal.commands.{m}") for n, ms in FAMILY_PROTOCOL.items() for m in ms}
    clashes = {n: ms for n, ms in defined.items() if len(ms) > 1 and not {(n, m) for m in ms} <= allowed}
    assert not clashes, "\n".join(f"{n}: {', '.join(ms)}" for n, ms in sorted(clashes.items()))
    for n, ms in FAMILY_PROTOCOL.items():  # the allow-list stays true: each family still defines its protocol
        assert {f"tagengine._internal.commands.{m}" for m in ms} <= set(defined.get(n, [])), n


# A function named as another module that means the same: `cli.main` and `server/main.py` (an entry point),
# `commands/check.settle` and `server/settle.py` (a check settled), `prompt/render.render` and `tags/render.py`
# (text rendered), `sheet/evaluate.party` and `ruleset/checks/party.py` (the party sheet), `chatreplay.load` and
# `ruleset/load.py` (a file read into a checked object).
SAME_AS_A_MODULE = {"main", "settle", "render", "party", "load"}


def test_no_public_name_is_another_modules_name_for_another_thing():
    """What the test above cannot see: a function or class named as another module of the package (`store`,
    a state with new marks, beside `server/store.py`), the allow-list above aside."""
    mods = modules()
    stems: dict[str, set[str]] = {}
    for name in mods:
        stems.setdefault(name.rpartition(".")[2], set()).add(name)
    found = [f"{name}.{n} <-> {m}" for name, path in mods.items() for n in top_level_names(path)
             if n not in SAME_AS_A_MODULE for m in sorted(stems.get(n, set()) - {name})]
    assert not found, "\n".join(found)
