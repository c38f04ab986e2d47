"""`tagengine replay RULESET TRANSCRIPTS...`: transcripts reprocessed. The input is our transcript JSONL or
SillyTavern chat files (`--format`, else told from the first line), replayed here or on a Dask cluster
(`--dask`); each of the four is one engine function, chosen in plain sight by `cmd_replay` or
`replay_on_dask` (CL-2).

Exit 1 when any line, chat or input was bad (F-4): the output holds `{"id", "error"}` for it, the rest went on.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ..files import STDIN, same_file
from .conventions import Usage, int_at_least, not_an_input
from .st import add_start_options, start_given

if TYPE_CHECKING:
    from ..batch import Summary

MAX_WORKERS = 64  # `replay --workers` (F-8)


def workers(text: str) -> int:
    """An argparse type: 1 to MAX_WORKERS processes (F-8)."""
    value = int_at_least(1)(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{text} is above {MAX_WORKERS}, the most tagengine starts")
    return value


def add_replay(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("ruleset")
    rp.add_argument("transcripts", help="a JSONL file, or - for stdin")
    rp.add_argument("more", nargs="*", metavar="TRANSCRIPTS", help="more inputs: SillyTavern chat files "
                    "(--format st), or with --dask JSONL or chat files, globs or fsspec URLs")
    rp.add_argument("-o", "--output", help="write the JSONL here instead of stdout")
    rp.add_argument("--workers", type=workers, default=1, help=f"parallel processes, 1 to {MAX_WORKERS} (default 1)")
    rp.add_argument("--states-dir", metavar="DIR", help="also write each chat's final state to DIR/<id>.json "
                    "(an id that is not a plain file name gets a short hash)")
    rp.add_argument("--dask", metavar="ADDRESS", help="replay on a Dask cluster: a scheduler's address, or "
                    "local:N for N worker processes here; -o names an output directory (tagengine[dask])")
    rp.add_argument("--partition-size", type=int_at_least(1), metavar="BYTES",
                    help="with --dask: input bytes per task (default: about 4 per worker thread, 1-64 MiB)")
    rp.add_argument("--format", choices=["auto", "jsonl", "st"], default="auto",
                    help="the input: our transcript JSONL, or SillyTavern chat files, one chat each (default: "
                    "told from the first line)")
    add_start_options(rp, also_jsonl=True)
    rp.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.dask:
        return replay_on_dask(args, err)
    if args.states_dir and not args.output:
        raise Usage("tagengine replay: --states-dir needs -o OUT")
    if args.output:
        not_an_input(args.output, {"transcripts": args.transcripts, "ruleset": args.ruleset}, "replay")
    import functools

    from ..ruleset import Ruleset

    rs = Ruleset.load(args.ruleset)  # fail early, once, with every problem named
    paths = [args.transcripts, *args.more]
    source = None
    replay_into: Callable[..., Summary]  # (sink, progress=, tick=)
    if _local_format(args) == "st":  # each chat file one chat, one output line
        from ..sillytavern.chatreplay import replay_files

        _check_chat_inputs(args, paths)
        replay_into = functools.partial(replay_files, args.ruleset, paths, workers=args.workers,
                                        given=start_given(args, "replay", err, rs, args.ruleset))
    else:
        from ..batch import replay
        from .inputs import stdin_of

        if len(paths) > 1:
            raise Usage("tagengine replay: one JSONL transcripts file, or several with --dask; several files here "
                        "are SillyTavern chats (--format st)")
        _no_start_options(args)
        source = stdin_of(None) if args.transcripts == STDIN else open(args.transcripts, "rb")  # noqa: SIM115
        replay_into = functools.partial(replay, args.ruleset, source, workers=args.workers)
    try:
        summary = _with_progress(replay_into, args.output, out, err)
    finally:
        if source is not None and args.transcripts != STDIN:
            source.close()
    err.write(f"{summary}\n")
    if args.states_dir:
        from ..states_dir import lines_of, write_states

        with open(args.output, "rb") as f:
            write_states(lines_of(args.output, f), args.states_dir, err)
    return 1 if summary.errors else 0


def _with_progress(replay_into: Callable[..., Summary], output: str | None, out: TextIO, err: TextIO) -> Summary:
    """`replay_into(sink, progress=, tick=)` into `output` (atomically: the old output stays until the new one is
    complete, F-1) or `out`, with a progress bar on a terminal (tqdm, DK-6)."""
    from ..files import atomic_writer
    from ..progress import progress_bar

    bar = progress_bar(err)
    progress = err if err.isatty() and bar is None else None
    tick = bar.tick if bar is not None else None
    try:
        if output:
            with atomic_writer(output) as sink:
                return replay_into(sink, progress=progress, tick=tick)
        return replay_into(out, progress=progress, tick=tick)
    finally:
        if bar is not None:
            bar.close()


def _local_format(args: argparse.Namespace) -> str:
    """`st` or `jsonl`: as `--format` says, else `st` when the first input is a file whose first line is a
    SillyTavern chat's header or message."""
    if args.format != "auto":
        return str(args.format)
    import os

    from ..sillytavern.chatfile import first_line, looks_like_chat

    chat = args.transcripts != STDIN and os.path.isfile(args.transcripts) and \
        looks_like_chat(first_line(args.transcripts))
    return "st" if chat else "jsonl"


