"""A ruleset file's bytes, read within its bound: all a command whose ruleset is kept (kept.py) needs of the
file, so reading it imports none of the validation (`load.py`, the inspections, PF-43)."""

from __future__ import annotations

from pathlib import Path

from ..errors import Problem, RulesetError
from ..files import TooLarge, read_file

MAX_BYTES = 4 * 1024 * 1024


def ruleset_bytes(path: str | Path) -> bytes:
    """A ruleset file's bytes, BOM dropped; RulesetError when it cannot be read or is too large."""
    p = Path(path)
    try:
        return read_file(p, MAX_BYTES)
    except TooLarge:  # read no further than the limit (decision F-5)
        raise RulesetError([Problem("$", "too-large", f"the file is over {MAX_BYTES} bytes; a ruleset is at most "
                                    f"{MAX_BYTES} bytes", None)], str(p)) from None
    except OSError as e:
        raise RulesetError([Problem("$", "unreadable", f"cannot read {p}: {e.strerror}", str(p))], str(p)) from None
