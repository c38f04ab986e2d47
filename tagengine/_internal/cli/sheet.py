"""`tagengine sheet` (a character's or the party's evaluated sheet) and `tagengine roll` (a character's check,
rolled with the state's dice: the player's side of a `[check:]` tag)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .conventions import Usage, not_an_input, print_json
from .inputs import load_pair

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_sheet(sh: ArgumentParser) -> None:
    sh.add_argument("ruleset")
    sh.add_argument("state")
    sh.add_argument("name", nargs="?", help="the character (matched case-insensitively)")
    sh.add_argument("--party", action="store_true", help="the party sheet instead of a character")
    sh.add_argument("--json", action="store_true", help="print the evaluated sheet as JSON")
    sh.add_argument("--html", action="store_true", help="print the sheet as one self-contained HTML page")
    sh.set_defaults(func=cmd_sheet, short_lived=True)


def add_roll(ro: ArgumentParser) -> None:
    ro.add_argument("ruleset")
    ro.add_argument("state")
    ro.add_argument("name", help="the character")
    ro.add_argument("skill", help="a skill, or else a save or an ability, by id or label")
    ro.add_argument("--with", dest="with_ability", metavar="ABILITY", help="roll the skill with another ability")
    ro.add_argument("--dc", metavar="N", help="dice-sum: the number to reach; dice-pool: the target per die")
    ro.add_argument("--state-out", metavar="FILE", help="write the state, its dice moved on, here")
    ro.add_argument("--json", action="store_true", help="print the number, the record and the dice as JSON")
    ro.set_defaults(func=cmd_roll, short_lived=True)


def cmd_sheet(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..errors import NotFoundError
    from ..sheet import view_character, view_party
    from ..sheet.show import render_party, render_sheet, to_json

    rs, state = load_pair(args.ruleset, args.state, err)
    if args.party:
        sheet = view_party(rs, state)
        if sheet is None:
            err.write(f"{args.ruleset}: the ruleset has no party sheet\n")
            return 1
        text = render_party(rs, sheet)
    else:
        if args.name is None:
            raise Usage("tagengine sheet: give a character NAME or --party")
        try:
            sheet = view_character(rs, state, args.name)
        except NotFoundError:
            err.write(f"{args.state}: no character named {args.name!r}; the state has "
                      f"{', '.join(state.characters)}\n")
            return 1
        text = render_sheet(rs, sheet)
    if args.html:  # the game sheet page, self-contained
        from ..pages import sheet_html

        text = sheet_html(rs, state, [] if args.party else [sheet.name])
    if args.json:
        print_json(to_json(sheet), out)
    else:
        out.write(text)
    return 0


def cmd_roll(args: Namespace, out: TextIO, err: TextIO) -> int:
    """The same roll a check tag makes, printed as a dice card (CK-10). SKILL names a skill, else a save, else
    an ability; `--dc` is `dc` under dice-sum, `difficulty` under dice-pool. Exit 1 when the check is refused
    (`untrained`: the character cannot attempt it, UNTR-9)."""
    from ..commands.check import card, kind_named, roll_check

    if args.state_out:
        not_an_input(args.state_out, {"ruleset": args.ruleset}, "roll")
    rs, state = load_pair(args.ruleset, args.state, err)
    done = roll_check(rs, state, args.name, kind_named(rs, args.skill), args.skill, swap=args.with_ability,
                      dc=None if rs.dice_pool else args.dc, difficulty=args.dc if rs.dice_pool else None)
    if args.state_out and done.result.result == "ok":
        done.state.save(args.state_out)
    if args.json:
        print_json({"who": done.who, "result": done.result.result, "reason": done.result.reason,
                    "record": dict(done.result.record), "number": done.number.to_json() if done.number else None,
                    "faces": list(done.faces), "sides": done.sides, "target": done.target, "dc": done.dc,
                    "outcome": done.outcome, "dice": {"seed": done.state.dice.seed, "rolls": done.state.dice.rolls}},
                   out)
    else:
        (out if done.result.result == "ok" else err).write("\n".join(card(rs, done)) + "\n")
    return 0 if done.result.result == "ok" else 1
