"""`tagengine preview RULESET STATE`: the prompt the GM would get, with its token report."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from .conventions import Usage, int_at_least, print_json
from .inputs import load_pair

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from ..prompt.budget import Budget

MAX_HISTORY_BYTES = 64 * 1024 * 1024  # a `preview --history` file


def add_preview(pv: ArgumentParser) -> None:
    pv.add_argument("ruleset")
    pv.add_argument("state")
    pv.add_argument("--history", metavar="FILE", help='JSONL of {"role", "content"} messages, oldest first')
    enc = pv.add_mutually_exclusive_group()
    enc.add_argument("--model", help="model name, which picks the tokenizer and chat format (gpt-4o, o3, "
                     "mistral-large, llama-3.1-70b, claude-sonnet-4, ...; see docs/prompt.md)")
    enc.add_argument("--encoding", choices=["o200k_base", "cl100k_base"])
    pv.add_argument("--tokenizer", metavar="PATH", help="the model's tokenizer.json: exact counts for any model "
                    "(else tokenizers.toml, see docs/prompt.md)")
    pv.add_argument("--context", type=int_at_least(1), default=8192, help="context window in tokens (default 8192)")
    pv.add_argument("--response", type=int_at_least(0), default=1024,
                    help="response budget in tokens (default 1024)")
    pv.add_argument("--response-min", type=int_at_least(0), default=256,
                    help="lowest response budget (default 256)")
    pv.add_argument("--world", action="store_true", help="also show the world-generation prompt")
    pv.add_argument("--json", action="store_true", help='print {"system", "reminder", "messages", "report"}')
    # forks: in a process that runs this one command, the tokenizer is built in a child (P-6, CL-4)
    pv.set_defaults(func=cmd_preview, forks=True, short_lived=True)


def cmd_preview(args: Namespace, out: TextIO, err: TextIO) -> int:
    from dataclasses import replace

    from ..prompt.budget import Budget
    from ..prompt.forked import start as start_tokenizer
    from ..prompt.tokens import EncodingError

    if args.tokenizer and args.encoding:
        raise Usage("tagengine preview: --tokenizer and --encoding name two tokenizers; give one")
    budget = Budget(context=args.context, response=args.response, response_min=min(args.response_min, args.response),
                    model=args.model, encoding=args.encoding, tokenizer_file=args.tokenizer)
    choice = budget.choice()
    forked = start_tokenizer(choice)  # a fresh command: built on the other core while the imports below run
    if forked is not None:
        budget = replace(budget, tokenizer=forked)  # it carries the choice: margin, exactness, chat format
    try:
        return _preview(args, budget, out, err)
    except EncodingError as e:
        err.write(f"tagengine preview: {e}\n")
        return 1
    finally:
        if forked is not None:
            forked.close()


def _preview(args: Namespace, budget: Budget, out: TextIO, err: TextIO) -> int:
    from ..prompt import BudgetError, build_prompt, world_prompt

    rs, state = load_pair(args.ruleset, args.state, err)
    history = read_history(args.history) if args.history else []
    try:
        prompt = build_prompt(rs, state, history, budget)
    except BudgetError as e:
        err.write(f"tagengine preview: {e}\n")
        return 1
    if args.json:
        doc = {"system": prompt.system, "reminder": prompt.reminder, "messages": prompt.messages,
               "report": prompt.report.to_json()}
        if args.world:
            doc["world"] = world_prompt(rs)
        print_json(doc, out)
        return 0
    from ..prompt.show import render_report

    out.write(render_report(rs, prompt, world_prompt(rs) if args.world else None, color=out.isatty()))
    return 0


def read_history(path: str) -> list[dict[str, Any]]:
    """A JSONL file of {"role", "content"} lines; every bad line is named, none is skipped silently.
    Roles are matched without case and given lower case (F-10)."""
    from ..errors import Problem, ProblemsError
    from ..files import TooLarge, json_problem, read_file
    from ..history import message_problem
    from ..text import escaped_surrogate, writable

    try:
        data = read_file(path, MAX_HISTORY_BYTES)
    except TooLarge as e:
        raise ProblemsError([Problem("$", "too-large", f"a history file is at most {e.limit} bytes", None)],
                            path) from None
    out, problems = [], []
    # split on line feeds only: JSON text may hold U+2028, U+0085 and form feeds inside its strings
    for n, line in enumerate(data.decode("utf-8", "surrogateescape").split("\n"), 1):
        if not line.strip():
            continue
        try:
            m = json.loads(line)
        except (RecursionError, ValueError) as e:
            problems.append(Problem(f"line {n}", "not-json", json_problem(e), line[:60]))
            continue
        why = message_problem(m)
        if why is not None:
            problems.append(Problem(f"line {n}", "bad-message", f'expected {{"role": user|assistant|system, '
                                    f'"content": text}}: {why}', line[:60]))
            continue
        lone = escaped_surrogate(m["content"], bytes_kept=not writable(line))
        if lone is not None:  # the prompt could not be printed (TR-9)
            problems.append(Problem(f"line {n}", "bad-text", f'its "content" holds a lone surrogate '
                                    f"({ascii(lone)[1:-1]}), which is no character", line[:60]))
            continue
        out.append({"role": m["role"].lower(), "content": m["content"]})
    if problems:
        raise ProblemsError(problems, path)
    return out
