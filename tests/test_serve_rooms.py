"""The server's rooms hold to their rules (docs/architecture.md, "The server's rooms"). No function in server/ is
over 60 lines, the functions inside it counted (a route group is a table, not a closure holding its handlers); the
top level holds at most TOP_LEVEL modules, the rest in folders by concern; a route group imports `routes/base.py`
and never another group; every bound is in `limits.py`; an error body is written only in `wire/`; nothing changes
a module-level object (no process-global memo or cache); two apps in one process share no cache, and a turn on one
leaves the other's memory as it was."""

from __future__ import annotations

import ast
import asyncio
from collections import OrderedDict, deque
from collections.abc import Iterator
from pathlib import Path

from test_serve import SCRIPT, expected, history, make_campaigns

from conftest import ROOT
from tagengine._internal.prefix_memo import PrefixMemo
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.turn.request import read_marked
from tagengine._internal.server.turn.steps import begin, record_reply, whole_reply

SERVER = ROOT / "tagengine" / "_internal" / "server"
MAX_LINES = 60
TOP_LEVEL = 12  # modules at the server's top level: the app, its context, options, limits, errors, main...
# Numbers a server module may hold that bound nothing a client or an upstream sends, nor what the server keeps:
# each tunes how the server works (and why it is not in limits.py).
TUNING = {
    "CLIENT_LEFT": "the access line's status for a client gone mid-body (nginx's 499)",
    "DEFAULT_PORTS": "a URL scheme's port, to compare an Origin with a Host",
    "SKEW": "seconds a sign-in cookie's time may be ahead of this clock",
    "DEFAULT_PER_CAMPAIGN": "the default of `serve --keep`, an option",
    "PRUNE_EVERY": "new snapshots between two counts of a campaign's rows",
    "_CHUNK": "keys per SQL `IN (...)`",
    "WARN_EVERY": "seconds between two log lines saying the connection cap was met",
    "SAME_START": "characters: a continuation that starts as the reply did is a new answer",
    "SHORTEST_REPEAT": "a shorter whole continuation is never taken for a repeat",
    "PROBE_TOKENS": "the tokens of the probe that asks whether a model can continue",
    "DRAIN_SECONDS": "the most a finished stream waits for the upstream's body to end",
    "DEFAULT_CONTEXT": "a request's context window when neither it nor the model table says",
    "DEFAULT_RESPONSE": "a request's response budget when it asks none",
    "_TABLES": "numbers the upstream's count tables",
    "SAMPLES": "a path",
    "POOL_IDLE": "idle upstream connections kept for reuse",
    "HIGH_WATER": "bytes of an answer buffered before reading pauses (flow control)",
    "LOW_WATER": "and where reading goes on",
    "_BIG": "where orjson's integers turn into floats",
    "SLICE": "events given from one chunk before the event loop is given back",
    "NEAR_LONGEST": "the length of the longest text the near-miss marker pattern matches, a fact of the pattern",
}
# what changes an object in place, called on it
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "move_to_end", "add",
            "discard", "remove", "appendleft", "popleft", "put", "values"}


def server_modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SERVER.rglob("*.py")):
        yield path, ast.parse(path.read_text())


def long_functions(tree: ast.Module) -> list[str]:
    """The functions over MAX_LINES, the functions and classes inside them counted: a closure that holds its
    handlers is as long as they are together."""
    return [f"{node.lineno} {node.name}: {lines} lines" for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (lines := (node.end_lineno or node.lineno) - node.lineno + 1 + len(node.decorator_list)) > MAX_LINES]


def test_no_function_in_the_server_is_over_60_lines():
    """A handler, a step or a helper of server/ reads on one screen, and a route group is a table of module-level
    handlers (the chat route was once one 248-line closure; the editor's group a 96-line one)."""
    long = [f"{path.relative_to(ROOT)}:{f}" for path, tree in server_modules() for f in long_functions(tree)]
    assert not long, "\n".join(long)


def test_the_length_check_counts_the_handlers_a_group_holds():
    group = "def editor_routes(ctx):\n" + "".join(f"    async def h{i}(request):\n        return {i}\n"
                                                   for i in range(30)) + "    return []\n"
    assert [f.split(":")[0] for f in long_functions(ast.parse(group))] == ["1 editor_routes"]


