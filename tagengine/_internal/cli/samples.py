"""`tagengine samples`: what the package bundles (`samples list`, also plain `tagengine samples`) and a
copy of some of it for a ruleset author to start from (`samples copy`). The files are `_internal/samples.py`'s.

Exit codes as everywhere: 0 ok; 1 a file that cannot be read or written, or a copy that would overwrite a
different file (named, kept, the rest copied: rerun with --force to replace it); 2 a name that is no sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .conventions import ArgParser, Usage, print_json

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def add_samples(sp: ArgumentParser) -> None:
    sp.set_defaults(func=cmd_samples_list, json=False, short_lived=True)
    sub = sp.add_subparsers(dest="samples_command", parser_class=ArgParser)
    ls = sub.add_parser("list", help="every bundled sample: its name, what it is, where it is (the default)")
    ls.add_argument("--json", action="store_true", help="a JSON list: name, kind, about, path")
    ls.set_defaults(func=cmd_samples_list, short_lived=True)
    cp = sub.add_parser("copy", help="copy samples out to edit: into ./samples/ by default, named as listed "
                        "(samples/rulesets/blades-like.json), so the docs' commands work there as written")
    cp.add_argument("names", nargs="*", metavar="NAME", help="a sample (rulesets/blades-like.json), a kind "
                    "(rulesets), or a ruleset's short name (blades-like: the ruleset and its start state); none: all")
    cp.add_argument("--to", default="samples", metavar="DIR", help="the folder to copy into (default: ./samples)")
    cp.add_argument("--force", action="store_true", help="replace a file that is there with other content "
                    "(default: keep it, say so, exit 1)")
    cp.set_defaults(func=cmd_samples_copy, short_lived=True)


def cmd_samples_list(args: Namespace, out: TextIO, err: TextIO) -> int:
    from .. import samples

    every = samples.bundled()
    if args.json:
        print_json([{"name": s.name, "kind": s.kind, "about": s.about, "path": str(s.path)} for s in every], out)
        return 0
    out.write(f"bundled in {samples.samples_dir()}\n")
    for kind, what in samples.KINDS:
        out.write(f"\n{kind}/: {what}\n")
        for s in (s for s in every if s.kind == kind):
            out.write(f"  {s.name:<32} {s.about}\n")
    out.write("\ntagengine samples copy NAME...   copies them into ./samples/ (--to DIR) to edit\n")
    return 0


def cmd_samples_copy(args: Namespace, out: TextIO, err: TextIO) -> int:
    from .. import samples

    picked, unknown = samples.chosen(args.names)
    if unknown:
        known = ", ".join([kind for kind, _ in samples.KINDS] + samples.ruleset_names())
        raise Usage(f"tagengine samples copy: no sample named {', '.join(unknown)} (`tagengine samples list`; "
                    f"or one of {known})")
    status = 0
    for c in samples.copy_out(picked, Path(args.to), replace=args.force):
        if c.outcome == "kept":
            status = 1
            err.write(f"tagengine samples copy: {c.target}: there with other content, kept (--force replaces it)\n")
        else:
            out.write(f"{c.target}" + ("  (already there)\n" if c.outcome == "same" else "\n"))
    return status
