"""A ruleset file's bytes, read within its bound: all a command whose ruleset is kept (kept.py) needs of the
file, so reading it imports none of the validation (`load.py`, the inspections, PF-43)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import Problem, RulesetError
from ..files import TooLarge, read_file

if TYPE_CHECKING:
    from pathlib import Path

MAX_BYTES = 4 * 1024 * 1024


def ruleset_bytes(path: str | Path) -> bytes:
    """A ruleset file's bytes, BOM dropped; RulesetError when it cannot be read or is too large."""
    try:
        return read_file(path, MAX_BYTES)
    except TooLarge:  # read no further than the limit (decision F-5)
        raise RulesetError([Problem("$", "too-large", f"the file is over {MAX_BYTES} bytes; a ruleset is at most "
                                    f"{MAX_BYTES} bytes", None)], _as_path_text(path)) from None
    except OSError as e:
        p = _as_path_text(path)
        raise RulesetError([Problem("$", "unreadable", f"cannot read {p}: {e.strerror}", p)], p) from None


def _as_path_text(path: str | Path) -> str:
    """The file as a problem names it: as a Path writes it (`./r.json` is `r.json`), pathlib imported only
    for a file that cannot be read (PF-44)."""
    from pathlib import Path

    return str(Path(path))
