"""`tagengine state new RULESET NAME...`: state files."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .conventions import ArgParser, not_an_input

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_state(st: ArgumentParser) -> None:
    st_sub = st.add_subparsers(dest="state_command", required=True, parser_class=ArgParser)
    new = st_sub.add_parser("new", help="a new state: characters at their start values")
    new.add_argument("ruleset")
    new.add_argument("names", nargs="+", metavar="NAME")
    new.add_argument("-o", "--output", help="write the state here instead of stdout")
    new.add_argument("--seed", help="seed the dice (default: derived from the new state's content)")
    new.set_defaults(func=cmd_state_new, short_lived=True)


def cmd_state_new(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..ruleset import Ruleset
    from ..state import GameState

    rs = Ruleset.load(args.ruleset)
    state = GameState.new(rs, args.names, seed=args.seed)
    if args.output:
        not_an_input(args.output, {"ruleset": args.ruleset}, "state new")
        state.save(args.output)
    else:
        out.write(state.dumps())
    return 0
