"""`tagengine` command line: `run(argv) -> int`, so tests call it directly.

Exit 0 ok; 1 bad input, a bad replay line, a file or stream that cannot be read or written; 2 usage
(decisions P-7, F-1..F-14). Every file written goes through `files.atomic_writer`.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from .errors import NotFoundError, Problem, ProblemsError, RulesetError
from .files import NamedStream, TooLarge, json_problem, read_file, read_limited, same_file, standard_input

if TYPE_CHECKING:
    from .prompt.budget import Budget
    from .ruleset import Ruleset
    from .state import GameState

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MAX_REPLY_BYTES = 4 * 1024 * 1024  # one model reply (F-5): far above any context window's worth of text
MAX_HISTORY_BYTES = 64 * 1024 * 1024  # a `preview --history` file
MAX_WORKERS = 64  # `replay --workers` (F-8)


class Usage(Exception):
    """A usage error: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Usage(f"{self.prog}: {message}")


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= `low` (a negative token budget is a usage error, F-7)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text} is below {low}")
        return value

    return parse


def _workers(text: str) -> int:
    value = _int_at_least(1)(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{text} is above {MAX_WORKERS}, the most tagengine starts")
    return value


def _not_an_input(output: str, inputs: dict[str, str | None], command: str) -> None:
    """Refuse writing onto a file the command reads (F-3): the input would be gone before it is read."""
    for what, path in inputs.items():
        if path and path != "-" and same_file(output, path):
            raise Usage(f"tagengine {command}: the output {output} is the {what} file; write it elsewhere")


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
    state = GameState.new(rs, args.names, seed=args.seed)
    if args.output:
        _not_an_input(args.output, {"ruleset": args.ruleset}, "state new")
        state.save(args.output)
    else:
        out.write(state.dumps())
    return 0


def _stdin(stdin: TextIO | None) -> TextIO:
    return stdin or standard_input()  # OSError naming <stdin> when started with `<&-` (F-12)


def read_reply(spec: str, stdin: TextIO | None = None) -> str:
    """A reply from a file or `-` (stdin), at most MAX_REPLY_BYTES, BOM dropped (F-5, F-6); bytes that
    are not UTF-8 pass through untouched."""
    if spec == "-":
        stream = _stdin(stdin)
        buf = getattr(stream, "buffer", None)
        if buf is None:
            text = stream.read(MAX_REPLY_BYTES + 1)
            if len(text) > MAX_REPLY_BYTES:
                raise TooLarge("<stdin>", MAX_REPLY_BYTES)
            return text.removeprefix("\ufeff")
        data = read_limited(buf, MAX_REPLY_BYTES, "<stdin>")
    else:
        data = read_file(spec, MAX_REPLY_BYTES)
    return data.decode("utf-8", "surrogateescape")


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

    if args.state_out:  # onto the input state is fine: the write is atomic (F-3)
        _not_an_input(args.state_out, {"ruleset": args.ruleset, "reply": args.reply}, "apply")
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
    from .sheet.show import render_party, render_sheet, to_json

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
        text = render_sheet(rs, sheet)
    if args.html:  # issue 14: the game sheet page, self-contained
        from .pages import sheet_html

        text = sheet_html(rs, state, [] if args.party else [sheet.name])
    if args.json:
        _emit(to_json(sheet), out)
    else:
        out.write(text)
    return 0


def read_history(path: str) -> list[dict[str, Any]]:
    """A JSONL file of {"role", "content"} lines; every bad line is named, none is skipped silently.
    Roles are matched without case and given lower case (F-10)."""
    try:
        data = read_file(path, MAX_HISTORY_BYTES)
    except TooLarge as e:
        raise ProblemsError([Problem("$", "too-large", f"a history file is at most {e.limit} bytes", None)],
                            path) from None
    from .history import message_problem

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
        out.append({"role": m["role"].lower(), "content": m["content"]})
    if problems:
        raise ProblemsError(problems, path)
    return out


def cmd_preview(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .prompt.budget import Budget
    from .prompt.forked import start as start_tokenizer
    from .prompt.tokens import EncodingError

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
    """Exit 1 when any line was bad (F-4): the output holds `{"id", "error"}` for it, the rest went on."""
    from .batch import replay
    from .files import atomic_writer
    from .progress import progress_bar
    from .ruleset import Ruleset

    if args.dask:
        return _replay_dask(args, err)
    if args.states_dir and not args.output:
        raise Usage("tagengine replay: --states-dir needs -o OUT")
    if args.output:
        _not_an_input(args.output, {"transcripts": args.transcripts, "ruleset": args.ruleset}, "replay")
    Ruleset.load(args.ruleset)  # fail early, once, with every problem named
    from .sillytavern.chat_commands import StUsage, st_replay

    try:  # SillyTavern chat files (--format st, or told from the first line): replayed by their own reader
        run_replay = st_replay(args) or replay
    except StUsage as e:
        raise Usage(f"tagengine replay: {e}") from None
    source: Any = _stdin(None) if args.transcripts == "-" else open(args.transcripts, "rb")  # noqa: SIM115
    bar = progress_bar(err)  # tqdm, imported only for a terminal (DK-6)
    progress = err if err.isatty() and bar is None else None
    tick = bar.tick if bar is not None else None
    try:
        if args.output:  # the old output stays until the new one is complete (F-1)
            with atomic_writer(args.output) as sink:
                summary = run_replay(args.ruleset, source, sink, workers=args.workers, progress=progress, tick=tick)
        else:
            summary = run_replay(args.ruleset, source, out, workers=args.workers, progress=progress, tick=tick)
    finally:
        if bar is not None:
            bar.close()
        if args.transcripts != "-":
            source.close()
    err.write(f"{summary}\n")
    if args.states_dir:
        from .states_dir import lines_of, write_states

        with open(args.output, "rb") as f:
            write_states(lines_of(args.output, f), args.states_dir, err)
    return 1 if summary.errors else 0


def _replay_dask(args: argparse.Namespace, err: TextIO) -> int:
    """`replay --dask`: any number of inputs (files, globs, fsspec URLs) into an output directory, on a Dask
    cluster (`batch_dask.py`, imported only here). Exit 1 when a line or an input was bad."""
    if not args.output:
        raise Usage("tagengine replay --dask: -o OUTDIR is needed (one file per partition, and summary.json)")
    if args.workers != 1:
        raise Usage("tagengine replay --dask: --workers is for the local replay (the cluster's workers do it)")
    if "-" in [args.transcripts, *args.more]:
        raise Usage("tagengine replay --dask: the transcripts are files or URLs, not stdin")
    try:
        from .batch_dask import replay_command
    except ImportError as e:
        raise Usage(f"tagengine replay --dask needs the dask extra (pip install 'tagengine[dask]'): {e}") from None
    from .sillytavern.chat_commands import StUsage, st_dask

    try:
        per_file = st_dask(args)  # SillyTavern chat files: one task each (DK-10)
        return replay_command(args.ruleset, [args.transcripts, *args.more], args.output, args.dask,
                              args.partition_size, err, per_file=per_file, states_dir=args.states_dir)
    except StUsage as e:
        raise Usage(f"tagengine replay --dask: {e}") from None
    except ValueError as e:  # the output directory or the --dask address
        raise Usage(f"tagengine replay --dask: {e}") from None


def cmd_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .schema import schema

    _emit(schema(args.kind), out)
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .demo import demo

    return demo(out, SAMPLES)


def _store(args: argparse.Namespace) -> Any:
    from .server.store import Store, default_data_dir

    return Store(args.data or default_data_dir())


def cmd_campaign_new(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .server.campaigns import new_campaign

    store = _store(args)
    try:
        row = new_campaign(store, args.name, args.ruleset, args.characters, args.seed)
    except ValueError as e:
        err.write(f"tagengine campaign new: {e}\n")
        return 1
    finally:
        store.close()
    out.write(f"campaign {row.name}: {row.ruleset} (sha256 {row.digest[:12]}), {row.characters}\n")
    return 0


def cmd_campaign_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    store = _store(args)
    try:
        for row in store.campaigns():
            out.write(f"{row.name}\t{row.ruleset}\t{row.characters}\n")
    finally:
        store.close()
    return 0


def cmd_campaign_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    store = _store(args)
    try:
        row = store.campaign(args.name)
    except NotFoundError as e:
        err.write(f"tagengine campaign show: {e}\n")
        return 1
    finally:
        store.close()
    _emit({"name": row.name, "ruleset": row.ruleset, "sha256": row.digest, "start": json.loads(row.start)}, out)
    return 0


def add_campaign_commands(sub: Any) -> None:
    """`tagengine campaign new|list|show` (issue 12)."""
    cp = sub.add_parser("campaign", help="campaigns for `tagengine serve`: a ruleset and its start state")
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True, parser_class=_Parser)
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--data", metavar="DIR", help="the server's data folder (default: the user data folder)")
    cn = cp_sub.add_parser("new", parents=[data], help="a new campaign: characters at their start values")
    cn.add_argument("name")
    cn.add_argument("ruleset")
    cn.add_argument("characters", nargs="+", metavar="CHARACTER")
    cn.add_argument("--seed", help="the dice's seed (default: a random one; give one to make the campaign again "
                    "exactly)")
    cn.set_defaults(func=cmd_campaign_new)
    cl = cp_sub.add_parser("list", parents=[data], help="the campaigns: name, ruleset, characters")
    cl.set_defaults(func=cmd_campaign_list)
    cs = cp_sub.add_parser("show", parents=[data], help="one campaign as JSON: ruleset, digest, start state")
    cs.add_argument("name")
    cs.set_defaults(func=cmd_campaign_show)


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .server.app import Options
    from .server.main import serve
    from .server.store import default_data_dir

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        err.write(f"tagengine serve: listening on {args.host}, beyond this machine\n")
    opts = Options(upstream=args.upstream, data=Path(args.data) if args.data else default_data_dir(),
                   campaign=args.campaign, api_key=args.api_key, context=args.context, timeout=args.timeout,
                   count_with_upstream=args.count_with_upstream, hide_tags=args.hide_tags, keep=args.keep,
                   settle_checks=args.settle_checks, upstream_transport=args.upstream_transport)
    return serve(opts, args.host, args.port, err)


def add_serve_command(sub: Any) -> None:
    """`tagengine serve` (issue 12)."""
    sv = sub.add_parser("serve", help="the OpenAI-compatible middleware a chat app points at")
    sv.add_argument("--upstream", required=True, metavar="URL",
                    help="the model's OpenAI-compatible base URL (http://host:port/v1), or `demo`")
    sv.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine)")
    sv.add_argument("--port", type=_int_at_least(0), default=5005, help="the port (default 5005)")
    sv.add_argument("--data", metavar="DIR", help="the data folder (default: the user data folder)")
    sv.add_argument("--campaign", metavar="NAME", help="the campaign of a request that names none")
    sv.add_argument("--api-key", metavar="KEY", help="require `Authorization: Bearer KEY` from clients")
    sv.add_argument("--context", type=_int_at_least(1),
                    help="the model's context window in tokens (default: by the model's name, else 8192)")
    sv.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the upstream (default 300)")
    sv.add_argument("--count-with-upstream", action="store_true",
                    help="count tokens with the upstream's tokenize endpoint (llama.cpp, vLLM, KoboldCpp): exact "
                         "for the model it has loaded")
    sv.add_argument("--hide-tags", action="store_true",
                    help="the player gets the narration; the tagged replies stay in the server's store")
    sv.add_argument("--keep", type=_int_at_least(1), default=10000,
                    help="state snapshots kept per campaign, the least recently used pruned (default 10000)")
    sv.add_argument("--settle-checks", action="store_true", help="settle checks mid-reply: stop the model at a "
                    "check tag and have it continue after the dice (docs/checks-in-serve.md)")
    sv.add_argument("--upstream-transport", choices=["own", "httpx"], default="own",
                    help="how the upstream is reached: the server's own HTTP/1.1 transport (default, faster) "
                         "or httpx's")
    sv.set_defaults(func=cmd_serve)


def cmd_st_regex(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .sillytavern.regex import regex_script

    _emit(regex_script(), out)
    return 0


def add_st_commands(sub: Any) -> None:
    """`tagengine st regex` (issue 12); `st import`, `st export` (issue 16)."""
    from .sillytavern.chat_commands import add_chat_commands

    st = sub.add_parser("st", help="the SillyTavern kit (docs/sillytavern.md)")
    st_sub = st.add_subparsers(dest="st_command", required=True, parser_class=_Parser)
    rx = st_sub.add_parser("regex", help="a regex script for SillyTavern that hides the tags in the display only")
    rx.set_defaults(func=cmd_st_regex)
    add_chat_commands(st_sub)


def arg_parser() -> argparse.ArgumentParser:
    from .sillytavern.chat_commands import add_replay_options

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
    new.add_argument("--seed", help="seed the dice (default: derived from the new state's content)")
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
    sh.add_argument("--html", action="store_true", help="print the sheet as one self-contained HTML page")
    sh.set_defaults(func=cmd_sheet)

    pv = sub.add_parser("preview", help="the prompt the GM would get, with a token report")
    pv.add_argument("ruleset")
    pv.add_argument("state")
    pv.add_argument("--history", metavar="FILE", help='JSONL of {"role", "content"} messages, oldest first')
    enc = pv.add_mutually_exclusive_group()
    enc.add_argument("--model", help="model name, which picks the tokenizer and chat format (gpt-4o, o3, "
                     "mistral-large, llama-3.1-70b, claude-sonnet-4, ...; see docs/prompt.md)")
    enc.add_argument("--encoding", choices=["o200k_base", "cl100k_base"])
    pv.add_argument("--tokenizer", metavar="PATH", help="the model's tokenizer.json: exact counts for any model "
                    "(else tokenizers.toml, see docs/prompt.md)")
    pv.add_argument("--context", type=_int_at_least(1), default=8192, help="context window in tokens (default 8192)")
    pv.add_argument("--response", type=_int_at_least(0), default=1024,
                    help="response budget in tokens (default 1024)")
    pv.add_argument("--response-min", type=_int_at_least(0), default=256,
                    help="lowest response budget (default 256)")
    pv.add_argument("--world", action="store_true", help="also show the world-generation prompt")
    pv.add_argument("--json", action="store_true", help='print {"system", "reminder", "messages", "report"}')
    pv.set_defaults(func=cmd_preview)

    rp = sub.add_parser("replay", help="reprocess transcripts (JSONL, one chat per line)")
    rp.add_argument("ruleset")
    rp.add_argument("transcripts", help="a JSONL file, or - for stdin")
    rp.add_argument("more", nargs="*", metavar="TRANSCRIPTS", help="more inputs: SillyTavern chat files "
                    "(--format st), or with --dask JSONL or chat files, globs or fsspec URLs")
    rp.add_argument("-o", "--output", help="write the JSONL here instead of stdout")
    rp.add_argument("--workers", type=_workers, default=1, help=f"parallel processes, 1 to {MAX_WORKERS} (default 1)")
    rp.add_argument("--states-dir", metavar="DIR", help="also write each chat's final state to DIR/<id>.json "
                    "(an id that is not a plain file name gets a short hash)")
    rp.add_argument("--dask", metavar="ADDRESS", help="replay on a Dask cluster: a scheduler's address, or "
                    "local:N for N worker processes here; -o names an output directory (tagengine[dask])")
    rp.add_argument("--partition-size", type=_int_at_least(1), metavar="BYTES",
                    help="with --dask: input bytes per task (default: about 4 per worker thread, 1-64 MiB)")
    add_replay_options(rp)
    rp.set_defaults(func=cmd_replay)

    sc = sub.add_parser("schema", help="JSON Schema of the file formats")
    sc.add_argument("kind", choices=["ruleset", "state"])
    sc.set_defaults(func=cmd_schema)

    d = sub.add_parser("demo", help="the bundled walkthrough")
    d.set_defaults(func=cmd_demo)
    add_campaign_commands(sub)
    add_serve_command(sub)
    add_st_commands(sub)

    ro = sub.add_parser("roll", help="roll a character's check with the state's dice; print the dice card")
    ro.add_argument("ruleset")
    ro.add_argument("state")
    ro.add_argument("name", help="the character")
    ro.add_argument("skill", help="a skill, or else a save or an ability, by id or label")
    ro.add_argument("--with", dest="with_ability", metavar="ABILITY", help="roll the skill with another ability")
    ro.add_argument("--dc", metavar="N", help="dice-sum: the number to reach; dice-pool: the target per die")
    ro.add_argument("--state-out", metavar="FILE", help="write the state, its dice moved on, here")
    ro.add_argument("--json", action="store_true", help="print the number, the record and the dice as JSON")
    ro.set_defaults(func=cmd_roll)
    return p


def cmd_roll(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """A player-side check (issue 13): the same roll a check tag makes, printed as a dice card. Exit 1 when
    the check is refused (`untrained`: the character cannot attempt it, UNTR-9)."""
    from .commands.check import card, settle
    from .commands.result import Result
    from .commands.target import find
    from .tags import Tag

    if args.state_out:
        _not_an_input(args.state_out, {"ruleset": args.ruleset}, "roll")
    rs, state = load_pair(args, err)
    kind = "skill"
    for k, items in (("skill", rs.sheet.skills.items), ("save", rs.sheet.saves.items),
                     ("ability", rs.sheet.abilities.items)):
        if not isinstance(find(items, args.skill, k), Result):
            kind = k
            break
    attrs: list[tuple[str, str | None]] = [("who", args.name), (kind, args.skill)]
    if args.with_ability is not None:
        attrs.append(("with", args.with_ability))
    if args.dc is not None:
        attrs.append(("dc" if not rs.dice_pool else "difficulty", args.dc))
    done = settle(rs, state, Tag("check", tuple(attrs)))
    if args.state_out and done.result.result == "ok":
        done.state.save(args.state_out)
    if args.json:
        _emit({"who": done.who, "result": done.result.result, "reason": done.result.reason,
               "record": dict(done.result.record), "number": done.number.to_json() if done.number else None,
               "faces": list(done.faces), "sides": done.sides, "target": done.target, "dc": done.dc,
               "outcome": done.outcome, "dice": {"seed": done.state.dice.seed, "rolls": done.state.dice.rolls}}, out)
    else:
        (out if done.result.result == "ok" else err).write("\n".join(card(rs, done)) + "\n")
    return 0 if done.result.result == "ok" else 1


def run(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command; returns its exit code (0 ok, 1 bad input, 2 usage)."""
    # write errors name the stream (F-12); NamedStream has every method the commands use of a TextIO
    out = cast(TextIO, NamedStream(out or sys.stdout or _Closed(), "<stdout>"))
    err = cast(TextIO, NamedStream(err or sys.stderr or io.StringIO(), "<stderr>"))
    try:
        args = arg_parser().parse_args(list(argv) if argv is not None else None)
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
    except TooLarge as e:
        return _say(err, f"tagengine: {e}")
    except BrokenPipeError:  # the reader stopped early (`tagengine preview ... | head`): nothing to say
        return 1
    except OSError as e:
        return _say(err, f"tagengine: {e.filename}: {e.strerror or e}" if e.filename else f"tagengine: {e}")


def _say(err: TextIO, message: str) -> int:
    """Exit 1 with a message; a stderr that cannot take it does not turn the exit into a traceback."""
    with suppress(OSError):
        err.write(message + "\n")
    return 1


class _Closed(io.TextIOBase):
    """Standard output when the command was started with it closed (`>&-`): writing is an error (F-12)."""

    def write(self, s: str) -> int:
        raise OSError(9, "standard output is closed", "<stdout>")

    def isatty(self) -> bool:
        return False


def _buffered(stream: TextIO | None, *, line: bool = False) -> TextIO | None:
    """Under PYTHONUNBUFFERED (common in containers) a standard stream writes straight to the file, and
    Python's text layer drops the rest of a short write: output cut short at a closed pipe or a full
    disk, and exit 0. A buffered writer finishes every write or raises (F-12)."""
    raw = getattr(stream, "buffer", None)
    if stream is None or not isinstance(raw, io.RawIOBase):
        return stream
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors="surrogateescape",
                            line_buffering=line)


def main() -> None:
    for fd, stream in ((0, sys.stdin), (1, sys.stdout), (2, sys.stderr)):
        if stream is None:  # started with the descriptor closed: hold it with /dev/null so no file we
            with suppress(OSError):  # open lands on it and a stray write to it goes nowhere (F-12)
                os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="surrogateescape")
    sys.stdout, sys.stderr = _buffered(sys.stdout), _buffered(sys.stderr, line=True)
    from .prompt import forked

    forked.allow()  # this process runs one command and exits: `preview` may build its tokenizer in a child
    code = run()
    for name, stream in (("<stdout>", sys.stdout), ("<stderr>", sys.stderr)):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader stopped early (P-7): exit 1, nothing to say
            code = code or 1
        except OSError as e:  # a full disk: the output is cut short, so say so (F-12)
            code = code or 1
            if name == "<stdout>" and sys.stderr is not None:
                with suppress(OSError):
                    sys.stderr.write(f"tagengine: {name}: {e.strerror or e}\n")
                    sys.stderr.flush()
    # Skip the interpreter's teardown (decision P-7): freeing every object takes 0.1 s, and 0.1-0.2 s
    # more where an encoding was built in this process. Every file is closed and every worker joined
    # by now, and nothing registers atexit work.
    os._exit(code)
