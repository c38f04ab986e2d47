"""`tagengine serve` (the OpenAI-compatible middleware), `tagengine campaign new|list|show|remove` (what it serves;
`export|import` in campaign_file.py) and `tagengine sessions end` (its pages' sign-ins). The server's packages
(Starlette, uvicorn, httpx) are imported only when `serve` or `campaign` runs.

Every option of `serve` is in `add_serve`, and `cmd_serve` passes each to `server.app.Options`. A campaign's
ruleset may be a bundled sample's name (`campaign new heist blades-like`, PK-3), and `serve --rulesets`
defaults to the bundled rulesets (PK-4): both through `_internal/samples.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .campaign_file import add_campaign_files, said_made
from .conventions import API_KEY_VARIABLE, ArgParser, Usage, int_at_least, print_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ruleset import Ruleset
    from ..server.memory.store import Store
    from ..state import GameState


def add_campaign(cp: argparse.ArgumentParser) -> None:
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True, parser_class=ArgParser)
    data = ArgParser(add_help=False)
    data.add_argument("--data", metavar="DIR", help="the server's data folder (default: the user data folder)")
    cn = cp_sub.add_parser("new", parents=[data], help="a new campaign: characters at their start values, or a "
                           "state file's")
    cn.add_argument("name")
    cn.add_argument("ruleset", help="a ruleset file, or a bundled sample's name (blades-like, ...: `tagengine "
                    "samples`), copied into the data folder; a sample with no CHARACTER and no --state starts from "
                    "its start state, the characters made, with dice of its own")
    cn.add_argument("characters", nargs="*", metavar="CHARACTER")
    cn.add_argument("--state", metavar="FILE", help="start from this state file (characters made with `tagengine "
                    "character set`) instead of naming blank characters")
    cn.add_argument("--seed", help="the dice's seed (default: a random one, or with --state the file's dice; give "
                    "one to make the campaign again exactly)")
    cn.add_argument("--owner", metavar="USER", help="the chat app's user whose campaign it is, for `serve "
                    "--user-header` (Open WebUI: the user's id); default: the first user who plays it")
    cn.set_defaults(func=cmd_campaign_new)
    cl = cp_sub.add_parser("list", parents=[data], help="the campaigns: name, ruleset, characters")
    cl.set_defaults(func=cmd_campaign_list)
    cs = cp_sub.add_parser("show", parents=[data], help="one campaign as JSON: ruleset, digest, start state")
    cs.add_argument("name")
    cs.set_defaults(func=cmd_campaign_show)
    cr = cp_sub.add_parser("remove", parents=[data], help="remove a campaign: its start, its snapshots, its players' "
                           "edits waiting, and its ruleset file when the data folder keeps it for this campaign only "
                           "(stop the server first)")
    cr.add_argument("name")
    cr.set_defaults(func=cmd_campaign_remove)
    add_campaign_files(cp_sub.add_parser, data)  # export, import: campaign_file.py


def add_serve(sv: argparse.ArgumentParser) -> None:
    sv.add_argument("--upstream", required=True, metavar="URL",
                    help="the model's OpenAI-compatible base URL (http://host:port/v1), or `demo`")
    sv.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine)")
    sv.add_argument("--port", type=int_at_least(0), default=5005, help="the port (default 5005)")
    sv.add_argument("--data", metavar="DIR", help="the data folder (default: the user data folder)")
    sv.add_argument("--campaign", metavar="NAME", help="the campaign of a request that names none")
    sv.add_argument("--api-key", metavar="KEY", default=os.environ.get(API_KEY_VARIABLE) or None,
                    help=f"require `Authorization: Bearer KEY` from clients (default: ${API_KEY_VARIABLE}, which keeps "
                         "the key out of the process list)")
    sv.add_argument("--context", type=int_at_least(1),
                    help="the model's context window in tokens (default: by the model's name, else 8192)")
    sv.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the upstream (default 300)")
    sv.add_argument("--count-with-upstream", action="store_true",
                    help="count tokens with the upstream's tokenize endpoint (llama.cpp, vLLM, KoboldCpp): exact "
                         "for the model it has loaded")
    sv.add_argument("--hide-tags", action="store_true",
                    help="the player gets the narration; the tagged replies stay in the server's store")
    sv.add_argument("--keep", type=int_at_least(1), default=10000,
                    help="state snapshots kept per campaign, the least recently used pruned (default 10000)")
    sv.add_argument("--settle-checks", action="store_true", help="settle checks mid-reply: stop the model at a "
                    "check tag and have it continue after the dice (docs/checks-in-serve.md)")
    sv.add_argument("--grammar", choices=["off", "gbnf", "llguidance", "vllm", "sglang"], default="off",
                    help="constrain the model's reply to the tags the state allows, in the field this kind of server "
                         "reads: gbnf (llama.cpp, KoboldCpp), llguidance (llama.cpp built with it), vllm, sglang; "
                         "off (the default) adds nothing (docs/grammar.md)")
    sv.add_argument("--upstream-transport", choices=["own", "httpx"], default="own",
                    help="how the upstream is reached: the server's own HTTP/1.1 transport (default, faster) "
                         "or httpx's")
    sv.add_argument("--rulesets", metavar="DIR", help="a folder of ruleset files (*.json) a campaign started on the "
                    "pages (/ui/new) may use (default: the bundled sample rulesets); a ruleset can also be uploaded "
                    "there")
    # who may talk to the server (docs/security.md)
    sv.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                    help="another name clients reach the server by (a LAN name, the name a proxy passes on), "
                         "beside localhost, IP addresses and --host; `*` for any. Repeatable")
    sv.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                    help="a web page's origin that may call the server from the browser and read its answers "
                         "(CORS), e.g. SillyTavern's http://127.0.0.1:8000 for its extension. Repeatable")
    sv.add_argument("--trust-proxy", nargs="?", const="127.0.0.1,::1", metavar="ADDRESSES",
                    help="believe X-Forwarded-Proto and X-Forwarded-For from a proxy at these addresses "
                         "(comma-separated IPs or networks; alone: this machine). The sign-in cookie is then "
                         "Secure behind https")
    sv.add_argument("--upstream-model", metavar="MODEL", help="the model sent upstream for a request whose model is "
                    "a campaign's (tagengine:NAME, as /v1/models lists them; default: the first the upstream lists)")
    sv.add_argument("--user-header", metavar="HEADER", help="the request header that names the chat app's user "
                    "(Open WebUI: X-OpenWebUI-User-Id): each campaign is then one user's, and other users' requests "
                    "neither see nor move it (docs/security.md)")
    sv.set_defaults(func=cmd_serve)


def add_sessions(ss: argparse.ArgumentParser) -> None:
    ss_sub = ss.add_subparsers(dest="sessions_command", required=True, parser_class=ArgParser)
    end = ss_sub.add_parser("end", help="sign every browser out of the pages of `serve --api-key` (a new secret "
                            "in the data folder; a running server reads it at the next page)")
    end.add_argument("--data", metavar="DIR", help="the server's data folder (default: the user data folder)")
    end.set_defaults(func=cmd_sessions_end)


def without_httpx_command_line() -> None:
    """Keep httpx's own command line (`httpx._main`) out of this process: httpx imports it whenever click, rich
    and pygments are installed (a development environment, or anything that brought rich along), 3.3 MB of
    modules a server never calls (PF-48). A None in `sys.modules` makes that import fail as httpx expects when
    they are missing: its `httpx.main` then says so, in this process only. Nothing is done when httpx's command
    line is loaded already (a test, a program that serves from within)."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: the import is refused


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    without_httpx_command_line()  # before the server's modules import httpx
    from ..server.guard.origins import allowed_origins
    from ..server.main import serve
    from ..server.memory.store import default_data_dir
    from ..server.options import Options

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        err.write(f"tagengine serve: listening on {args.host}, beyond this machine\n")
    try:
        allowed_origins(args.allow_origin)
    except ValueError as e:
        raise Usage(f"tagengine serve: {e}") from None
    opts = Options(upstream=args.upstream, data=Path(args.data) if args.data else default_data_dir(),
                   campaign=args.campaign, api_key=args.api_key, context=args.context, timeout=args.timeout,
                   count_with_upstream=args.count_with_upstream, hide_tags=args.hide_tags, keep=args.keep,
                   settle_checks=args.settle_checks, upstream_transport=args.upstream_transport, host=args.host,
                   grammar=args.grammar,
                   allow_host=tuple(args.allow_host), allow_origin=tuple(args.allow_origin),
                   trust_proxy=args.trust_proxy, upstream_model=args.upstream_model, user_header=args.user_header,
                   rulesets=Path(args.rulesets) if args.rulesets else _bundled_rulesets())
    return serve(opts, args.host, args.port, err)


