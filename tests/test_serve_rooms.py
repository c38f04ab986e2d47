"""Issue 25 items 1 and 3: the server's rooms hold to their rules. No function in server/ is over 60 lines of
its own; nothing in it changes a module-level object (no process-global memo or cache); two apps in one
process share no cache, and a turn on one leaves the other's memory as it was."""

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
# what changes an object in place, called on it
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "move_to_end", "add",
            "discard", "remove", "appendleft", "popleft", "put", "values"}


def server_modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SERVER.rglob("*.py")):
        yield path, ast.parse(path.read_text())


def own_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines, less those of the functions and classes defined inside it (measured on their own):
    a route group's function holds its handlers."""
    lines = set(range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
    for sub in ast.walk(fn):
        if sub is not fn and isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            lines -= set(range(sub.lineno - len(sub.decorator_list), (sub.end_lineno or sub.lineno) + 1))
    return len(lines)


def test_no_function_in_the_server_is_over_60_lines():
    """Issue 25 item 1: a handler, a step or a helper of server/ reads on one screen (the chat route was one
    248-line closure)."""
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {own_lines(node)} lines"
            for path, tree in server_modules() for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and own_lines(node) > MAX_LINES]
    assert not long, "\n".join(long)


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
        turn = await begin(one, "heist", read_marked(history("heist", ["one"], [])))
        _, applied, filt, raw = whole_reply(one, turn, SCRIPT["one"])
        assert record_reply(one, turn, applied, filt, raw)
        await begin(one, "heist", read_marked(history("heist", ["one", "two"], [applied.text])))

    asyncio.run(a_turn())
    assert len(one.snapshots) > 0 and len(two.snapshots) == 0
    shared = {i: where for i, where in mutable_parts(one).items() if i in mutable_parts(two)}
    assert not shared, shared
    stored = expected("heist", [SCRIPT["one"]])[0]
    assert asyncio.run(begin(two, "heist", read_marked(history("heist", ["one", "two"], stored)))).before.replayed == 1
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