def test_the_servers_top_level_holds_a_few_modules_the_rest_in_folders_by_concern():
    """A newcomer told "change how a stale party save is refused" or "add an upstream kind" opens one folder."""
    top = sorted(p.name for p in SERVER.glob("*.py"))
    assert len(top) <= TOP_LEVEL, top
    folders = {p.name for p in SERVER.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {"edits", "guard", "memory", "routes", "runtime", "turn", "upstream", "wire"}, folders
    for folder in folders:  # each says what it holds
        assert ast.get_docstring(ast.parse((SERVER / folder / "__init__.py").read_text())), folder


def imported_groups(tree: ast.Module) -> set[str]:
    """The modules of routes/ a module of routes/ imports (`from .x import`, `from . import x`)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
    return found


def test_a_route_group_imports_the_shared_base_never_another_group():
    groups = sorted((SERVER / "routes").glob("*.py"))
    crossing = {p.name: sorted(imported_groups(ast.parse(p.read_text())) - {"base"}) for p in groups}
    assert not {k: v for k, v in crossing.items() if v}, crossing
    assert imported_groups(ast.parse("from .pages import nav\nfrom . import edit_api\n")) == {"pages", "edit_api"}


def bounds_outside_limits(tree: ast.Module) -> list[str]:
    """A module-level name bound to a number (or an expression of numbers) that TUNING does not list: a bound,
    which belongs in limits.py."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name = ast.unparse(target)
            numbers = [c for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                       and isinstance(c.value, int | float) and not isinstance(c.value, bool)]
            if numbers and name not in TUNING:
                found.append(f"{node.lineno} {name}")
    return found


def test_every_bound_the_server_sets_is_in_limits_py():
    """docs/security.md says bounds go in `limits.py` (and its table follows `LIMITS`): a number anywhere else in
    server/ is a tuning TUNING names, with why."""
    found = [f"{path.relative_to(ROOT)}:{f}" for path, tree in server_modules() if path.name != "limits.py"
             for f in bounds_outside_limits(tree)]
    assert not found, "\n".join(found)
    assert bounds_outside_limits(ast.parse("MAX_FIELDS = 20_000\nSKEW = 300\nNAME = 'x'\n")) == ["1 MAX_FIELDS"]


def writes_an_error_body(tree: ast.Module) -> list[str]:
    """Where a module writes an error's JSON itself: a `{"error": ...}` literal, or Starlette's JSONResponse."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "error" for k in node.keys):
            found.append(f"{node.lineno} {ast.unparse(node)[:50]}")
        elif isinstance(node, ast.Name) and node.id == "JSONResponse":
            found.append(f"{node.lineno} JSONResponse")
    return found


def test_an_error_body_is_written_only_in_wire():
    """One error body everywhere, `{"error": {"message", "type", "code"}}` (`wire/chat_completions.error_doc`),
    through `wire/answers.json_response`."""
    found = [f"{path.relative_to(ROOT)}:{f}" for path, tree in server_modules() if path.parent.name != "wire"
             for f in writes_an_error_body(tree)]
    assert not found, "\n".join(found)
    assert sorted(writes_an_error_body(ast.parse('JSONResponse({"error": "unknown campaign"})'))) == [
        "1 JSONResponse", "1 {'error': 'unknown campaign'}"]


def module_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level by assignment."""
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def changes_module_objects(tree: ast.Module) -> list[str]:
    """Where a function of the module changes an object the module holds: `global`, an item or attribute
    set or deleted, a mutating method called on it."""
    names = module_names(tree)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        local = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs, *fn.args.posonlyargs]}
        for node in ast.walk(fn):
            if isinstance(node, ast.Global):
                found.append(f"{fn.name}:{node.lineno}: global {', '.join(node.names)}")
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for node in ast.walk(fn):
            target = None
            if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                target = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                target = node.func.value
            if isinstance(target, ast.Name) and target.id in names and target.id not in local:
                found.append(f"{fn.name}:{node.lineno}: {ast.unparse(node)[:60]}")
    return found


def test_nothing_in_the_server_changes_a_module_level_object():
    """Issue 25 item 3: no process-global memo or cache in server/ (chain.py's chain-step table and key memo
    were two, shared by every server in the process): what a server remembers is its ServerContext's."""
    found = [f"{path.relative_to(ROOT)}: {f}" for path, tree in server_modules() for f in changes_module_objects(tree)]
    assert not found, "\n".join(found)


def test_the_module_scan_finds_a_process_global_memo():
    """The scan above can fail: chain.py as it was (08f889d) holds two."""
    before = '''
_NEXT: dict = {}
_next_chars = 0
_KEYS = PrefixMemo(len)

def next_key(key, reply):
    global _next_chars
    hit = _NEXT.get((key, reply))
    if hit is None:
        _NEXT.clear()
        hit = _NEXT[(key, reply)] = key
    return hit

def chain_keys(c, replies):
    return _KEYS.values([c, *replies], None)
'''
    found = changes_module_objects(ast.parse(before))
    assert [f.split(":")[0] for f in found] == ["next_key", "next_key", "next_key", "chain_keys"], found


