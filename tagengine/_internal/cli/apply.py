"""`tagengine apply` (a reply's tags applied to a state), `tagengine narrate` (a reply as the player reads it) and
`tagengine grammar` (the grammar a reply to a state is written in, for a model server: docs/grammar.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .conventions import not_an_input, print_json
from .inputs import load_pair, read_reply

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_apply(a: ArgumentParser) -> None:
    a.add_argument("ruleset")
    a.add_argument("state")
    a.add_argument("reply", nargs="?", default="-", help="a reply file, or - for stdin (the default)")
    a.add_argument("--state-out", metavar="FILE", help="write the new state here")
    a.add_argument("--json", action="store_true", help='print {"text", "state", "receipts"}')
    a.set_defaults(func=cmd_apply, short_lived=True)


def add_narrate(n: ArgumentParser) -> None:
    n.add_argument("reply", nargs="?", default="-", help="a reply file, or - for stdin (the default)")
    n.set_defaults(func=cmd_narrate, short_lived=True)


def cmd_apply(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..commands import apply_reply

    if args.state_out:  # onto the input state is fine: the write is atomic (F-3)
        not_an_input(args.state_out, {"ruleset": args.ruleset, "reply": args.reply}, "apply")
    rs, state = load_pair(args.ruleset, args.state, err)
    applied = apply_reply(rs, state, read_reply(args.reply))
    if args.state_out:
        applied.state.save(args.state_out)
    if args.json:
        print_json({"text": applied.text, "state": applied.state.to_json(),
                    "receipts": [r.to_json() for r in applied.receipts]}, out)
    else:
        out.write(applied.text)
    return 0


def cmd_narrate(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..tags import narration

    out.write(narration(read_reply(args.reply)))
    return 0


def add_grammar(g: ArgumentParser) -> None:
    from ..tags.grammar_forms import FORMATS

    g.add_argument("ruleset")
    g.add_argument("state")
    g.add_argument("--format", choices=FORMATS, default="gbnf",
                   help="GBNF (llama.cpp, KoboldCpp, vLLM, SGLang), Lark, or llguidance's Lark (default: gbnf)")
    g.set_defaults(func=cmd_grammar, short_lived=True)


def cmd_grammar(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..commands.reply_grammar import reply_grammar

    rs, state = load_pair(args.ruleset, args.state, err)
    out.write(reply_grammar(rs, state, args.format))
    return 0
