"""Derived values compiled once per ruleset into small closures, so evaluating 800 of them stays cheap."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ..ruleset import Ruleset
from ..ruleset.refs import ValueRefDef
from ..ruleset.sheet import DerivedDef
from . import ops

if TYPE_CHECKING:
    from .evaluator import Eval

Compiled = Callable[["Eval"], int]
_PROGRAMS: WeakKeyDictionary[Ruleset, list[Compiled]] = WeakKeyDictionary()


def compile_ref(ref: ValueRefDef) -> Compiled:
    """A function reading `ref` from an evaluation (REF-1)."""
    key, target = ref.key, ref.target
    if key == "const":
        return lambda ev: target
    if key == "derived":
        def derived(ev: Eval) -> int:
            value = ev.computed.get(target)
            return value if value is not None else ev.derived(target)
        return derived
    if key == "abilityScore":
        return lambda ev: ev.ability_score(target)
    if key == "abilityMod":
        return lambda ev: ev.ability_mod(target)
    if key == "listSum":
        lst, col, only = target.list, target.column, target.onlyWhen
        return lambda ev: ev.list_sum(lst, col, only)
    return lambda ev: ev.read(ref)


def compute(d: DerivedDef) -> Compiled:
    """The whole derived value as one function (SHEET-23..27, ENUM-1..5)."""
    if d.op in ("sum", "min", "max", "multiply"):
        fns = [compile_ref(r) for r in d.of or []]
        combiners: dict[str, Callable[[list[int]], int]] = {"sum": sum, "min": min, "max": max, "multiply": math.prod}
        combine = combiners[d.op]
        if not fns:
            return lambda ev: 0
        return lambda ev: combine([f(ev) for f in fns])
    if d.from_ is None:
        return lambda ev: 0
    src = compile_ref(d.from_)
    if d.op == "scale":
        factor, how = d.by or 0, d.round
        return lambda ev: ops.rounded(src(ev) * factor, how)
    if d.op == "stepTable":
        table = d.table if isinstance(d.table, list) else []
        default = d.default or 0
        return lambda ev: ops.step(table, src(ev), default)
    return lambda ev: ev.enum_table(d)


def program(rs: Ruleset) -> list[Compiled]:
    """One compiled function per derived value, in declaration order; built once per ruleset."""
    prog = _PROGRAMS.get(rs)
    if prog is None:
        prog = _PROGRAMS[rs] = [compute(d) for d in rs.file.sheet.derived]
    return prog
