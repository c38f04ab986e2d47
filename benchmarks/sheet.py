"""Sheet benchmark (issue: the sheet engine): a generated sheet with 800 derived values.

Prints the time of a full evaluation (target <= 5 ms) and of a second evaluation of the same,
unchanged snapshot (target: cached, <= 50 us).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

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


def main() -> None:
    rs = ruleset()
    state = GameState.new(rs, ["Mira"])
    card = {**state.cards["Mira"], "lists": {"gear": [{"bulk": 2}] * 20}}
    cold = timed(lambda: view_card(rs, card, None), 50)
    print(f"800 derived values: full evaluation median {statistics.median(cold) * 1e3:.2f} ms, "
          f"max {max(cold) * 1e3:.2f} ms (target <= 5 ms)")
    view_character(rs, state, "Mira")
    warm = timed(lambda: view_character(rs, state, "Mira"), 2000)
    print(f"second evaluation of an unchanged snapshot: median {statistics.median(warm) * 1e6:.1f} us "
          f"(target: cached, <= 50 us)")


if __name__ == "__main__":
    main()
