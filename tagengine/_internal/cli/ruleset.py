"""`tagengine check RULESET` and `tagengine schema ruleset|state`: the file formats."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .conventions import print_json

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_check(c: ArgumentParser) -> None:
    c.add_argument("ruleset")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=cmd_check, short_lived=True)


def add_schema(sc: ArgumentParser) -> None:
    sc.add_argument("kind", choices=["ruleset", "state"])
    sc.set_defaults(func=cmd_schema, short_lived=True)


def cmd_check(args: Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 1 for a ruleset with problems: each on stdout (or in the JSON), their count on stderr."""
    from ..errors import RulesetError
    from ..ruleset import Ruleset

    try:
        rs = Ruleset.load(args.ruleset)
    except RulesetError as e:
        if args.json:
            print_json({"file": args.ruleset, "valid": False, "problems": [p.to_json() for p in e.problems],
                        "warnings": []}, out)
        else:
            for p in e.problems:
                out.write(f"{p}\n")
            err.write(f"{args.ruleset}: {len(e.problems)} problem(s)\n")
        return 1
    if args.json:
        print_json({"file": args.ruleset, "valid": True, "requires": rs.requires_text, "problems": [],
                    "warnings": [w.to_json() for w in rs.warnings]}, out)
    else:
        for w in rs.warnings:
            out.write(f"{w} (warning)\n")
        need = f"needs Capability API {rs.requires_text}" if rs.requires else "needs no Capability API version"
        out.write(f"{args.ruleset}: ok: {rs.name}; {need}\n")
    return 0


def cmd_schema(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..schema import schema

    print_json(schema(args.kind), out)
    return 0
