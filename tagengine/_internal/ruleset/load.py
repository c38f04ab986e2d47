"""Reading a ruleset file: JSON, then the pydantic shape, then every import inspection, all problems at once."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import Problem, RulesetError
from ..files import json_problem, strip_bom
from . import capability
from .index import ById, SheetIndex
from .inspect import combat, derived, fields, gm, ids, party, refs, resolution, rests, states, tracks
from .inspect.inspection import Inspection
from .source import MAX_BYTES
from .top import RulesetDef

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# The import inspections, in the order they run (markdown-it's rule chain is the model): each reads the
# validated file through the Inspection and adds problems and warnings to it. Add an inspection here.
INSPECTIONS: tuple[Callable[[Inspection], None], ...] = (
    ids.inspect_ids, refs.inspect_refs, fields.inspect_fields, derived.inspect_derived, tracks.inspect_tracks,
    states.inspect_states, rests.inspect_rests, resolution.inspect_resolution, gm.inspect_gm, party.inspect_party,
    combat.inspect_combat, capability.inspect_capability,
)

_CODES = {
    "extra_forbidden": "unknown-key",
    "unexpected_keyword_argument": "unknown-key",  # an unknown key, as pydantic names it for a dataclass
    "missing": "missing-key",
    "literal_error": "not-allowed",
    "enum": "not-allowed",
    "greater_than_equal": "out-of-range",
    "less_than_equal": "out-of-range",
    "greater_than": "out-of-range",
    "less_than": "out-of-range",
    "too_short": "bad-length",
    "too_long": "bad-length",
    "string_too_short": "bad-length",
    "string_too_long": "bad-length",
}
_CODE_PREFIX = re.compile(r"^(?:Value error, )?([a-z]+(?:-[a-z]+)+): ")


def read_json(text: str | bytes, source: str) -> Any:
    """Parse JSON, turning every failure (syntax, depth, encoding) into a RulesetError."""
    if len(text) > MAX_BYTES:
        raise RulesetError([Problem("$", "too-large", f"the file is {len(text)} bytes; a ruleset is at most "
                                    f"{MAX_BYTES} bytes", len(text))], source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RulesetError([Problem("$", "not-json", f"{e.msg} at line {e.lineno} column {e.colno}",
                                    e.doc[max(0, e.pos - 20):e.pos + 20])], source) from None
    except (RecursionError, UnicodeDecodeError, ValueError) as e:
        raise RulesetError([Problem("$", "not-json", json_problem(e), None)], source) from None


def _real_path(raw: Any, loc: tuple[Any, ...], err_type: str) -> str:
    """A JSON path for a pydantic location, skipping union-branch names that are not keys of the input."""
    return _path_text(_real_parts(raw, loc, err_type))


def _real_parts(raw: Any, loc: tuple[Any, ...], err_type: str) -> list[str | int]:
    out: list[str | int] = []
    node = raw
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        in_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            out.append(part)
            node = node[part]
        elif last and err_type == "missing" and isinstance(part, str):
            out.append(part)
    return out


def _path_text(parts: list[str | int]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path or "$"


def _pruned(raw: Any, errors: list[Any]) -> tuple[Any, list[str]] | None:
    """The file without the keys pydantic refused, so the rule inspections can still run (DEC-24: every
    problem in one run). Only keys are dropped, never list items, so every other path stays true;
    None when a refused part cannot be dropped (a list item, or a required key)."""
    data = copy.deepcopy(raw)
    dropped = []
    for e in errors:
        if e["type"] == "missing":
            return None
        parts = _real_parts(raw, tuple(e["loc"]), e["type"])
        if not parts or not isinstance(parts[-1], str):
            return None
        node: Any = data
        for part in parts[:-1]:
            node = _surviving_child(node, part)
        if isinstance(node, dict):
            node.pop(parts[-1], None)
        dropped.append(_path_text(parts))
    return data, dropped


def _surviving_child(node: Any, part: str | int) -> Any:
    """`node[part]`, or None when it is gone: an earlier error of the same union (a value that is neither a number
    nor a reference, say) may already have dropped an ancestor of this one."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _rule_problems(model: RulesetDef) -> Inspection:
    sheet, party_idx = index_of(model)
    ctx = Inspection(model, sheet, party_idx)
    for inspect_area in INSPECTIONS:
        inspect_area(ctx)
    return ctx


