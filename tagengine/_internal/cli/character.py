"""`tagengine character set|form`: a character's or the party's sheet changed from the command line, through the
same checks as the sheet editor (docs/editor.md, decisions ED-12), and the editor's form as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .conventions import ArgParser, Usage, not_an_input, print_json

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_character(ch: ArgumentParser) -> None:
    sub = ch.add_subparsers(dest="character_command", required=True, parser_class=ArgParser)
    st = sub.add_parser("set", help="set sheet values: `path=value` each, checked as the editor checks them",
                        description="Each CHANGE is `path=value` (`abilities.hunt=2`, `fields.oath=Never again`, "
                        "`lists.gear.0.bulk=2`, `states.stance=reckless`, `marks.harm.2=tear`), or a row of a list "
                        "`add:lists.gear`, `move:lists.gear.2=0`, `delete:lists.gear.2`, `roll:lists.gear.0.bulk`. "
                        "Every problem is printed as `path: code: message` and nothing is written (exit 1).")
    st.add_argument("ruleset")
    st.add_argument("state")
    st.add_argument("words", nargs="+", metavar="NAME CHANGE", help="the character, then the changes (with "
                    "--party: the changes only)")
    st.add_argument("--party", action="store_true", help="change the party sheet instead of a character's")
    st.add_argument("--opened", type=int, metavar="REVISION", help="with --party: the revision the edit was opened "
                    "at; refused when the party sheet has moved on since (PARTY-37)")
    st.add_argument("--state-out", metavar="FILE", help="write the new state here (it may be STATE itself) instead "
                    "of printing it")
    st.set_defaults(func=cmd_character_set, short_lived=True)
    fm = sub.add_parser("form", help="the sheet editor's form for a character or the party, as JSON")
    fm.add_argument("ruleset")
    fm.add_argument("state")
    fm.add_argument("name", nargs="?", help="the character (leave it out with --party)")
    fm.add_argument("--party", action="store_true", help="the party sheet's form")
    fm.set_defaults(func=cmd_character_form, short_lived=True)


def cmd_character_set(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..commands.sheet_edits import edit_party, edit_sheet
    from ..sheet.edit_paths import parse_change
    from .inputs import load_pair

    if args.opened is not None and not args.party:
        raise Usage("tagengine character set: --opened goes with --party")
    name, words = (None, args.words) if args.party else (args.words[0], args.words[1:])
    if not words:
        raise Usage("tagengine character set: give at least one change, `path=value`")
    if args.state_out:
        not_an_input(args.state_out, {"ruleset": args.ruleset}, "character set")
    rs, state = load_pair(args.ruleset, args.state, err)
    changes = [parse_change(w) for w in words]
    edited = (edit_party(rs, state, changes, opened_at=args.opened) if name is None
              else edit_sheet(rs, state, name, changes))
    if not edited.ok:  # every problem as `tagengine check` prints one, and nothing written
        for p in edited.problems:
            err.write(f"{p}\n")
        return 1
    if args.state_out:
        edited.state.save(args.state_out)
        rolls = "".join(f"; {path} rolled {total}" for path, total in edited.rolled)
        n = len(edited.changes)
        out.write(f"{name or 'party'}: {n} change{'s' if n != 1 else ''}{rolls}\n")
    else:
        out.write(edited.state.dumps())
    return 0


def cmd_character_form(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..sheet.form import edit_form
    from .inputs import load_pair

    if args.party == (args.name is not None):
        raise Usage("tagengine character form: name a character, or give --party")
    rs, state = load_pair(args.ruleset, args.state, err)
    print_json(edit_form(rs, state, None if args.party else args.name).to_json(), out)
    return 0
