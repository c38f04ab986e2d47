"""What every command of the command line follows: a usage error is exit 2 (`Usage`, raised by `ArgParser`
for a bad command line), numbers are checked by their argument type, an output is never one of the inputs
(F-3), and `--json` prints one way.

Imported to build the parser, so it imports nothing of the engine.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

from ..files import same_file


class Usage(Exception):
    """A usage error: exit 2."""


class ArgParser(argparse.ArgumentParser):
    """argparse's parser, raising `Usage` where argparse would print and exit, so `run` returns 2."""

    def error(self, message: str) -> NoReturn:
        raise Usage(f"{self.prog}: {message}")


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