MUTABLE = (dict, list, set, OrderedDict, deque, PrefixMemo)


def mutable_parts(root: object) -> dict[int, str]:
    """The mutable objects a server's parts hold, by id: containers and the server's own objects, walked
    through the attributes of objects of the server's modules (the engine's objects are not walked: a ruleset
    is read-only, A-3)."""
    seen: dict[int, str] = {}
    stack: list[tuple[object, str]] = [(root, "ctx")]
    while stack:
        obj, where = stack.pop()
        if id(obj) in seen:
            continue
        module = type(obj).__module__
        ours = module.startswith("tagengine._internal.server") or isinstance(obj, MUTABLE)
        if not ours:
            continue
        seen[id(obj)] = where
        if isinstance(obj, dict):
            stack += [(v, f"{where}[{k!r}]") for k, v in obj.items()]
        elif isinstance(obj, list | set | deque | tuple):
            stack += [(v, f"{where}[]") for v in obj]
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            stack += [(v, f"{where}.{k}") for k, v in attrs.items()]
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                stack.append((getattr(obj, slot), f"{where}.{slot}"))
    return seen


def test_two_apps_in_one_process_share_no_cache(tmp_path):
    """Issue 25 item 3: two servers in one process (as the tests run them) hold no mutable object in common,
    and a turn on one leaves the other's memory empty."""
    for name in ("a", "b"):
        make_campaigns(tmp_path / name)
    one, two = (make_app(Options(upstream="http://up.invalid/v1", data=tmp_path / name)).state.context
                for name in ("a", "b"))
    assert isinstance(one, ServerContext) and isinstance(two, ServerContext)

    async def a_turn() -> None:
        turn = await begin(one, one.campaign("heist"), read_marked(history("heist", ["one"], [])))
        _, applied, filt, raw = whole_reply(turn, SCRIPT["one"])
        assert record_reply(one, turn, applied, filt, raw)
        await begin(one, one.campaign("heist"), read_marked(history("heist", ["one", "two"], [applied.text])))

    asyncio.run(a_turn())
    assert len(one.snapshots) > 0 and len(two.snapshots) == 0
    shared = {i: where for i, where in mutable_parts(one).items() if i in mutable_parts(two)}
    assert not shared, shared
    stored = expected("heist", [SCRIPT["one"]])[0]
    turn = asyncio.run(begin(two, two.campaign("heist"), read_marked(history("heist", ["one", "two"], stored))))
    assert turn.before.replayed == 1
    for ctx in (one, two):
        asyncio.run(ctx.close())


def test_the_parts_walk_finds_what_two_servers_share(tmp_path):
    """The walk above can fail: a cache handed to both servers is found."""
    make_campaigns(tmp_path / "a")
    one = make_app(Options(upstream="http://up.invalid/v1", data=tmp_path / "a")).state.context
    two = make_app(Options(upstream="http://up.invalid/v1", data=tmp_path / "a")).state.context
    two.chain.snapshots = one.snapshots
    assert any(where.endswith(".snapshots") for i, where in mutable_parts(two).items() if i in mutable_parts(one))
    for ctx in (one, two):
        asyncio.run(ctx.close())


def test_the_route_table_lists_every_group_and_the_map_names_every_module_of_the_server():
    """docs/architecture.md's map of the server stays true: `ROUTE_GROUPS` holds each group's function (a group
    left out of the table would answer nothing), and the map names every module, each in its folder."""
    from tagengine._internal.server import app

    groups = {p.stem for p in (SERVER / "routes").glob("*.py")} - {"__init__", "base"}
    assert sorted(f.__module__.rsplit(".", 1)[1] for f in app.ROUTE_GROUPS) == sorted(groups)
    assert all(f.__name__.endswith("_routes") for f in app.ROUTE_GROUPS)
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## The server's rooms", 1)[1].split("\n## ", 1)[0]
    missing = []
    for path in sorted(SERVER.rglob("*.py")):
        rel = path.relative_to(SERVER)
        if rel == Path("__init__.py"):
            continue
        if path.name == "__init__.py":
            named = f"`{rel.parent}/`" in section
        elif rel.parent == Path("."):
            named = f"`{path.name}`" in section
        else:  # a folder's line names its modules by file name
            line = next((x for x in section.split("\n- ") if x.startswith(f"`{rel.parent}/`")), "")
            named = f"`{path.name}`" in line
        if not named:
            missing.append(str(rel))
    assert not missing, missing
