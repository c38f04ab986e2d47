"""What every command of the command line follows: a usage error is exit 2 (`Usage`, raised by `ArgParser`
for a bad command line), numbers are checked by their argument type, an output is never one of the inputs
(F-3), and `--json` prints one way.

Imported to build the parser, so it imports nothing of the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

from ..files import same_file

# `tagengine serve`'s key, read from the environment where the command line would show it to every user of the
# machine (the process list, the shell's history): `serve --api-key` and `openwebui install --api-key` default to it
API_KEY_VARIABLE = "TAGENGINE_API_KEY"


class Usage(Exception):
    """A usage error: exit 2."""


class ArgParser(argparse.ArgumentParser):
    """argparse's parser, raising `Usage` where argparse would print and exit, so `run` returns 2; its help
    formatter is `Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise Usage(f"{self.prog}: {message}")


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, given the terminal's width. argparse makes one for every argument declared,
    help or not, and without a width it imports `shutil` to ask, which pulls `bz2`, `lzma` and `zlib`: 2-4 ms of
    every command's start (PF-11, PF-18)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, without importing shutil: $COLUMNS, else the width of the
    terminal standard output is, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= `low` (a negative token budget is a usage error, F-7)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text} is below {low}")
        return value

    return parse


def not_an_input(output: str, inputs: dict[str, str | None], command: str) -> None:
    """Refuse writing onto a file the command reads (F-3): the input would be gone before it is read."""
    for what, path in inputs.items():
        if path and path != "-" and same_file(output, path):
            raise Usage(f"tagengine {command}: the output {output} is the {what} file; write it elsewhere")


def print_json(obj: Any, out: TextIO) -> None:
    """What every `--json` prints: indented, non-ASCII as it is."""
    out.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
