"""The package's modules and what each imports, read from the source (nothing is imported): for the layer test.

Every import counts, at any depth of a file (a function's own `import`, a `TYPE_CHECKING` block), and
`importlib.import_module` too: a name with a fixed start and a variable end is read as "some module under that
start", and one it cannot read at all is kept as such, for the caller to refuse.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "tagengine"


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` at `line`. `exact` is False for a dynamic import of some module under
    `target` ("" when the name cannot be read); `fallback` is the `from` part of `from a import b`, the module
    imported when `a.b` is a name in `a`, not a module."""

    source: str
    target: str
    line: int
    exact: bool = True
    fallback: str | None = None


def modules(pkg: Path = PKG) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (a package is its `__init__.py`)."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(anchor: str, relative: str) -> str:
    """`relative` (".x", "..y.z", ".") read from the package `anchor`, as the import system does."""
    level = len(relative) - len(relative.lstrip("."))
    base = anchor.split(".")[: len(anchor.split(".")) - (level - 1)]
    rest = relative[level:]
    return ".".join(base + ([rest] if rest else []))


def _fixed_start(node: ast.expr, name: str, package: str) -> tuple[str, bool] | None:
    """The fixed start of a module name given to import_module, and whether it is the whole name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if not isinstance(node, ast.JoinedStr):
        return None
    text = ""
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            text += part.value
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id in (
                "__name__", "__package__"):
            text += name if part.value.id == "__name__" else package
        else:  # a variable part: only what comes before its last dot is known
            return text[: text.rfind(".") + 1], False
    return text, True


def _anchor(node: ast.Call, name: str, package: str) -> str | None:
    """The package import_module reads a relative name from: its second argument."""
    arg = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "package"), None)
    if isinstance(arg, ast.Name) and arg.id in ("__name__", "__package__"):
        return name if arg.id == "__name__" else package
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def imports(name: str, source: str, is_package: bool = False) -> list[Edge]:
    """Every import in `source`, the module `name`, as written (targets may be outside the package)."""
    package = name if is_package else name.rpartition(".")[0]
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            edges += [Edge(name, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, "." * node.level + (node.module or "")) if node.level else node.module or ""
            edges += [Edge(name, f"{base}.{a.name}", node.lineno, fallback=base) for a in node.names]
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            if (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") != "import_module":
                continue
            start = _fixed_start(node.args[0], name, package)
            anchor = _anchor(node, name, package)
            if start is None or (start[0].startswith(".") and anchor is None):
                edges.append(Edge(name, "", node.lineno, exact=False))
                continue
            text, whole = start
            if text.startswith("."):
                text = _resolve(anchor or "", text.rstrip(".") if not whole and text != "." * len(text) else text)
            edges.append(Edge(name, text.rstrip("."), node.lineno, exact=whole))
    return edges


def within(edges: list[Edge], mods: set[str]) -> list[Edge]:
    """The imports between the package's own modules: `from a import b` goes to `a.b` when that is a module,
    else to `a`; a dynamic import into the package (or unreadable) stays as written, for the caller to judge
    what it may reach."""
    top = min(mods).partition(".")[0]
    out: list[Edge] = []
    for e in edges:
        if not e.exact:
            if e.target in ("", top) or e.target.startswith(top + "."):
                out.append(e)
            continue
        target = e.target if e.target in mods else e.fallback
        if target in mods and target != e.source:
            out.append(Edge(e.source, target, e.line))
    return out


def package_edges(mods: dict[str, Path]) -> list[Edge]:
    """within() for every module of the package."""
    edges = [e for name, path in mods.items()
             for e in imports(name, path.read_text(encoding="utf-8"), path.name == "__init__.py")]
    return within(edges, set(mods))
