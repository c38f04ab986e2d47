"""`tagengine st`, the SillyTavern kit (docs/sillytavern.md): `st regex`, `st import` and `st export`,
`st extension`, and the start options `replay --format st` shares with them (`--character`,
`--start`, `--campaign`: `start_given`).

Exit codes as everywhere (P-7, F-4): 0 ok, 1 a bad chat file (named FILE:LINE: key, the rest go on) or a
file that cannot be read or written, 2 usage. The work is `sillytavern/chatbatch.py`'s.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO

from ..files import STDIN, same_file
from .conventions import ArgParser, Usage, print_json

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from ..batch import Summary
    from ..ruleset import Ruleset
    from ..sillytavern.chatreplay import Start


def add_st(st: ArgumentParser) -> None:
    st_sub = st.add_subparsers(dest="st_command", required=True, parser_class=ArgParser)
    rx = st_sub.add_parser("regex", help="a regex script for SillyTavern that hides the tags in the display only")
    rx.set_defaults(func=cmd_st_regex, short_lived=True)
    xt = st_sub.add_parser("extension", help="the SillyTavern extension (the game sheet of the chat on screen): "
                           "where its files are, or --install it for a SillyTavern user")
    xt.add_argument("--install", metavar="DIR", help="copy it into DIR/extensions/tagengine: DIR is a SillyTavern "
                    "user's folder (data/default-user) or its extensions/ folder; an earlier copy is replaced")
    xt.set_defaults(func=cmd_st_extension, short_lived=True)
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


def add_start_options(p: ArgumentParser, *, also_jsonl: bool = False) -> None:
    """Where SillyTavern chats start: `--character` (once per character), `--start STATE` or `--campaign FILE` (a
    campaign file of `campaign export`: its start, whose dice seed keys the edit receipts). `also_jsonl`: the
    command reads our JSONL too (`replay`), where each chat names its own start, so the help says which input
    the options are for."""
    only = "with --format st (SillyTavern chats; a JSONL chat names its own start): " if also_jsonl else ""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--character", action="append", dest="st_characters", metavar="NAME",
                   help=f"{only}a character the chats start with (once per character; default: the start an "
                   "earlier `st export` wrote in the chat)")
    g.add_argument("--start", dest="st_start", metavar="STATE", help=f"{only}a state file the chats start from")
    g.add_argument("--campaign", dest="st_campaign", metavar="FILE", help=f"{only}a campaign file of `tagengine "
                   "campaign export`: the chats start from its start, whose dice seed keys their edit receipts")


def start_given(args: Namespace, command: str, err: TextIO, rs: Ruleset | None = None,
                ruleset: str | None = None) -> Start | None:
    """The start the command line names: `--campaign FILE`'s (read as a state of `rs` when given; when the
    RULESET file `ruleset` is not the one the campaign was exported with, a warning: its edit receipts still
    verify, ED-8, but one whose changes that file no longer allows is refused, ED-9), else `--character` or
    `--start` (`given_start`), else None."""
    if not args.st_campaign:
        from ..sillytavern.chatbatch import given_start

        return given_start(args.st_characters, args.st_start, rs)
    from ..server.memory.export import read_campaign_path
    from ..sillytavern.chatreplay import Start

    cf = read_campaign_path(args.st_campaign)
    if rs is not None:
        from ..state import from_json

        from_json(rs, cf.start, f"{args.st_campaign}: start")
    if ruleset is not None:
        from ..files import read_file
        from ..server.limits import MAX_RULESET_FILE
        from ..server.memory.campaigns import digest_of

        digest = digest_of(read_file(ruleset, MAX_RULESET_FILE))
        if digest != cf.digest:
            err.write(f"tagengine {command}: warning: {ruleset} (sha256 {digest[:12]}) is not the ruleset the campaign "
                      f"{cf.name} was exported with (sha256 {cf.digest[:12]}, in {args.st_campaign}): an edit receipt "
                      "whose changes it no longer allows is refused invalid-edit\n")
    return Start(state=cf.start)


def cmd_st_regex(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..sillytavern.regex import regex_script

    print_json(regex_script(), out)
    return 0


def cmd_st_extension(args: Namespace, out: TextIO, err: TextIO) -> int:
    """Without --install, the extension's folder (to copy by hand); with it, exit 1 naming the path at fault."""
    from pathlib import Path

    from ..sillytavern.extension import NotInstalled, extension_dir, install

    if args.install is None:
        print(extension_dir(), file=out)
        return 0
    got = install(Path(args.install))
    if isinstance(got, NotInstalled):
        print(f"tagengine st extension: {got.path}: {got.message}", file=err)
        return 1
    print(f"installed the tagengine extension in {got}: reload SillyTavern's page (Extensions lists it)", file=out)
    return 0


