"""`tagengine` command line: `run(argv) -> int`, so tests call it directly (exit 0 ok, 1 bad input, 2 usage)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .errors import NotFoundError, ProblemsError, RulesetError

if TYPE_CHECKING:
    from .prompt.budget import Budget
    from .ruleset import Ruleset
    from .state import GameState

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


class Usage(Exception):
    """A usage error: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise Usage(f"{self.prog}: {message}")


def _emit(obj: Any, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .ruleset import Ruleset

    try:
        rs = Ruleset.load(args.ruleset)
    except RulesetError as e:
        if args.json:
            _emit({"file": args.ruleset, "valid": False, "problems": [p.to_json() for p in e.problems],
                   "warnings": []}, out)
        else:
            for p in e.problems:
                out.write(f"{p}\n")
            err.write(f"{args.ruleset}: {len(e.problems)} problem(s)\n")
        return 1
    if args.json:
        _emit({"file": args.ruleset, "valid": True, "requires": rs.requires_text, "problems": [],
               "warnings": [w.to_json() for w in rs.warnings]}, out)
    else:
        for w in rs.warnings:
            out.write(f"{w} (warning)\n")
        need = f"needs Capability API {rs.requires_text}" if rs.requires else "needs no Capability API version"
        out.write(f"{args.ruleset}: ok: {rs.name}; {need}\n")
    return 0


def cmd_state_new(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .ruleset import Ruleset
    from .state import GameState

    rs = Ruleset.load(args.ruleset)
    state = GameState.new(rs, args.names)
    if args.output:
        state.save(args.output)
    else:
        out.write(state.dumps())
    return 0


def read_reply(spec: str, stdin: TextIO | None = None) -> str:
    """A reply from a file or `-` (stdin); bytes that are not UTF-8 pass through untouched."""
    if spec == "-":
        stream = stdin or sys.stdin
        buf = getattr(stream, "buffer", None)
        return buf.read().decode("utf-8", "surrogateescape") if buf is not None else stream.read()
    return Path(spec).read_bytes().decode("utf-8", "surrogateescape")


def load_pair(args: argparse.Namespace, err: TextIO) -> tuple[Ruleset, GameState]:
    from .ruleset import Ruleset
    from .state import GameState

    rs = Ruleset.load(args.ruleset)
    state = GameState.load(rs, args.state)
    for w in state.warnings:
        err.write(f"{args.state}: {w} (warning)\n")
    return rs, state


def cmd_apply(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .commands import apply_reply

    rs, state = load_pair(args, err)
    applied = apply_reply(rs, state, read_reply(args.reply))
    if args.state_out:
        applied.state.save(args.state_out)
    if args.json:
        _emit({"text": applied.text, "state": applied.state.to_json(),
               "receipts": [r.to_json() for r in applied.receipts]}, out)
    else:
        out.write(applied.text)
    return 0


def cmd_narrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .tags import narration

    out.write(narration(read_reply(args.reply)))
    return 0


def cmd_sheet(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .sheet import character, party
    from .sheet.show import render, render_party, to_json

    rs, state = load_pair(args, err)
    if args.party:
        sheet = party(rs, state)
        if sheet is None:
            err.write(f"{args.ruleset}: the ruleset has no party sheet\n")
            return 1
        text = render_party(rs, sheet)
    else:
        if args.name is None:
            raise Usage("tagengine sheet: give a character NAME or --party")
        try:
            sheet = character(rs, state, args.name)
        except NotFoundError:
            err.write(f"{args.state}: no character named {args.name!r}; the state has "
                      f"{', '.join(state.characters)}\n")
            return 1
        text = render(rs, sheet)
    if args.json:
        _emit(to_json(sheet), out)
    else:
        out.write(text)
    return 0


def read_history(path: str) -> list[dict[str, Any]]:
    """A JSONL file of {"role", "content"} lines; every bad line is named, none is skipped silently."""
    from .errors import Problem, ProblemsError

    out, problems = [], []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8", errors="surrogateescape").splitlines(), 1):
        if not line.strip():
            continue
        try:
            m = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            problems.append(Problem(f"line {n}", "not-json", str(e), line[:60]))
            continue
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant") or not isinstance(
                m.get("content"), str):
            problems.append(Problem(f"line {n}", "bad-message", 'expected {"role": user|assistant|system, '
                                    '"content": text}', line[:60]))
            continue
        out.append({"role": m["role"], "content": m["content"]})
    if problems:
        raise ProblemsError(problems, path)
    return out


def cmd_preview(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .prompt.budget import Budget
    from .prompt.forked import start as start_tokenizer
    from .prompt.tokens import EncodingError

    budget = Budget(context=args.context, response=args.response, response_min=min(args.response_min, args.response),
                    model=args.model, encoding=args.encoding)
    choice = budget.choice()
    forked = start_tokenizer(choice)  # a fresh command: built on the other core while the imports below run
    if forked is not None:
        budget = replace(budget, tokenizer=forked, margin=choice.margin)
    try:
        return _preview(args, budget, out, err)
    except EncodingError as e:
        err.write(f"tagengine preview: {e}\n")
        return 1
    finally:
        if forked is not None:
            forked.close()


def _preview(args: argparse.Namespace, budget: Budget, out: TextIO, err: TextIO) -> int:
    from .prompt import BudgetError, build_prompt, world_prompt

    rs, state = load_pair(args, err)
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
        _emit(doc, out)
        return 0
    from .prompt.show import render_report

    out.write(render_report(rs, prompt, world_prompt(rs) if args.world else None, color=out.isatty()))
    return 0


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .batch import replay
    from .ruleset import Ruleset

    if args.states_dir and not args.output:
        raise Usage("tagengine replay: --states-dir needs -o OUT")
    Ruleset.load(args.ruleset)  # fail early, once, with every problem named
    source = sys.stdin if args.transcripts == "-" else open(args.transcripts, encoding="utf-8")  # noqa: SIM115
    sink = open(args.output, "w", encoding="utf-8") if args.output else out  # noqa: SIM115
    try:
        summary = replay(args.ruleset, source, sink, workers=max(1, args.workers),
                         progress=err if err.isatty() else None)
    finally:
        if source is not sys.stdin:
            source.close()
        if sink is not out:
            sink.close()
    err.write(f"{summary}\n")
    if args.states_dir:
        written = write_states(args.output, args.states_dir)
        err.write(f"wrote {written} final state(s) to {args.states_dir}/<id>.json\n")
    return 0


def write_states(replayed: str, folder: str) -> int:
    """Each chat's final state as a state file, ready for `tagengine preview` or `apply`."""
    import re

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(replayed, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if "state" in doc and doc.get("id") is not None:
                name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(doc["id"]))[:100] or "chat"
                (target / f"{name}.json").write_text(json.dumps(doc["state"], ensure_ascii=False, indent=2) + "\n",
                                                     encoding="utf-8")
                n += 1
    return n


def cmd_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .schema import schema

    _emit(schema(args.kind), out)
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .demo import demo

    return demo(out, SAMPLES)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tagengine", description="Apply Game Master tags to game state; build GM prompts.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    c = sub.add_parser("check", help="validate a ruleset file; every problem as `path: code: message`")
    c.add_argument("ruleset")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=cmd_check)

    st = sub.add_parser("state", help="state files")
    st_sub = st.add_subparsers(dest="state_command", required=True, parser_class=_Parser)
    new = st_sub.add_parser("new", help="a new state: characters at their start values")
    new.add_argument("ruleset")
    new.add_argument("names", nargs="+", metavar="NAME")
    new.add_argument("-o", "--output", help="write the state here instead of stdout")
    new.set_defaults(func=cmd_state_new)

    a = sub.add_parser("apply", help="apply the tags of a reply; print the rewritten reply")
    a.add_argument("ruleset")
    a.add_argument("state")
    a.add_argument("reply", nargs="?", default="-", help="a reply file, or - for stdin (the default)")
    a.add_argument("--state-out", metavar="FILE", help="write the new state here")
    a.add_argument("--json", action="store_true", help='print {"text", "state", "receipts"}')
    a.set_defaults(func=cmd_apply)

    n = sub.add_parser("narrate", help="print a reply with every tag hidden")
    n.add_argument("reply", nargs="?", default="-", help="a reply file, or - for stdin (the default)")
    n.set_defaults(func=cmd_narrate)

    sh = sub.add_parser("sheet", help="print a character's evaluated sheet")
    sh.add_argument("ruleset")
    sh.add_argument("state")
    sh.add_argument("name", nargs="?", help="the character (matched case-insensitively)")
    sh.add_argument("--party", action="store_true", help="the party sheet instead of a character")
    sh.add_argument("--json", action="store_true", help="print the evaluated sheet as JSON")
    sh.set_defaults(func=cmd_sheet)

    pv = sub.add_parser("preview", help="the prompt the GM would get, with a token report")
    pv.add_argument("ruleset")
    pv.add_argument("state")
    pv.add_argument("--history", metavar="FILE", help='JSONL of {"role", "content"} messages, oldest first')
    enc = pv.add_mutually_exclusive_group()
    enc.add_argument("--model", help="model name, which picks the encoding (gpt-4o, gpt-4, o3, ...)")
    enc.add_argument("--encoding", choices=["o200k_base", "cl100k_base"])
    pv.add_argument("--context", type=int, default=8192, help="context window in tokens (default 8192)")
    pv.add_argument("--response", type=int, default=1024, help="response budget in tokens (default 1024)")
    pv.add_argument("--response-min", type=int, default=256, help="lowest response budget (default 256)")
    pv.add_argument("--world", action="store_true", help="also show the world-generation prompt")
    pv.add_argument("--json", action="store_true", help='print {"system", "reminder", "messages", "report"}')
    pv.set_defaults(func=cmd_preview)

    rp = sub.add_parser("replay", help="reprocess transcripts (JSONL, one chat per line)")
    rp.add_argument("ruleset")
    rp.add_argument("transcripts", help="a JSONL file, or - for stdin")
    rp.add_argument("-o", "--output", help="write the JSONL here instead of stdout")
    rp.add_argument("--workers", type=int, default=1, help="parallel processes (default 1)")
    rp.add_argument("--states-dir", metavar="DIR", help="also write each chat's final state to DIR/<id>.json")
    rp.set_defaults(func=cmd_replay)

    sc = sub.add_parser("schema", help="JSON Schema of the file formats")
    sc.add_argument("kind", choices=["ruleset", "state"])
    sc.set_defaults(func=cmd_schema)

    d = sub.add_parser("demo", help="the bundled walkthrough")
    d.set_defaults(func=cmd_demo)
    return p


def run(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command; returns its exit code (0 ok, 1 bad input, 2 usage)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parser().parse_args(list(argv) if argv is not None else None)
    except Usage as e:
        err.write(f"{e}\n")
        return 2
    except SystemExit as e:  # --help and --version
        return int(e.code or 0)
    if args.version:
        from .version import version

        out.write(f"tagengine {version()}\n")
        return 0
    if args.command is None:
        err.write("tagengine: a command is required (see tagengine --help)\n")
        return 2
    func: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.func
    try:
        return func(args, out, err)
    except Usage as e:
        err.write(f"{e}\n")
        return 2
    except ProblemsError as e:
        for p in e.problems:
            err.write(f"{e.source or 'input'}: {p}\n")
        return 1
    except BrokenPipeError:  # the reader stopped early (`tagengine preview ... | head`): nothing to say
        return 1
    except OSError as e:
        err.write(f"tagengine: {e.filename or ''}: {e.strerror}\n")
        return 1


def main() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="surrogateescape")
    from .prompt import forked

    forked.allow()  # this process runs one command and exits: `preview` may build its tokenizer in a child
    code = run()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader stopped early
        code = code or 1
    # Skip the interpreter's teardown (decision P-7): freeing every object takes 0.1 s, and 0.1-0.2 s
    # more where an encoding was built in this process. Every file is closed and every worker joined
    # by now, and nothing registers atexit work.
    os._exit(code)
