"""Live states (STATE-2..7), live text and conditions."""

from __future__ import annotations

from .inspection import Inspection, count_problem


def inspect_states(ctx: Inspection) -> None:
    live = ctx.rs.sheet.live
    count_problem(ctx, "sheet.live.states", live.states, 0, 12, "live states", "STATE-6")
    for i, st in enumerate(live.states):
        path = f"sheet.live.states[{i}]"
        count_problem(ctx, f"{path}.values", st.values, 2, 40, "values", "STATE-2")
        if len(set(st.values)) != len(st.values):
            ctx.add(f"{path}.values", "duplicate-value", "a state's values must be distinct (STATE-2)", st.values)
        for j, v in enumerate(st.values):
            ctx.safe_text(f"{path}.values[{j}]", v, 100, "STATE-4, STATE-5", label=True)
        for k, label in (st.valueLabels or {}).items():
            if k not in st.values:
                ctx.add(f"{path}.valueLabels.{k}", "unknown-value", f"{k!r} is not one of the state's values (STATE-3)",
                        k)
            ctx.safe_text(f"{path}.valueLabels.{k}", label, 100, "STATE-4, STATE-5", label=True)
        if st.default is not None and st.default not in st.values:
            ctx.add(f"{path}.default", "unknown-value", f"default {st.default!r} is not one of the values (STATE-7)",
                    st.default)
    for i, t in enumerate(live.text):
        if not 1 <= t.maxLength <= 1000:
            ctx.add(f"sheet.live.text[{i}].maxLength", "out-of-range", "live text holds 1 to 1000 characters",
                    t.maxLength)
