"""The command line's parser, built from one ordered table: each command's `add_<command>(sub)`, from the
module of its group, in the order `tagengine --help` lists them (DESIGN.md's order, the later commands after).

Every argparse line of tagengine is under `cli/`. Building the parser imports the group modules and
argparse only: each command imports the engine parts it needs when it runs (CL-3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import apply, demo, preview, replay, ruleset, serve, sheet, st, state
from .conventions import ArgParser

COMMANDS: tuple[Callable[[Any], None], ...] = (
    ruleset.add_check,
    state.add_state,
    apply.add_apply,
    apply.add_narrate,
    sheet.add_sheet,
    preview.add_preview,
    replay.add_replay,
    ruleset.add_schema,
    demo.add_demo,
    serve.add_campaign,
    serve.add_serve,
    st.add_st,
    sheet.add_roll,
)


def arg_parser() -> ArgParser:
    p = ArgParser(prog="tagengine", description="Apply Game Master tags to game state; build GM prompts.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=ArgParser)
    for add in COMMANDS:
        add(sub)
    return p
