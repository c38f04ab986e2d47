"""The command line of SillyTavern chat files (issue 16): `tagengine st import`, `tagengine st export`, and
what `tagengine replay` needs to read chat files (`--format st`, or detected from the first line).

Exit codes as everywhere (P-7, F-4): 0 ok, 1 a bad chat file (named FILE:LINE: key, the rest go on) or a
file that cannot be read or written, 2 usage. Every file is written atomically (F-1).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import Problem, ProblemsError
from ..files import STDIN, json_problem, read_file, same_file, standard_input, write_atomic

if TYPE_CHECKING:
    from ..batch import Summary
    from .chatreplay import Start


class StUsage(ValueError):
    """A usage error of these commands; the caller turns it into exit 2."""


def add_start_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--character", action="append", dest="st_characters", metavar="NAME",
                   help="a character the chats start with (once per character; default: the start an earlier "
                   "`st export` wrote in the chat)")
    g.add_argument("--start", dest="st_start", metavar="STATE", help="a state file the chats start from")


def add_replay_options(rp: argparse.ArgumentParser) -> None:
    """`tagengine replay`'s options for SillyTavern chat files (the extra inputs, `more`, are cli.py's)."""
    rp.add_argument("--format", choices=["auto", "jsonl", "st"], default="auto",
                    help="the input: our transcript JSONL, or SillyTavern chat files, one chat each (default: "
                    "told from the first line)")
    add_start_options(rp)


def add_chat_commands(st_sub: Any) -> None:
    """`tagengine st import` and `tagengine st export`, under `tagengine st`."""
    im = st_sub.add_parser("import", help="SillyTavern chat files as transcript JSONL (one chat a line) for "
                           "`tagengine replay`")
    im.add_argument("chats", nargs="+", metavar="CHAT", help="SillyTavern chat files (.jsonl), or - for stdin")
    im.add_argument("-o", "--output", help="write the JSONL here instead of stdout")
    add_start_options(im)
    im.set_defaults(func=cmd_st_import)
    ex = st_sub.add_parser("export", help="replay SillyTavern chat files and write them back: receipts in the "
                           "text, states in `tagengine` keys, every other byte as it was")
    ex.add_argument("ruleset")
    ex.add_argument("chats", nargs="+", metavar="CHAT", help="SillyTavern chat files (.jsonl)")
    where = ex.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="FILE", help="write the one chat here")
    where.add_argument("--out-dir", metavar="DIR", help="write each chat to DIR/<its file name>")
    where.add_argument("--in-place", action="store_true", help="replace each chat file (atomically)")
    add_start_options(ex)
    ex.add_argument("--dask", metavar="ADDRESS", help="export on a Dask cluster, one task per chat: a scheduler's "
                    "address, or local:N (tagengine[dask]; with -o or --out-dir on storage the workers share)")
    ex.set_defaults(func=cmd_st_export)


def given_start(args: argparse.Namespace, rs: Any = None) -> Start | None:
    """The start named on the command line, if any; with a ruleset, a `--start` state is checked against it
    (StateError, naming every problem)."""
    from .chatreplay import Start

    if getattr(args, "st_characters", None):
        if rs is not None:
            from ..state import GameState

            GameState.new(rs, args.st_characters)  # a bad name is a StateError now, not one per chat
        return Start(characters=tuple(args.st_characters))
    path = getattr(args, "st_start", None)
    if not path:
        return None
    from ..state.model import MAX_STATE_BYTES  # a `--start` state file, as any state file (F-5)

    try:
        doc = json.loads(read_file(path, MAX_STATE_BYTES))
    except (RecursionError, ValueError) as e:
        raise ProblemsError([Problem("$", "not-json", json_problem(e), None)], path) from None
    if not isinstance(doc, dict):
        raise ProblemsError([Problem("$", "wrong-type", "a state is a JSON object", None)], path)
    if rs is not None:
        from ..state import from_json

        from_json(rs, doc, path)  # StateError when it is not a state of this ruleset
    return Start(state=doc)


def _summary(done: str, chats: int, receipts: Summary | None, bad: int, errors: list[str]) -> str:
    """The last lines on stderr: chats done (with `receipts`' counts), `bad` files left out, then each problem
    (a file may have several)."""
    counts = "" if receipts is None else "; receipts: " + receipts.counts()
    return f"{chats} chat(s) {done}{counts}; {bad} bad file(s)" + "".join(f"\n  {e}" for e in errors) + "\n"


def _usage(err: TextIO, command: str, message: str) -> int:
    err.write(f"tagengine st {command}: {message}\n")
    return 2


def cmd_st_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 1 when a chat file was bad: it is named, left out, and the others are written."""
    from ..batch import line_bytes
    from .chatfile import ChatFileError
    from .chatreplay import load, transcript

    if args.output:
        for path in args.chats:
            if path != STDIN and same_file(args.output, path):
                return _usage(err, "import", f"the output {args.output} is the chat {path}; write it elsewhere")
    given = given_start(args)
    stdin = standard_input().buffer if STDIN in args.chats else None  # closed: the command stops here (F-12)
    lines, errors = [], []
    for path in args.chats:
        try:
            lines.append(line_bytes(transcript(load(path, stdin), given)) + b"\n")
        except ChatFileError as e:
            errors += e.lines()
        except Exception as e:  # a bug, but this file's: name it and go on (F-4)
            errors.append(f"{path}: {type(e).__name__}: {e}")
    data = b"".join(lines)
    if args.output:
        write_atomic(args.output, data)
    else:
        buf = getattr(out, "buffer", None)
        if buf is not None:
            buf.write(data)
        else:
            out.write(data.decode("utf-8", "surrogateescape"))
    err.write(_summary("imported", len(lines), None, len(args.chats) - len(lines), errors))
    return 1 if errors else 0


def cmd_st_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 1 when a chat file was bad: it is named and not written; the others are."""
    from ..batch import Summary
    from ..ruleset import Ruleset

    targets = _targets(args)
    if isinstance(targets, str):
        return _usage(err, "export", targets)
    rs = Ruleset.load(args.ruleset)
    given = given_start(args, rs)
    if getattr(args, "dask", None):
        try:
            results: Any = _export_dask(args, targets, given, err)
        except StUsage as e:
            return _usage(err, "export", str(e))
    else:
        results = (export_one(rs, path, target, given) for path, target in targets)
    summary = Summary()
    for ok, errs, receipts in results:
        summary.add(int(ok), errs, receipts)
    err.write(_summary("exported", summary.chats, summary, len(targets) - summary.chats, summary.errors))
    return 1 if summary.errors else 0


def export_one(rs: Any, path: str, target: str, given: Start | None) -> tuple[bool, list[str], dict[str, int]]:
    """One chat exported to `target` (atomically): (written, errors, receipt counts); never raises (F-4). Also
    the task of `st export --dask` (DK-13)."""
    from .chatfile import ChatFileError, read_chat
    from .chatreplay import export_chat

    try:
        exported = export_chat(rs, read_chat(path), given)
    except ChatFileError as e:
        return False, e.lines(), {}
    except Exception as e:  # a bug, but this file's: name it, write nothing for it, go on (F-4)
        return False, [f"{path}: {type(e).__name__}: {e}"], {}
    try:
        write_atomic(target, exported.data)
    except OSError as e:
        return False, [f"{e.filename or target}: {e.strerror or e}"], {}
    return True, [], exported.receipts


def _export_dask(args: argparse.Namespace, targets: list[tuple[str, str]], given: Start | None,
                 err: TextIO) -> list[tuple[bool, list[str], dict[str, int]]]:
    """`st export --dask`: one task per chat, `export_one` on the workers, results in the chats' order."""
    if args.in_place:
        raise StUsage("--in-place is for the local export: a rerun of a killed task would read its own output")
    try:
        from ..batch_dask import map_chats
    except ImportError as e:
        raise StUsage(f"--dask needs the dask extra (pip install 'tagengine[dask]'): {e}") from None
    try:
        results: list[tuple[bool, list[str], dict[str, int]]] = map_chats(
            args.ruleset, args.dask, targets, functools.partial(export_one, given=given), err)
    except ValueError as e:  # the --dask address
        raise StUsage(str(e)) from None
    return results


def _targets(args: argparse.Namespace) -> list[tuple[str, str]] | str:
    """(chat, where it goes) for each chat, or why the command line cannot be done."""
    if args.in_place:
        return [(p, p) for p in args.chats]
    if args.output:
        if len(args.chats) > 1:
            return "-o names one file; several chats go to --out-dir DIR or --in-place"
        pairs = [(args.chats[0], args.output)]
    else:
        os.makedirs(args.out_dir, exist_ok=True)
        pairs = [(p, os.path.join(args.out_dir, os.path.basename(p))) for p in args.chats]
        seen: dict[str, str] = {}
        for p, t in pairs:
            if t in seen:
                return f"{seen[t]} and {p} would both be written to {t}"
            seen[t] = p
    for p, t in pairs:
        if same_file(p, t):
            return f"the output {t} is the chat {p}; write it elsewhere, or give --in-place"
    return pairs


def st_replay(args: argparse.Namespace) -> Callable[..., Any] | None:
    """For `tagengine replay`: a replay of SillyTavern chat files (`--format st`, or the first file's first
    line is a SillyTavern header or message) with `batch.replay`'s signature, or None for our JSONL.
    StUsage for a command line that cannot be done."""
    from .chatfile import first_line, looks_like_chat

    paths = [args.transcripts, *getattr(args, "more", [])]
    fmt = getattr(args, "format", "auto")
    if fmt == "auto":
        chat = args.transcripts != STDIN and os.path.isfile(args.transcripts) and \
            looks_like_chat(first_line(args.transcripts))
        fmt = "st" if chat else "jsonl"
    if fmt == "jsonl":
        if len(paths) > 1:
            raise StUsage("one JSONL transcripts file, or several with --dask; several files here are SillyTavern "
                          "chats (--format st)")
        if getattr(args, "st_characters", None) or getattr(args, "st_start", None):
            raise StUsage("--character and --start are for SillyTavern chat files (--format st)")
        return None
    if args.output:
        for p in paths:
            if p != STDIN and same_file(args.output, p):
                raise StUsage(f"the output {args.output} is the chat {p}; write it elsewhere")
    if paths.count(STDIN) > 1:
        raise StUsage("standard input (-) can be read once")
    if STDIN in paths:
        standard_input()  # closed: the command stops before any chat is replayed (F-12)
    from ..ruleset import Ruleset
    from .chatreplay import replay_files

    given = given_start(args, Ruleset.load(args.ruleset))

    def run(ruleset_path: str, source: Any, sink: Any, workers: int = 1, progress: TextIO | None = None,
            tick: Callable[[int, int], None] | None = None, **_: Any) -> Any:
        return replay_files(ruleset_path, paths, sink, workers, progress, given, tick)

    return run


def first_line_of(spec: str, limit: int = 1 << 20) -> bytes:
    """The first non-blank line (at most `limit` bytes) of the first file an input names (a path, a glob or
    an fsspec URL), b"" when none can be read: for telling SillyTavern chat files from our JSONL (`--format
    auto`). Here, not in batch_dask, which does not import this package (DK-10)."""
    from ..batch_dask import expand
    from .chatfile import first_line

    files, _bad = expand([spec])
    if not files:
        return b""
    _url, fs, path, _size = files[0]
    try:
        return first_line(path, limit, opener=lambda: fs.open(path, "rb"))
    except OSError:
        return b""


def st_dask(args: argparse.Namespace) -> Callable[..., Any] | None:
    """For `tagengine replay --dask`: the task that replays one SillyTavern chat file (`--format st`, or the
    first input's first line is a chat's), each input one task (DK-10), or None for our JSONL. StUsage for a
    command line that cannot be done."""
    from .chatfile import looks_like_chat

    fmt = getattr(args, "format", "auto")
    if fmt == "auto":
        fmt = "st" if looks_like_chat(first_line_of(args.transcripts)) else "jsonl"
    if fmt == "jsonl":
        if getattr(args, "st_characters", None) or getattr(args, "st_start", None):
            raise StUsage("--character and --start are for SillyTavern chat files (--format st)")
        return None
    if getattr(args, "partition_size", None) is not None:
        raise StUsage("--partition-size cuts JSONL inputs; a SillyTavern chat file is one chat, one task")
    from ..ruleset import Ruleset
    from .chatreplay import replay_on_fs

    return functools.partial(replay_on_fs, given=given_start(args, Ruleset.load(args.ruleset)))
