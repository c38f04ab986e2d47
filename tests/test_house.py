"""The house rules of issue 11: no import cycle, no reaching into another module's underscore names, a state
that nothing returned can change, one public API."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tagengine
import tagengine.chatapp
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


# A library's private attributes the engine reads where its public API has no way to do the same, each pinned by a
# test that fails when the library moves it: (the module that reads it, the name). (Built-in modules imported by
# their own names, such as `digests`' hash modules, are pinned by their own tests: tests/test_digests.py.)
PINNED_PRIVATE = {
    # dataclasses' mark of a field, which `records` sets as the library does (test_records.py::test_pf_72_...)
    ("tagengine._internal.records", "_FIELD"), ("tagengine._internal.records", "_field_type"),
}


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
                if owner in ("self", "cls") or (owner, node.attr) in allowed or node.attr == "_internal" or (
                        name, node.attr) in PINNED_PRIVATE:
                    continue
                offences.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not offences, "\n".join(offences)


PUBLIC = ("tagengine", "tagengine.chatapp")  # the public modules: the core, and a chat app's helpers


def test_public_api_is_complete_and_importable():
    for name in tagengine.__all__:
        assert getattr(tagengine, name) is not None, name
    for name in ("Chat", "StreamFilter", "build_prompt", "Budget", "replay", "TagengineError", "apply_reply",
                 "GameState", "Ruleset", "narration"):
        assert name in tagengine.__all__


def typing_imports(module: ModuleType) -> dict[str, tuple[str, str]]:
    """What a module's `if TYPE_CHECKING:` block imports: the name it binds -> (the module, the name there)."""
    path = Path(module.__file__ or "")
    package = module.__name__ if path.name == "__init__.py" else module.__name__.rpartition(".")[0]
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    base = package.split(".")[: len(package.split(".")) - (imp.level - 1)] if imp.level else []
                    home = ".".join([*base, *([imp.module] if imp.module else [])])
                    found.update({a.asname or a.name: (home, a.name) for a in imp.names})
    return found


@pytest.mark.parametrize("public", PUBLIC)
def test_a_public_module_is_made_from_one_table(public):
    """Issue 25: `_API` (name -> home) is the one list. `__all__` is made from it, the lazy `__getattr__` reads
    it, and the typing-only imports (which cannot be made at run time) import the same names from the same
    homes; each name is defined where the table says, and only one public module has it."""
    module = importlib.import_module(public)
    table = {name: f"tagengine._internal.{home}" for name, home in module._API.items()}
    assert [n for n in module.__all__ if n != "__version__"] == list(table)
    assert typing_imports(module) == {name: (home, name) for name, home in table.items()}
    text = Path(module.__file__ or "").read_text()  # `X as X`: mypy --strict reads only that as a re-export
    assert all(f"import {name} as {name}\n" in text for name in table)
    for name, home in table.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name), name
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == home, f"{name} is defined in {value.__module__}, not {home}"
    assert dir(module) == sorted(module.__all__)
    with pytest.raises(AttributeError, match=f"module '{public}' has no attribute 'nothing'"):
        _ = module.nothing
    others = {n for p in PUBLIC if p != public for n in importlib.import_module(p).__all__}
    assert not others & set(table), others & set(table)


@pytest.mark.parametrize(("old", "instead"), [(n, m.instead) for n, m in tagengine._MOVED.items()])
def test_a_name_that_left_the_top_level_works_for_one_more_version(old, instead):
    """Issue 25: the chat-app helpers moved to `tagengine.chatapp` (`character` and `party` as `view_character`
    and `view_party`); the function `save_party` gave way to `Chat.save_party`. The old name still answers,
    with a DeprecationWarning saying what to use, and is not listed."""
    moved = tagengine._MOVED[old]
    with pytest.warns(DeprecationWarning, match=re.escape(f"tagengine.{old} is deprecated")) as caught:
        value = getattr(tagengine, old)
    assert instead in str(caught[0].message)
    assert value is getattr(importlib.import_module(f"tagengine._internal.{moved.home}"), moved.name)
    assert old not in tagengine.__all__ and old not in dir(tagengine)
    if instead.startswith("tagengine.chatapp."):  # the name to use is that very object
        assert getattr(tagengine.chatapp, instead.removeprefix("tagengine.chatapp.").partition("(")[0]) is value


