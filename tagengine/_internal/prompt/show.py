"""`tagengine preview` for people: each part with its tokens, then what was trimmed or cut, then the text."""

from __future__ import annotations

from ..ruleset import Ruleset
from .build import Prompt

BOLD, DIM, YELLOW, RESET = "\033[1m", "\033[2m", "\033[33m", "\033[0m"


def describe(cut: dict[str, object]) -> str:
    part, action = cut["part"], cut["action"]
    if action == "dropped":
        return f"{part}: dropped the {cut['messages']} oldest message(s), {cut['tokens_removed']} tokens"
    if action == "lowered":
        return f"{part}: lowered from {cut['from']} to {cut['to']} tokens"
    if action == "cut":
        return (f"{part}: cut to {cut['kept_chars']:,} of {cut['total_chars']:,} characters, "
                f"{cut['tokens_removed']} tokens removed")
    return f"{part}: removed, {cut.get('tokens_removed')} tokens"


def render_report(rs: Ruleset, prompt: Prompt, world: str | None = None, *, color: bool = False) -> str:
    b, d, y, r = (BOLD, DIM, YELLOW, RESET) if color else ("", "", "", "")
    rep = prompt.report
    how = "exact" if rep.exact else f"estimated, {rep.margin:.0%} of the context kept free"
    margin = f", margin {rep.margin:.0%}" if rep.margin and rep.exact else ""
    lines = [f"{b}{rs.name}{r} — {rep.encoding} ({how}; {rep.chat} chat format), context {rep.context}{margin}"]
    lines.append(f"{d}{'part':<10}{'tokens':>8}{r}")
    for part, n in rep.parts.items():
        lines.append(f"{part:<10}{n:>8}")
    lines.append(f"{b}{'total':<10}{rep.total:>8}{r} of {rep.context}")
    if rep.cuts:
        lines.append(f"{y}trimmed and cut:{r}")
        lines += [f"{y}  - {describe(c)}{r}" for c in rep.cuts]
    else:
        lines.append("nothing trimmed or cut")
    lines += ["", f"{b}--- system prompt ---{r}", prompt.system.rstrip(), "", f"{b}--- reminder ---{r}",
              prompt.reminder.rstrip()]
    if world is not None:
        lines += ["", f"{b}--- world prompt ---{r}", world.rstrip()]
    return "\n".join(lines) + "\n"
