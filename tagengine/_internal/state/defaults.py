"""What a blank sheet starts with (HIDE-5, DEC-26) and which character names a state may hold (PARTY-24)."""

from __future__ import annotations

from typing import Any

from ..errors import Problem
from ..ruleset import Ruleset
from ..ruleset.sheet import ColumnDef, FieldDef
from ..text import normalise, prompt_unsafe, writable
from .values import PARTY, SEED_MAX


def default_value(f: FieldDef | ColumnDef) -> Any:
    """What a blank field or cell starts with (HIDE-5)."""
    if f.default is not None:
        return f.default
    return {"number": f.min if f.min is not None and f.min > 0 else 0, "boolean": False,
            "enum": (f.values or [""])[0]}.get(f.type, "")


def default_card(rs: Ruleset) -> dict[str, Any]:
    s = rs.file.sheet
    first = s.training[0].id if s.training else None
    card: dict[str, Any] = {
        "abilities": {a.id: a.default if a.default is not None else a.min for a in s.abilities},
        "fields": {f.id: default_value(f) for f in s.fields},
        "lists": {lst.id: [] for lst in s.lists},
    }
    if first is not None:
        card["skills"] = {sk.id: first for sk in s.skills}
        card["saves"] = {sv.id: first for sv in s.saves}
    return card


def default_party(rs: Ruleset) -> dict[str, Any]:
    p = rs.file.party
    if p is None:
        return {}
    return {"fields": {f.id: default_value(f) for f in p.fields}, "lists": {lst.id: [] for lst in p.lists}}


def name_problems(names: list[Any], path: str) -> list[Problem]:
    """Character names: prompt-safe, distinct once normalised, never `$party` (PARTY-24)."""
    problems = []
    seen: dict[str, str] = {}
    for i, n in enumerate(names):
        key = normalise(n) if isinstance(n, str) else ""
        if not isinstance(n, str) or not key:
            problems.append(Problem(f"{path}[{i}]", "bad-name", "a character name is non-empty text", n))
        elif not writable(n):
            problems.append(Problem(f"{path}[{i}]", "bad-text", "a character name is valid UTF-8 text (H-3)", n))
        elif key.startswith("$"):
            problems.append(Problem(f"{path}[{i}]", "reserved-name", f"{n!r} collides with the reserved "
                                    f"{PARTY} entry (PARTY-24)", n))
        elif (why := prompt_unsafe(n, label=True)) is not None:
            problems.append(Problem(f"{path}[{i}]", "bad-name", f"a character name {why} (DEC-25)", n))
        elif key in seen:
            problems.append(Problem(f"{path}[{i}]", "duplicate-character", f"{n!r} is the same name as "
                                    f"{seen[key]!r} (DEC-8)", n))
        else:
            seen[key] = n
    return problems


def seed_problem(seed: object) -> str | None:
    """Why a dice seed cannot be kept, or None: one line of 1..SEED_MAX characters, valid UTF-8 text."""
    if not isinstance(seed, str):
        return f"a seed is text, not {type(seed).__name__}"
    if not 1 <= len(seed) <= SEED_MAX:
        return f"a seed has 1 to {SEED_MAX} characters"
    if not writable(seed) or any(c in seed for c in "\r\n") or not seed.isprintable():
        return "a seed is one line of printable text"
    return None