def test_reasons_are_read_only():
    """Issue 25: `tagengine.REASONS["x"] = "y"` used to succeed, and every refusal after it could name a reason
    no page documents. The table is a read-only mapping of tuples."""
    with pytest.raises(TypeError):
        tagengine.REASONS["x"] = ("any tag", "y")  # type: ignore[index]
    with pytest.raises(TypeError):
        del tagengine.REASONS["malformed"]  # type: ignore[attr-defined]
    assert all(isinstance(v, tuple) for v in tagengine.REASONS.values())


def _typing_namespace(module_name: str) -> dict[str, Any]:
    """A module's globals plus what its `if TYPE_CHECKING:` block imports, to resolve its string annotations."""
    module = importlib.import_module(module_name)
    namespace = dict(vars(module))
    for bound, (home, name) in typing_imports(module).items():
        namespace[bound] = getattr(importlib.import_module(home), name)
    return namespace


# A type whose constructor is not how a user makes one: `Ruleset.load`, `from_json` or `from_dict` build a
# Ruleset; its dataclass `__init__` (the validated file and its indexes) is the engine's. So do they build a
# ruleset's definitions (`RestDef`, a dataclass since PF-27): a user reads them from `Ruleset.file`.
BUILT_BY_CLASSMETHODS = {"Ruleset", "RestDef"}


def signature_types(obj: Any) -> set[type]:
    """The classes named in the annotations of a public function, or of a public class's constructor, public
    methods and properties."""
    functions = []
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if name.startswith("_") and not (name == "__init__" and obj.__name__ not in BUILT_BY_CLASSMETHODS):
                continue
            member = member.__func__ if isinstance(member, classmethod | staticmethod) else member
            member = member.fget if isinstance(member, property) else member
            if inspect.isfunction(member):
                functions.append(member)
    elif inspect.isfunction(obj):
        functions.append(obj)
    found: set[type] = set()

    def collect(tp: Any) -> None:
        if isinstance(tp, type):
            found.add(tp)
        origin = typing.get_origin(tp)
        if isinstance(origin, type):
            found.add(origin)
        for arg in typing.get_args(tp):
            collect(arg)

    for fn in functions:
        namespace = _typing_namespace(fn.__module__)
        for tp in typing.get_type_hints(fn, globalns=namespace).values():
            collect(tp)
    return found


