"""Sheet benchmark (issue: the sheet engine): a generated sheet with 800 derived values.

Prints the time of a full evaluation (target <= 5 ms) and of a second evaluation of the same,
unchanged snapshot (target: cached, <= 50 us).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import _against as against

from tagengine import GameState, Ruleset
from tagengine._internal.sheet import view_card, view_character


def ruleset() -> Ruleset:
    return Ruleset.from_dict(ruleset_doc())


def ruleset_doc() -> dict[str, Any]:
    """The 800-derived-value ruleset as its JSON document (benchmarks/editor.py serves it from a file)."""
    derived: list[dict[str, Any]] = [
        {"id": "d0", "label": "D0", "op": "sum", "of": [{"abilityScore": "a0"}, {"field": "level"}]}]
    ops = ["sum", "max", "min", "multiply", "scale", "stepTable"]
    for i in range(1, 800):
        op = ops[i % len(ops)]
        prev = [{"derived": f"d{i - 1}"}, {"derived": f"d{max(0, i - 7)}"}]
        d = {"id": f"d{i}", "label": f"D{i}", "op": op}
        if op in ("sum", "max", "min"):
            d["of"] = [*prev, {"abilityMod": f"a{i % 6}"}, {"listSum": {"list": "gear", "column": "bulk"}}]
        elif op == "multiply":
            d["of"] = [{"derived": f"d{i - 1}"}, {"const": 1}]
        elif op == "scale":
            d.update({"from": {"derived": f"d{i - 1}"}, "by": 1.0})
        else:
            d.update({"from": {"derived": f"d{i - 1}"}, "table": [[0, 1], [10, 2], [100, 3]]})
        derived.append(d)
    return {
        "manifest": {"capabilityApi": {"major": 1, "minor": 729}},
        "sheet": {
            "abilities": [{"id": f"a{i}", "label": f"A{i}", "default": 10} for i in range(6)],
            "fields": [{"id": "level", "label": "Level", "type": "number", "min": 1, "max": 20, "default": 3}],
            "lists": [{"id": "gear", "label": "Gear", "columns": [
                {"id": "bulk", "label": "Bulk", "type": "number", "default": 1}]}],
            "derived": derived,
            "live": {"pools": [{"id": "hp", "label": "HP", "max": {"derived": "d799"}}]},
        },
    }


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def figures() -> dict[str, float]:
    """Medians, in seconds: a full evaluation of the 800-value sheet, and a second one of the same snapshot."""
    rs = ruleset()
    state = GameState.new(rs, ["Mira"])
    card = {**state.cards["Mira"], "lists": {"gear": [{"bulk": 2}] * 20}}
    cold = timed(lambda: view_card(rs, card, None), 50)
    view_character(rs, state, "Mira")
    warm = timed(lambda: view_character(rs, state, "Mira"), 2000)
    return {"full evaluation (target <= 5 ms)": statistics.median(cold),
            "second evaluation, cached (target <= 0.05 ms)": statistics.median(warm)}


def report() -> None:
    for name, value in figures().items():
        print(f"800 derived values, {name}: median {value * 1e3:.3f} ms")


def main() -> None:
    against.main(__file__, __doc__, figures, report)


if __name__ == "__main__":
    main()
