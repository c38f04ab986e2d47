"""`build_prompt`: the stable system prompt, the history and the per-turn reminder, fitted to a budget."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any, cast
from weakref import WeakKeyDictionary

from ..history import read_messages
from ..memo import IdentityCache
from ..records import frozen
from ..ruleset import Ruleset
from ..state import GameState
from .budget import (
    CUT_MARKER,
    GUIDANCE_CUT_ORDER,
    Budget,
    BudgetError,
    Report,
    cut_reference,
    get_counter,
)
from .render import include_text, render
from .template_data import guidance, reminder_context, system_context
from .tokens import SlowFit, TokenCounter

DEFAULT_BUDGET = Budget()
SYSTEM_MAX = 64  # system prompts kept per ruleset: one per budget (context, response, model, tokenizer)


@frozen
class SystemPrompt:
    text: str
    tokens: int  # as a chat message (DEC-33)
    cuts: tuple[dict[str, Any], ...]


@frozen
class Prompt:
    system: str
    reminder: str
    messages: list[dict[str, str]]
    report: Report


_SYSTEM: WeakKeyDictionary[Ruleset, dict[tuple[Any, ...], SystemPrompt]] = WeakKeyDictionary()
# the reminder of a snapshot: a server renders it once per state, however often that state is asked for
_REMINDERS: IdentityCache[str] = IdentityCache(256)
_BLOCK_TEXTS: IdentityCache[str] = IdentityCache(512)  # by the block object (`block_text`)
COMMANDS_HELD = 64  # distinct teachings whose commands text is kept (a server's campaigns and casts)
_COMMANDS: dict[str, str] = {}
_TAUGHT_TEXTS: IdentityCache[str] = IdentityCache(COMMANDS_HELD)  # by the teaching's object


def system_prompt(rs: Ruleset, budget: Budget = DEFAULT_BUDGET, c: TokenCounter | None = None, *,
                  quick: bool = False) -> SystemPrompt:
    """The system prompt for this ruleset and budget, fitted once and cached (DEC-30, DEC-34); SYSTEM_MAX
    budgets per ruleset, the oldest dropped (a server's requests choose the budget: each new `max_tokens`
    is one). `c`: the budget's counter, when the caller has it already. `quick`: SlowFit rather than fit one
    anew."""
    c = c if c is not None else get_counter(budget)
    key = (budget, c.tokenizer)
    per_rs = _SYSTEM.setdefault(rs, {})
    hit = per_rs.get(key)
    if hit is None:
        if quick:
            raise SlowFit("a system prompt to fit")
        hit = _fit_system(rs, budget, c)
        if len(per_rs) >= SYSTEM_MAX:
            with suppress(KeyError, RuntimeError, StopIteration):  # another thread dropped it, or added one
                del per_rs[next(iter(per_rs))]
        per_rs[key] = hit
    return hit


def _fit_system(rs: Ruleset, budget: Budget, c: TokenCounter) -> SystemPrompt:
    allowance = budget.usable() - budget.response_min - budget.reserve_tokens - c.priming
    reference = rs.file.gmReference
    dropped: frozenset[str] = frozenset()
    cuts: list[dict[str, Any]] = []

    def make() -> tuple[str, int]:
        text = render("system.j2", system_context(rs, reference=reference, dropped=dropped))
        return text, c.message("system", text)

    text, tokens = make()
    full = rs.file.gmReference
    if tokens > allowance and full:  # GMREF-8: the reference first, with a marked cut
        ref_tokens = c.text(full)
        keep_tokens = ref_tokens - (tokens - allowance) - c.text(CUT_MARKER.format(kept=len(full), total=len(full))) - 2
        kept = len(full)
        for _ in range(4):
            reference, kept = cut_reference(c, full, keep_tokens)
            text, tokens = make()
            if tokens <= allowance or keep_tokens <= 0:
                break
            keep_tokens -= tokens - allowance + 4
        cuts.append({"part": "gmReference", "action": "cut", "kept_chars": kept, "total_chars": len(full),
                     "tokens_removed": ref_tokens - c.text(reference or "")})
    texts = guidance(rs)
    for part in GUIDANCE_CUT_ORDER:  # DEC-32: then the guidance texts
        if tokens <= allowance:
            break
        before = tokens
        if texts[part] is None:
            continue
        dropped = dropped | {part}
        text, tokens = make()
        cuts.append({"part": part, "action": "removed", "tokens_removed": before - tokens})
    if tokens > allowance:
        raise BudgetError("the system prompt does not fit the context", {
            "context": budget.context, "system": tokens, "response_min": budget.response_min,
            "reserve": budget.reserve_tokens})
    return SystemPrompt(text, tokens, tuple(cuts))


def world_prompt(rs: Ruleset) -> str:
    """The world-generation prompt: the only place `worldGuidance` goes (GM-4, GM-5)."""
    gm = rs.file.gm
    return render("world.j2", {"name": rs.name, "world_guidance": gm.worldGuidance if gm else None})


def reminder(rs: Ruleset, state: GameState) -> str:
    """The per-turn reminder (DEC-31); rendered once per ruleset and state object (both immutable), so a
    regenerated turn or a swipe, which starts from the state object the first try did (`tagengine serve`), costs
    a look-up."""
    return _REMINDERS.get((rs, state), lambda: _reminder_text(rs, state))


def _reminder_text(rs: Ruleset, state: GameState) -> str:
    context = reminder_context(rs, state)
    party = context["party"]
    return render("reminder.j2", {**context, "commands": commands_text(context["teaching"]),
                                  "blocks": [block_text(c) for c in context["characters"]],
                                  "party_text": None if party is None else block_text(party)})


def block_text(block: dict[str, Any]) -> str:
    """A sheet block as `_block.j2` writes it, kept by the block's object: `reminder_context` gives a character
    or the party the same block object while it is unchanged, so only a changed one is rendered (PF-52)."""
    return _BLOCK_TEXTS.get((block,), lambda: include_text("_block.j2", {"c": block}))


def commands_text(teaching: list[dict[str, Any]]) -> str:
    """The reminder's commands (`_commands.j2`), rendered once per distinct teaching: it follows the ruleset and
    the cast, not a turn's numbers, and its render (a template included per kind of tag) was three quarters of
    the reminder's (PF-20). Kept by the teaching's object (`template_data.teaching` gives a turn the one the turn
    before had, PF-55), and by the teaching's `repr`: plain data (str, int, bool, None, lists, tuples, dicts),
    whose repr tells apart whatever the templates would print differently."""
    return _TAUGHT_TEXTS.get((teaching,), lambda: _commands_by_repr(teaching))


def _commands_by_repr(teaching: list[dict[str, Any]]) -> str:
    key = repr(teaching)
    text = _COMMANDS.get(key)
    if text is None:
        text = include_text("_commands.j2", {"teaching": teaching})
        if len(_COMMANDS) >= COMMANDS_HELD:
            _COMMANDS.pop(next(iter(_COMMANDS)), None)  # the oldest
        _COMMANDS[key] = text
    return text


def build_prompt(rs: Ruleset, state: GameState, history: Iterable[Mapping[str, Any]] = (),
                 budget: Budget = DEFAULT_BUDGET, *, checked: bool = False, quick: int | None = None) -> Prompt:
    """Messages for one request: system, history, reminder (DEC-29), fitted by DEC-32. Raises BudgetError
    when even the trimmed prompt does not fit, HistoryError for a message that is not {role, content},
    EncodingError when the tokenizer cannot be built. `checked`: the history is plain messages already
    (lower-case roles, text), as `read_messages` gives them; the server reads each request's once (S-27).
    `quick`: SlowFit, before the work, when the fit would count more than that many characters of the
    history it has not counted before, fit a system prompt anew or use a counter that has counted nothing
    (the server then fits in a worker thread, SEC-2)."""
    chosen = budget.choice()  # once: it looks for the user's tokenizers.toml
    c = get_counter(budget, chosen)
    tokenizer, margin = c.tokenizer, chosen.margin
    system = system_prompt(rs, budget, c, quick=quick is not None)
    note = reminder(rs, state)
    hist = cast(list[dict[str, str]], list(history)) if checked else read_messages(history)
    last_user = next((i for i in range(len(hist) - 1, -1, -1) if hist[i]["role"] == "user"), None)
    if budget.reminder_in_user and last_user is not None:
        hist[last_user] = {"role": "user", "content": hist[last_user]["content"] + "\n\n" + note}
        tail: list[dict[str, str]] = []
    else:
        tail = [{"role": "system", "content": note}]
    report = Report(budget.context, budget.response, encoding=tokenizer.name, margin=margin, exact=chosen.exact,
                    chat=chosen.chat.name, family=chosen.family, choice=chosen)
    report.cuts.extend(system.cuts)
    usable = budget.usable(chosen)
    costs = c.messages(hist, quick)
    tail_tokens = sum(c.message(m["role"], m["content"]) for m in tail)
    fixed = system.tokens + tail_tokens + c.priming
    in_prompt = [True] * len(hist)
    used = fixed + sum(costs)
    dropped = dropped_tokens = 0
    for i in range(len(hist)):  # DEC-32: the oldest history first, never the last user message
        if used + budget.response <= usable:
            break
        if i == last_user:
            continue
        in_prompt[i] = False
        used -= costs[i]
        dropped += 1
        dropped_tokens += costs[i]
    if dropped:
        report.cuts.append({"part": "history", "action": "dropped", "messages": dropped, "tokens_removed":
                            dropped_tokens})
    response = budget.response
    if used + response > usable:  # then the response budget, down to its minimum
        response = max(budget.response_min, usable - used)
        report.cuts.append({"part": "response", "action": "lowered", "from": budget.response, "to": response})
    kept = [m for m, k in zip(hist, in_prompt, strict=True) if k] if dropped else hist
    messages = [{"role": "system", "content": system.text}, *kept, *tail]
    report.response = response
    report.parts = {"system": system.tokens, "history": used - fixed, "reminder": tail_tokens, "priming": c.priming,
                    "response": response}
    report.total = used + response  # every message's count and the priming, from the counts made above
    if report.total > usable:
        raise BudgetError("the prompt does not fit even with history dropped and the response at its minimum",
                          {"context": budget.context, **report.parts})
    return Prompt(system.text, note, messages, report)
