"""The ruleset checker page (`/ui/check`, as `tagengine check`): the inspection of a pasted or uploaded file,
every problem grouped by section, and the Capability API version the file (and each feature at a problem's
path) needs. Nothing is stored.

The page shows at most PROBLEMS_SHOWN problems (and as many warnings and features), each value cut to
VALUE_SHOWN characters, and says how many more there are: a file of 200 000 unknown keys, within the size
bound, made a page of 90 MB (SEC-13). `tagengine check` lists them all."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import Problem, RulesetError
from ..ruleset import Ruleset
from ..ruleset.capability import Use, fmt, uses
from ..ruleset.inspect.inspection import Inspection
from ..ruleset.load import index_of, shaped
from ..ruleset.source import MAX_BYTES

_FIRST = re.compile(r"[^.\[]+")
PROBLEMS_SHOWN = 500  # problems (and warnings, and features) the page lists: the rest are counted
VALUE_SHOWN = 200  # characters of a problem's value the page shows, then "…"


def section_of(path: str) -> str:
    """The part of the file a path is in: its top key, or `sheet.<key>` inside the big `sheet` object."""
    if path in ("", "$"):
        return "the whole file"
    parts: list[str] = _FIRST.findall(path)
    if parts[0] == "sheet" and len(parts) > 1:
        return ".".join(parts[:3]) if parts[1] == "live" and len(parts) > 2 else ".".join(parts[:2])
    return parts[0]


def capability_uses(data: bytes) -> list[Use] | None:
    """The features that need a Capability API version, when the file's shape can be read at all."""
    try:
        model = shaped(data.decode("utf-8").removeprefix("\ufeff"))
        sheet, party = index_of(model)
        return sorted_uses(Inspection(model, sheet, party))
    except (ValueError, RecursionError, LookupError, TypeError, AttributeError):  # pydantic's ValidationError too
        return None  # a file whose shape is wrong: the problems say why


def sorted_uses(ctx: Inspection) -> list[Use]:
    return sorted(uses(ctx), key=lambda u: (u.version, u.path))


def problem_row(p: Problem, found: list[Use]) -> dict[str, Any]:
    here = [u for u in found if u.path == p.path or u.path.startswith((p.path + ".", p.path + "["))]
    value = p.value if p.value is None or isinstance(p.value, str) else shown_json(p.value)
    if value is not None and len(value) > VALUE_SHOWN:
        value = value[:VALUE_SHOWN] + "…"
    return {"path": p.path, "code": p.code, "message": p.message, "value": value,
            "needs": fmt(max(u.version for u in here)) if here else None}


def shown_json(value: Any) -> str:
    """A value as JSON, for the page: a big list or object is only begun (its whole text never made)."""
    if isinstance(value, list | dict) and len(value) > VALUE_SHOWN:
        value = value[:VALUE_SHOWN] if isinstance(value, list) else dict(list(value.items())[:VALUE_SHOWN])
        return json.dumps(value, ensure_ascii=False, default=str)[:VALUE_SHOWN] + "…"
    return json.dumps(value, ensure_ascii=False, default=str)


def inspection_context(data: bytes | None, source: str) -> dict[str, Any]:
    """Plain values for `check.html.j2` (the page of `/ui/check`); `data` None: the empty form."""
    if data is None:
        return {"inspected": False, "source": None}
    problems: list[Problem]
    warnings: list[Problem] = []
    name = None
    if len(data) > MAX_BYTES:
        problems = [Problem("$", "too-large", f"the file is {len(data)} bytes; a ruleset is at most {MAX_BYTES}")]
        found: list[Use] | None = None
    else:
        try:
            rs = Ruleset.from_json(data, source)
            problems, warnings, name = [], list(rs.warnings), rs.name
            found = sorted_uses(Inspection(rs.file, rs.sheet, rs.party))  # the model validated: not again
        except RulesetError as e:
            problems = list(e.problems)
            found = capability_uses(data)
    if name is None:
        try:
            raw = json.loads(data)
            got = raw.get("manifest", {}).get("name") if isinstance(raw, dict) else None
            name = got if isinstance(got, str) else None
        except (ValueError, RecursionError, AttributeError):
            name = None
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in problems[:PROBLEMS_SHOWN]:
        groups.setdefault(section_of(p.path), []).append(problem_row(p, found or []))
    needs = fmt(max(u.version for u in found)) if found else None
    return {"inspected": True, "source": source, "name": name, "valid": not problems, "count": len(problems),
            "groups": sorted(groups.items(), key=lambda kv: kv[0]),
            "more": max(0, len(problems) - PROBLEMS_SHOWN),
            "warnings": [problem_row(w, found or []) for w in warnings[:PROBLEMS_SHOWN]],
            "more_warnings": max(0, len(warnings) - PROBLEMS_SHOWN),
            "needs": needs, "shape_known": found is not None, "uses_count": len(found or ()),
            "uses": [{"version": fmt(u.version), "feature": u.feature, "path": u.path, "rule": u.rule}
                     for u in (found or [])[:PROBLEMS_SHOWN]]}