def cmd_st_import(args: Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 1 when a chat file was bad: it is named, left out, and the others are written."""
    from ..files import standard_input, write_atomic
    from ..sillytavern.chatbatch import import_chats

    if args.output:
        for path in args.chats:
            if path != STDIN and same_file(args.output, path):
                raise Usage(f"tagengine st import: the output {args.output} is the chat {path}; write it elsewhere")
    given = start_given(args, "st import", err)
    stdin = standard_input().buffer if STDIN in args.chats else None  # closed: the command stops here (F-12)
    data, chats, errors = import_chats(args.chats, given, stdin)
    if args.output:
        write_atomic(args.output, data)
    else:
        buf = getattr(out, "buffer", None)
        if buf is not None:
            buf.write(data)
        else:
            out.write(data.decode("utf-8", "surrogateescape"))
    err.write(_summary("imported", chats, None, len(args.chats) - chats, errors))
    return 1 if errors else 0


def cmd_st_export(args: Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 1 when a chat file was bad: it is named and not written; the others are."""
    from ..batch import Summary
    from ..ruleset import Ruleset
    from ..sillytavern.chatbatch import export_one

    targets = _targets(args.chats, args.output, args.out_dir, args.in_place)
    rs = Ruleset.load(args.ruleset)
    given = start_given(args, "st export", err, rs, args.ruleset)
    if args.dask:
        results: Any = _export_dask(args, targets, given, err)
    else:
        results = (export_one(rs, path, target, given) for path, target in targets)
    summary = Summary()
    for ok, errs, receipts in results:
        summary.add(int(ok), errs, receipts)
    err.write(_summary("exported", summary.chats, summary, len(targets) - summary.chats, summary.errors))
    return 1 if summary.errors else 0


def _export_dask(args: Namespace, targets: list[tuple[str, str]], given: Start | None, err: TextIO
                 ) -> list[tuple[bool, list[str], dict[str, int]]]:
    """`st export --dask`: one task per chat, `export_one` on the workers, results in the chats' order (DK-13)."""
    import functools

    from ..sillytavern.chatbatch import export_one

    if args.in_place:
        raise Usage("tagengine st export: --in-place is for the local export: a rerun of a killed task would read "
                    "its own output")
    try:
        from ..batch_dask import map_chats
    except ImportError as e:
        raise Usage(f"tagengine st export: --dask needs the dask extra (pip install 'tagengine[dask]'): {e}") from None
    try:
        results: list[tuple[bool, list[str], dict[str, int]]] = map_chats(
            args.ruleset, args.dask, targets, functools.partial(export_one, given=given), err)
    except ValueError as e:  # the --dask address
        raise Usage(f"tagengine st export: {e}") from None
    return results


def _targets(chats: list[str], output: str | None, out_dir: str | None, in_place: bool) -> list[tuple[str, str]]:
    """(chat, where it goes) for each chat; Usage when the command line cannot be done."""
    if in_place:
        return [(p, p) for p in chats]
    if output:
        if len(chats) > 1:
            raise Usage("tagengine st export: -o names one file; several chats go to --out-dir DIR or --in-place")
        pairs = [(chats[0], output)]
    else:
        assert out_dir is not None  # argparse: one of -o, --out-dir, --in-place is required
        os.makedirs(out_dir, exist_ok=True)
        pairs = [(p, os.path.join(out_dir, os.path.basename(p))) for p in chats]
        seen: dict[str, str] = {}
        for p, t in pairs:
            if t in seen:
                raise Usage(f"tagengine st export: {seen[t]} and {p} would both be written to {t}")
            seen[t] = p
    for p, t in pairs:
        if same_file(p, t):
            raise Usage(f"tagengine st export: the output {t} is the chat {p}; write it elsewhere, or give --in-place")
    return pairs


def _summary(done: str, chats: int, receipts: Summary | None, bad: int, errors: list[str]) -> str:
    """The last lines on stderr: chats done (with `receipts`' counts), `bad` files left out, then each problem
    (a file may have several)."""
    counts = "" if receipts is None else "; receipts: " + receipts.counts()
    return f"{chats} chat(s) {done}{counts}; {bad} bad file(s)" + "".join(f"\n  {e}" for e in errors) + "\n"