def shape_problems(raw: Any, errors: list[Any]) -> list[Problem]:
    """pydantic errors (`ValidationError.errors()`) as problems; a union's several branch failures at one path
    become one problem."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in errors:
        path = _real_path(raw, tuple(e["loc"]), e["type"])
        msg = str(e["msg"])
        m = _CODE_PREFIX.match(msg)
        code = m.group(1) if m else _CODES.get(e["type"], "wrong-type" if e["type"] != "value_error" else "invalid")
        if m:
            msg = msg[m.end():]
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            msg = f"unknown key {str(e['loc'][-1])!r}"
        grouped.setdefault((path, code), []).append({"msg": msg, "input": e.get("input")})
    problems = []
    for (path, code), errs in grouped.items():
        msgs = list(dict.fromkeys(x["msg"] for x in errs))
        message = msgs[0] if len(msgs) == 1 else "expected one of the accepted forms: " + "; or ".join(msgs[:4])
        value = errs[0]["input"]
        if isinstance(value, dict | list):
            value = json.dumps(value)[:80]
        problems.append(Problem(path, code, message, value))
    return problems


def index_of(model: RulesetDef) -> tuple[SheetIndex, SheetIndex | None]:
    s = model.sheet
    sheet = SheetIndex(
        fields=ById.of(s.fields), derived=ById.of(s.derived), lists=ById.of(s.lists),
        abilities=ById.of(s.abilities), skills=ById.of(s.skills), saves=ById.of(s.saves),
        pools=ById.of(s.live.pools), tracks=ById.of(s.live.tracks), states=ById.of(s.live.states),
    )
    party = None
    if model.party is not None:
        p = model.party
        party = SheetIndex(
            fields=ById.of(p.fields), derived=ById.of([]), lists=ById.of(p.lists), abilities=ById.of([]),
            skills=ById.of([]), saves=ById.of([]), pools=ById.of(p.pools), tracks=ById.of([]),
            states=ById.of([]), party=True,
        )
    return sheet, party


@cache
def _adapter() -> TypeAdapter[RulesetDef]:
    from pydantic import TypeAdapter

    return TypeAdapter(RulesetDef)


def shaped(text: str) -> RulesetDef:
    """The file's definitions, its shape checked by pydantic (strict: no "1" for 1); pydantic's ValidationError
    when it is wrong. Pydantic is imported, and the validator built, on the first call only (PF-27)."""
    return _adapter().validate_json(text)  # strict by the definitions' configuration (base.py)


def shape_schema() -> dict[str, Any]:
    """The JSON Schema of the file's shape, as pydantic writes it (`tagengine schema ruleset`)."""
    return _adapter().json_schema(by_alias=True)


def validate(text: str | bytes, source: str = "<ruleset>") -> tuple[RulesetDef, Inspection]:
    """The validated file and its Inspection (with warnings); RulesetError lists every problem.
    A leading UTF-8 BOM is dropped, as for every file tagengine reads (decision F-6)."""
    text = strip_bom(text) if isinstance(text, bytes) else text.removeprefix("\ufeff")
    raw = read_json(text, source)
    if not isinstance(raw, dict):
        raise RulesetError([Problem("$", "not-object", f"a ruleset is a JSON object, not {type(raw).__name__}",
                                    json.dumps(raw)[:80])], source)
    from pydantic import ValidationError

    try:
        model = shaped(text if isinstance(text, str) else text.decode("utf-8"))
    except ValidationError as e:
        raise RulesetError(_shape_then_rules(raw, e), source) from None
    except (RecursionError, ValueError) as e:
        raise RulesetError([Problem("$", "not-json", f"unreadable ruleset: {type(e).__name__}", None)],
                           source) from None
    ctx = _rule_problems(model)
    if ctx.problems:
        raise RulesetError(ctx.problems, source)
    return model, ctx


def _shape_then_rules(raw: Any, err: Any) -> list[Problem]:
    """The shape problems, then the rule problems of the same file with the refused keys dropped."""
    errors = list(err.errors(include_url=False))  # once: 200 000 errors take pydantic 0.7 s, the GIL held
    problems = shape_problems(raw, errors)
    pruned = _pruned(raw, errors)
    if pruned is None:
        return problems
    data, dropped = pruned
    from pydantic import ValidationError

    try:
        model = shaped(json.dumps(data))
    except (ValidationError, RecursionError, ValueError):
        return problems
    seen = {(p.path, p.code) for p in problems}
    for p in _rule_problems(model).problems:
        if (p.path, p.code) not in seen and not any(p.path == d or p.path.startswith((d + ".", d + "["))
                                                    for d in dropped):
            problems.append(p)
    return problems
