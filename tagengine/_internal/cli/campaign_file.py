"""`tagengine campaign export NAME` and `tagengine campaign import FILE`: a campaign as one file, so the chat and
that file give the game without the data folder (the start, the dice seed that keys the edit receipts, the
ruleset: `server/memory/export.py`). `replay --campaign FILE` and `st export --campaign FILE` start chats from it.

Exit codes as everywhere: 0 done, 1 a file that cannot be read, written or used (every problem named, with the
file and the key: `heist.json: ruleset.sha256: digest-mismatch: ...`), 2 usage.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..files import STDIN
from .conventions import ArgParser, print_json

if TYPE_CHECKING:
    from ..server.memory.store import CampaignRow


def add_campaign_files(add_parser: Callable[..., ArgParser], data: ArgParser) -> None:
    """The two subcommands, under `tagengine campaign`: `add_parser` is its subparsers' (`serve.add_campaign`),
    `data` the parent declaring `--data`."""
    ex = add_parser("export", parents=[data], help="a campaign as one file: its start state (with the dice "
                           "seed that keys its edit receipts) and its ruleset; keep it beside the chat")
    ex.add_argument("name")
    ex.add_argument("-o", "--output", metavar="FILE", help="write it here (atomically) instead of stdout")
    ex.set_defaults(func=cmd_campaign_export)
    im = add_parser("import", parents=[data], help="a campaign from a file of `campaign export`: its "
                           "ruleset kept in the data folder, its start as exported")
    im.add_argument("file", metavar="FILE", help="the campaign file, or - for stdin")
    im.add_argument("--as", dest="as_name", metavar="NAME", help="the campaign's name here (default: its own)")
    im.add_argument("--owner", metavar="USER", help="the chat app's user whose campaign it is, for `serve "
                    "--user-header` (as `campaign new --owner`); default: the first user who plays it")
    im.set_defaults(func=cmd_campaign_import)


def _data_folder(args: argparse.Namespace) -> Path:
    from ..server.memory.store import default_data_dir

    return Path(args.data) if args.data else default_data_dir()


def cmd_campaign_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json

    from ..errors import NotFoundError
    from ..files import write_atomic
    from ..server.memory.export import exported
    from ..server.memory.store import Store

    store = Store(_data_folder(args))
    try:
        cf = exported(store, args.name)
    except NotFoundError as e:
        err.write(f"tagengine campaign export: {e}\n")
        return 1
    finally:
        store.close()
    if args.output:
        write_atomic(args.output, (json.dumps(cf.to_json(), ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
        err.write(f"campaign {cf.name} written to {args.output}: it holds the dice seed that keys its edit "
                  "receipts, so keep it as you keep the data folder\n")
    else:
        print_json(cf.to_json(), out)
    return 0


def cmd_campaign_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..files import read_limited, standard_input
    from ..server.limits import MAX_CAMPAIGN_FILE
    from ..server.memory.export import import_campaign, read_campaign_file, read_campaign_path
    from ..server.memory.store import Store

    if args.file == STDIN:
        cf = read_campaign_file(read_limited(standard_input().buffer, MAX_CAMPAIGN_FILE, "<stdin>"), "<stdin>")
    else:
        cf = read_campaign_path(args.file)
    folder = _data_folder(args)
    store = Store(folder)
    try:
        row = import_campaign(store, folder, cf, "<stdin>" if args.file == STDIN else args.file, args.as_name)
        if args.owner:
            store.claim(row.name, args.owner)
    except ValueError as e:
        err.write(f"tagengine campaign import: {e}\n")
        return 1
    finally:
        store.close()
    return said_made(row, out)

def said_made(row: CampaignRow, out: TextIO) -> int:
    """A campaign made (`campaign new`, `campaign import`), said in one line: its name, ruleset and characters."""
    out.write(f"campaign {row.name}: {row.ruleset} (sha256 {row.digest[:12]}), {row.characters}\n")
    return 0
