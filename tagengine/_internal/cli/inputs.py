"""What several commands read: a reply from a file or standard input, and a ruleset with its state.

The engine is imported inside the functions: this module is imported to build the parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..files import TooLarge, read_file, read_limited, standard_input

if TYPE_CHECKING:
    from ..ruleset import Ruleset
    from ..state import GameState

MAX_REPLY_BYTES = 4 * 1024 * 1024  # one model reply (F-5): far above any context window's worth of text


def stdin_of(stdin: TextIO | None) -> TextIO:
    """`stdin`, else the process's standard input: an OSError naming <stdin> when it is closed (F-12)."""
    return stdin or standard_input()


def read_reply(spec: str, stdin: TextIO | None = None) -> str:
    """A reply from a file or `-` (stdin), at most MAX_REPLY_BYTES, BOM dropped (F-5, F-6); bytes that
    are not UTF-8 pass through untouched."""
    if spec == "-":
        stream = stdin_of(stdin)
        buf = getattr(stream, "buffer", None)
        if buf is None:
            text = stream.read(MAX_REPLY_BYTES + 1)
            if len(text) > MAX_REPLY_BYTES:
                raise TooLarge("<stdin>", MAX_REPLY_BYTES)
            return text.removeprefix("\ufeff")
        data = read_limited(buf, MAX_REPLY_BYTES, "<stdin>")
    else:
        data = read_file(spec, MAX_REPLY_BYTES)
    return data.decode("utf-8", "surrogateescape")


def load_pair(ruleset: str, state: str, err: TextIO) -> tuple[Ruleset, GameState]:
    """The ruleset and a state of it; the state's warnings (values it had to drop, DEC-27) on `err`."""
    from ..ruleset import Ruleset
    from ..state import GameState

    rs = Ruleset.load(ruleset)
    game = GameState.load(rs, state)
    for w in game.warnings:
        err.write(f"{state}: {w} (warning)\n")
    return rs, game