def cmd_sessions_end(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..server.guard.sessions import SECRET_FILE, end_all
    from ..server.memory.store import default_data_dir

    folder = Path(args.data) if args.data else default_data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    end_all(folder)  # an OSError reaches `run`, which names it (exit 1)
    out.write(f"every sign-in to the pages ended: a new secret in {folder / SECRET_FILE}\n")
    return 0


def _open_store(args: argparse.Namespace) -> Store:
    from ..server.memory.store import Store, default_data_dir

    return Store(args.data or default_data_dir())


def _bundled_rulesets() -> Path:
    """serve's default --rulesets: the bundled sample rulesets, so /ui/new has rulesets to offer (PK-4)."""
    from ..samples import samples_dir

    return samples_dir() / "rulesets"


def cmd_campaign_new(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..server.memory.campaigns import new_campaign

    sample = _sample_start(args)
    ruleset, state, seed = sample or (args.ruleset, args.state, args.seed)
    if (state is None) == (not args.characters):
        raise Usage("tagengine campaign new: name the characters, or give --state FILE (not both)")
    store = _open_store(args)
    try:
        if sample is not None:
            ruleset = _kept_sample(store.folder, Path(ruleset))
        start = None if state is None else _state_file(state, err)
        row = new_campaign(store, args.name, ruleset, args.characters or (), seed, start=start)
        if args.owner:
            store.claim(row.name, args.owner)
    except ValueError as e:
        err.write(f"tagengine campaign new: {e}\n")
        return 1
    finally:
        store.close()
    return said_made(row, out)


def _sample_start(args: argparse.Namespace) -> tuple[str, str | None, str | None] | None:
    """For `campaign new NAME SAMPLE [CHARACTER...]`, where no file is at SAMPLE and a bundled ruleset has that name
    (PK-3): its ruleset, the start state and the dice's seed; None for a ruleset file. With no character
    and no --state the start is the sample's own state, with dice of its own unless --seed is given (as a campaign
    of blank characters has, S-13): two campaigns from one sample do not roll the same dice."""
    import secrets

    from .. import samples

    if Path(args.ruleset).exists():
        return None
    found = samples.sample_ruleset(args.ruleset)
    if found is None:
        if "/" in args.ruleset or "." in args.ruleset or os.sep in args.ruleset:
            return None  # a file's path: reading it names it (exit 1)
        raise Usage(f"tagengine campaign new: {args.ruleset}: no such file, nor a bundled ruleset (those are "
                    f"{', '.join(samples.ruleset_names())}: `tagengine samples`)")
    ruleset, start = found
    if args.state is not None or args.characters:
        return str(ruleset), args.state, args.seed
    if start is None:
        raise Usage(f"tagengine campaign new: the sample {args.ruleset} has no start state: name the characters")
    return str(ruleset), str(start), args.seed or secrets.token_hex(8)


def _kept_sample(data: Path, ruleset: Path) -> str:
    """A copy of a bundled ruleset in the data folder, named by its digest as the pages keep an uploaded one
    (`rulesets/<sha256>.json`, routes/campaign_pages.py): a campaign reads its ruleset file again and again, and
    the installed package's own copy moves or changes when tagengine is upgraded or reinstalled (PK-3)."""
    from ..files import read_file
    from ..server.limits import MAX_RULESET_FILE
    from ..server.memory.campaigns import kept_ruleset

    return str(kept_ruleset(data, read_file(ruleset, MAX_RULESET_FILE)))


def _state_file(state_file: str, err: TextIO) -> Callable[[Ruleset], GameState]:
    """A campaign's start read from a state file as `apply` reads one, its warnings on `err`."""
    from ..state import GameState

    def start(rs: Ruleset) -> GameState:
        state = GameState.load(rs, state_file)
        for w in state.warnings:
            err.write(f"{state_file}: {w} (warning)\n")
        return state

    return start


def cmd_campaign_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    store = _open_store(args)
    try:
        for row in store.campaigns():
            out.write(f"{row.name}\t{row.ruleset}\t{row.characters}\n")
    finally:
        store.close()
    return 0


def cmd_campaign_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..errors import NotFoundError

    store = _open_store(args)
    try:
        row = store.campaign_row(args.name)
    except NotFoundError as e:
        err.write(f"tagengine campaign show: {e}\n")
        return 1
    finally:
        store.close()
    print_json({"name": row.name, "ruleset": row.ruleset, "sha256": row.digest, "start": json.loads(row.start)}, out)
    return 0


def cmd_campaign_remove(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..errors import NotFoundError
    from ..server.memory.campaigns import remove_campaign

    store = _open_store(args)
    try:
        row, removed = remove_campaign(store, args.name)
    except NotFoundError as e:
        err.write(f"tagengine campaign remove: {e}\n")
        return 1
    finally:
        store.close()
    kept = "removed too" if removed is not None else ("kept (another campaign uses it, or it is not the data "
                                                      "folder's own)")
    out.write(f"campaign {row.name} removed; its ruleset file {row.ruleset} {kept}\n")
    return 0
