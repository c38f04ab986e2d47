"""The command line's parser, from one ordered table of the commands: name, the line `tagengine --help` gives
it, and where its arguments are declared (`module:function`, a module of `cli/`). The order is `--help`'s:
DESIGN.md's, then the later commands.

The parser declares the arguments of only the command the command line names: only that command's module is
imported (so `--help` and `--version` import none, CL-3); it lists every command only where it may show them.
Every argparse line of tagengine is under `cli/`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .conventions import ArgParser

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("check", "validate a ruleset file; every problem as `path: code: message`", "ruleset:add_check"),
    ("state", "state files", "state:add_state"),
    ("apply", "apply the tags of a reply; print the rewritten reply", "apply:add_apply"),
    ("narrate", "print a reply with every tag hidden", "apply:add_narrate"),
    ("sheet", "print a character's evaluated sheet", "sheet:add_sheet"),
    ("preview", "the prompt the GM would get, with a token report", "preview:add_preview"),
    ("replay", "reprocess transcripts (JSONL, one chat per line)", "replay:add_replay"),
    ("schema", "JSON Schema of the file formats", "ruleset:add_schema"),
    ("demo", "the bundled walkthrough", "demo:add_demo"),
    ("samples", "the bundled samples (rulesets, start states, the SillyTavern GM card): list them, copy them out",
     "samples:add_samples"),
    ("campaign", "campaigns for `tagengine serve`: a ruleset and its start state", "serve:add_campaign"),
    ("serve", "the OpenAI-compatible middleware a chat app points at", "serve:add_serve"),
    ("sessions", "the sign-ins to the pages of `tagengine serve`: `sessions end` signs every browser out",
     "serve:add_sessions"),
    ("st", "the SillyTavern kit (docs/sillytavern.md)", "st:add_st"),
    ("openwebui", "the Open WebUI kit (docs/open-webui.md): the sheet Function, printed or installed",
     "openwebui:add_openwebui"),
    ("roll", "roll a character's check with the state's dice; print the dice card", "sheet:add_roll"),
    ("character", "set a character's or the party's sheet values, checked as the sheet editor checks them",
     "character:add_character"),
    ("grammar", "print the grammar a reply to a state is written in (GBNF, Lark): for a model server's `grammar`",
     "apply:add_grammar"),
)

_NAMES = frozenset(name for name, _, _ in COMMANDS)


def arg_parser(argv: Sequence[str]) -> ArgParser:
    """The parser for `argv`. Its command is the first word that is not an option: the top level has no
    option that takes a value."""
    chosen = next((a for a in argv if not a.startswith("-")), None)
    # Every command is listed where it can be shown (help, a word that names no command); else only the one
    # named is: a command's parser costs 0.2-0.3 ms to make, a fifth of a cold `tagengine narrate` in all (PF-44).
    listed = chosen not in _NAMES or any(a in ("-h", "--help") for a in argv)
    p = ArgParser(prog="tagengine", description="Apply Game Master tags to game state; build GM prompts.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=ArgParser)
    for name, help_line, where in COMMANDS:
        if not listed and name != chosen:
            continue
        command = sub.add_parser(name, help=help_line)
        if name == chosen:
            module, function = where.split(":")
            # the import statement's machinery, not importlib.import_module: `-X importtime` sees only that one
            getattr(__import__(f"{__package__}.{module}", fromlist=[function]), function)(command)
    return p
