"""JSON Schema of the two file formats (`tagengine schema ruleset|state`)."""

from __future__ import annotations

from typing import Any

from .errors import NotFoundError
from .ruleset.load import shape_schema
from .state.format import state_schema

# The published schema names the file's parts as the format does (`Pool`, `Track`): the `Def` suffix is
# the code's naming rule (docs/architecture.md), not part of the file format.
_PUBLISHED = {"RulesetDef": "RulesetFile"}


def _published(name: str) -> str:
    return _PUBLISHED.get(name) or (name[:-3] if name.endswith("Def") and name != "FieldDef" and name != "ListDef"
                                    else name)


def _rename(node: Any) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "$defs":
                out[k] = {_published(n): _rename(d) for n, d in v.items()}
            elif k == "$ref" and isinstance(v, str):
                head, _, name = v.rpartition("/")
                out[k] = f"{head}/{_published(name)}"
            elif k == "title" and isinstance(v, str):
                out[k] = _published(v)
            else:
                out[k] = _rename(v)
        return out
    if isinstance(node, list):
        return [_rename(x) for x in node]
    return node


def schema(kind: str) -> dict[str, Any]:
    if kind == "ruleset":
        renamed: dict[str, Any] = _rename(shape_schema())
        return renamed
    if kind == "state":
        return state_schema()
    raise NotFoundError("schema", kind, ("ruleset", "state"))