def _no_start_options(args: argparse.Namespace) -> None:
    """Our JSONL: each chat names its own start."""
    if args.st_characters or args.st_start or args.st_campaign:
        command = "tagengine replay --dask" if args.dask else "tagengine replay"
        raise Usage(f"{command}: --character and --start (and --campaign) are for SillyTavern chat files (--format "
                    "st); a JSONL chat names its own start (`st import --campaign FILE` writes the campaign's)")


def _check_chat_inputs(args: argparse.Namespace, paths: list[str]) -> None:
    """SillyTavern chat files replayed here: none is the output, standard input at most once and open."""
    if args.output:
        for p in paths:
            if p != STDIN and same_file(args.output, p):
                raise Usage(f"tagengine replay: the output {args.output} is the chat {p}; write it elsewhere")
    if paths.count(STDIN) > 1:
        raise Usage("tagengine replay: standard input (-) can be read once")
    if STDIN in paths:
        from ..files import standard_input

        standard_input()  # closed: the command stops before any chat is replayed (F-12)


def replay_on_dask(args: argparse.Namespace, err: TextIO) -> int:
    """`replay --dask`: any number of inputs (files, globs, fsspec URLs) into an output directory, on a Dask
    cluster (`batch_dask.py`, imported only here): our JSONL cut in byte ranges, SillyTavern chat files one
    task each (DK-10). Exit 1 when a line or an input was bad."""
    if not args.output:
        raise Usage("tagengine replay --dask: -o OUTDIR is needed (one file per partition, and summary.json)")
    if args.workers != 1:
        raise Usage("tagengine replay --dask: --workers is for the local replay (the cluster's workers do it)")
    if "-" in [args.transcripts, *args.more]:
        raise Usage("tagengine replay --dask: the transcripts are files or URLs, not stdin")
    try:
        from ..batch_dask import replay_command
    except ImportError as e:
        raise Usage(f"tagengine replay --dask needs the dask extra (pip install 'tagengine[dask]'): {e}") from None
    per_file = None
    if _dask_format(args) == "st":
        if args.partition_size is not None:
            raise Usage("tagengine replay --dask: --partition-size cuts JSONL inputs; a SillyTavern chat file is "
                        "one chat, one task")
        import functools

        from ..ruleset import Ruleset
        from ..sillytavern.chatreplay import replay_on_fs

        given = start_given(args, "replay", err, Ruleset.load(args.ruleset), args.ruleset)
        per_file = functools.partial(replay_on_fs, given=given)
    else:
        _no_start_options(args)
    try:
        return replay_command(args.ruleset, [args.transcripts, *args.more], args.output, args.dask,
                              args.partition_size, err, per_file=per_file, states_dir=args.states_dir)
    except ValueError as e:  # the output directory or the --dask address
        raise Usage(f"tagengine replay --dask: {e}") from None


def _dask_format(args: argparse.Namespace) -> str:
    """`st` or `jsonl`: as `--format` says, else told from the first line of the first input's first file."""
    if args.format != "auto":
        return str(args.format)
    from ..sillytavern.chatbatch import first_line_of
    from ..sillytavern.chatfile import looks_like_chat

    return "st" if looks_like_chat(first_line_of(args.transcripts)) else "jsonl"
