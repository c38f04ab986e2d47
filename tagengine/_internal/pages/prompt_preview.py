"""The prompt preview page: the last prompt sent upstream, message by message, and where its tokens went.

The bar's parts are the report's (`system`, `history`, `reminder`, `priming`, `response`), each a share of
the context; they sum to the report's `total`. Each message is counted again with the same counter
(memoised), so a message's figure matches the part it belongs to.
"""

from __future__ import annotations

from typing import Any

from ..prompt import Budget
from ..prompt.budget import get_counter
from ..prompt.build import Prompt
from ..prompt.show import describe

PARTS = ("system", "history", "reminder", "priming", "response")


def prompt_context(prompt: Prompt, budget: Budget) -> dict[str, Any]:
    rep = prompt.report
    counter = get_counter(budget)
    ctx = max(1, rep.context)
    parts = [{"name": name, "tokens": rep.parts.get(name, 0), "pct": round(100.0 * rep.parts.get(name, 0) / ctx, 3)}
             for name in (*PARTS, *(p for p in rep.parts if p not in PARTS))]
    free = max(0, rep.context - rep.total)
    cut_parts = {str(c.get("part")) for c in rep.cuts}
    dropped = next((c for c in rep.cuts if c.get("part") == "history" and c.get("action") == "dropped"), None)
    system_cuts = [c for c in rep.cuts if c.get("part") not in ("history", "response")]  # cut in the system prompt
    messages: list[dict[str, Any]] = []
    last = len(prompt.messages) - 1
    history = False  # a history message is in `messages` already
    for i, m in enumerate(prompt.messages):
        if i == 0:
            part = "system"
        elif i == last and m["role"] == "system" and m["content"] == prompt.reminder:
            part = "reminder"
        else:
            part = "history"
        note = "; ".join(describe(c) for c in system_cuts) if part == "system" and system_cuts else None
        messages.append({"role": m["role"], "part": part, "content": m["content"],
                         "tokens": counter.message(m["role"], m["content"]), "note": note,
                         "dropped_before": dropped if part == "history" and not history else None})
        history = history or part == "history"
    if dropped is not None and not history:
        messages.insert(1, {"role": None, "part": "history", "content": None, "tokens": 0, "note": None,
                            "dropped_before": dropped})
    return {"report": rep, "parts": parts, "free": free, "free_pct": round(100.0 * free / ctx, 3),
            "cuts": [{"part": c.get("part"), "text": describe(c)} for c in rep.cuts],
            "messages": messages, "response_lowered": "response" in cut_parts}
