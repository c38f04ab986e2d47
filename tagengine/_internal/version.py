"""The installed version and the git commit it was built from, read only when asked (importlib.metadata costs 70 ms
at start-up). Stdlib only: the wheel's build hook (hatch_build.py) loads this file by its path to call `git_commit`,
so the commit is read one way at build time and at run time (decision PK-5)."""

from __future__ import annotations

import subprocess
from pathlib import Path

COMMIT_FILE = "commit.txt"  # written beside this module into the wheel by hatch_build.py; never in the source tree
_HERE = Path(__file__).resolve().parent


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("tagengine")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0.0.0+source"


def commit() -> str | None:
    """The commit this tagengine is: the one the wheel was built from (its COMMIT_FILE), else, running from a
    checkout (an editable install, `./dev`), the checkout's own, read from git now; None where neither is known
    (built from an sdist, no git)."""
    try:
        return (_HERE / COMMIT_FILE).read_text(encoding="utf-8").strip() or None
    except OSError:
        return git_commit(_HERE.parent.parent)


def git_commit(root: Path) -> str | None:
    """`root`'s commit, `+changes` after it when tracked files differ from it; None when `root` is not the top of
    a git work tree (an unpacked sdist inside some other repository must not name that repository's commit), or
    git is missing or fails."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve():
        return None
    head = git("rev-parse", "HEAD")
    if not head:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+changes" if changed else "")


def version_line() -> str:
    """What `tagengine --version` prints: `tagengine 0.1.0 (commit 1a2b3c4d5e6f)`, the commit shortened to 12."""
    c = commit()
    if c is None:
        return f"tagengine {version()}"
    head, plus, rest = c.partition("+")
    return f"tagengine {version()} (commit {head[:12]}{plus}{rest})"