def test_every_type_a_public_signature_names_is_exported():
    """Issue 25: `narration(text, vocabulary: Vocabulary)` and `take_rest(..., rest: RestDef | str)` named types
    a user could not import. Every class of tagengine's that a public signature names (and, in turn, every
    class those name) is public in `tagengine` or `tagengine.chatapp`."""
    public = {id(getattr(m, n)): f"{m.__name__}.{n}" for m in map(importlib.import_module, PUBLIC)
              for n in m.__all__ if n != "__version__"}
    todo = [getattr(m, n) for m in map(importlib.import_module, PUBLIC) for n in m.__all__ if n != "__version__"]
    seen: set[int] = set()
    missing: dict[str, set[str]] = {}
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for tp in signature_types(obj):
            if tp.__module__.startswith("tagengine") and id(tp) not in public:
                missing.setdefault(f"{tp.__module__}.{tp.__qualname__}", set()).add(obj.__name__)
                todo.append(tp)
    assert not missing, "\n".join(f"{t}, named by {', '.join(sorted(by))}" for t, by in sorted(missing.items()))
    assert {"Vocabulary", "Dice", "TokenizerChoice"} <= set(tagengine.__all__)
    assert "RestDef" in tagengine.chatapp.__all__


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
    from tagengine._internal.sheet import view_character

    state = tagengine.GameState.load(grave, ROOT / "samples" / "states" / "gravewatch.json")
    name = state.characters[0]
    view = view_character(grave, state, name)
    with pytest.raises(TypeError):
        view.fields["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        view.derived["x"] = 1  # type: ignore[index]
    assert view_character(grave, state, name) is view


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


# a type alias is named like a class: `Compiled = Callable[...]`, `TouchedKind = Literal[...]`; not `T` nor `FORMAT`
CLASS_LIKE = re.compile(r"_?[A-Z][a-z]")


def top_level_names(path: Path) -> list[str]:
    """The functions, classes and type aliases a module defines at its top level, public or `_private`
    (dunders such as a lazy module's `__getattr__` are Python's protocol, not names of ours)."""
    names = []
    for n in ast.parse(path.read_text()).body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(n.name)
        elif isinstance(n, ast.Assign | ast.AnnAssign):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names += [t.id for t in targets if isinstance(t, ast.Name) and CLASS_LIKE.match(t.id)]
    return [n for n in names if not (n.startswith("__") and n.endswith("__"))]


# Names each command family module defines by protocol: its `op_of` (which op a tag names) and `teach` (what the
# reminder teaches of it) go into its `Family` (commands/family.py), which the dispatcher and the prompt read, as
# markdown-it reads one rule per module. The same idea under the same name in each family, not a clash.
FAMILY_PROTOCOL = {
    "op_of": {"check", "clock", "edit", "sheet"},
    "teach": {"check", "clock", "sheet"},
}

# Clashes inside `server/`, which its own refactor (issue 25) renames; emptied at that merge. Each is a name and the
# modules that define it (or, for a name of a module, `<-> module`).
PENDING: dict[str, set[str]] = {}


def test_one_name_means_one_thing():
    """The developers' brief: one name means one thing across the package. A function, class or type alias,
    public or `_private`, is defined in one module of `tagengine/` only, the family protocol above aside: two
    modules' `_init` are two ideas to a reader who greps, whatever the underscore says."""
    defined: dict[str, list[str]] = {}
    for name, path in modules().items():
        for n in top_level_names(path):
            defined.setdefault(n, []).append(name)
    allowed = {(n, f"tagengine._internal.commands.{m}") for n, ms in FAMILY_PROTOCOL.items() for m in ms}
    allowed |= {(n, m) for n, ms in PENDING.items() for m in ms}
    clashes = {n: ms for n, ms in defined.items() if len(ms) > 1 and not {(n, m) for m in ms} <= allowed}
    assert not clashes, "\n".join(f"{n}: {', '.join(ms)}" for n, ms in sorted(clashes.items()))
    for n, ms in FAMILY_PROTOCOL.items():  # the allow-list stays true: each family still defines its protocol
        assert {f"tagengine._internal.commands.{m}" for m in ms} <= set(defined.get(n, [])), n


# A function named as another module that means the same: `cli.main` and `server/main.py` (an entry point),
# `prompt/render.render` and `tags/render.py` (text rendered), `chatreplay.load` and `ruleset/load.py` (a file read
# into a checked object), `batch.replay` and `cli/replay.py`, `server/main.serve` and `cli/serve.py` (a command and
# the command line's module of it, CL-1).
SAME_AS_A_MODULE = {"main", "render", "load", "replay", "serve"}


def test_no_name_is_another_modules_name_for_another_thing():
    """What the test above cannot see: a function, class or type alias, public or `_private`, named as another
    module of the package (`store`, a state with new marks, beside `server/memory/store.py`; `_target`, a pool and an
    amount, beside `commands/target.py`), the allow-list above aside."""
    mods = modules()
    stems: dict[str, set[str]] = {}
    for name in mods:
        stems.setdefault(name.rpartition(".")[2], set()).add(name)
    found = [f"{name}.{n} <-> {m}" for name, path in mods.items() for n in top_level_names(path)
             if n.lstrip("_") not in SAME_AS_A_MODULE for m in sorted(stems.get(n.lstrip("_"), set()) - {name})
             if m not in PENDING.get(n, set())]
    assert not found, "\n".join(found)
    for n in SAME_AS_A_MODULE:  # the allow-list stays true: each is still a function beside a module of its name
        assert stems.get(n) and any(n in top_level_names(p) for p in mods.values()), n


def test_comments_say_why_not_which_issue():
    """The code's comments and docstrings say why a line is there (a decision ID where one holds the reasoning),
    never which issue it came from: an issue number means nothing to a reader of the code."""
    said = re.compile(r"\bissue \d+", re.IGNORECASE)
    found = [f"{p.relative_to(ROOT)}:{n}" for folder in ("tagengine", "pages", "prompts", "grammars",
                                                          "sillytavern/extension")
             for p in sorted((ROOT / folder).rglob("*")) if p.suffix in (".py", ".js", ".css", ".j2", ".lark")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if said.search(line)]
    assert not found, found
