"""`tagengine st extension --install DIR` (decision STX-1): the SillyTavern extension copied into a
SillyTavern user's `extensions/` folder, the offline way to install it (SillyTavern's own *Install extension*
clones the repository from its Git URL instead; its root `manifest.json` points into sillytavern/extension/).

SillyTavern serves `<data root>/<user>/extensions/<folder>/` at `/scripts/extensions/third-party/<folder>/` and
loads the folder's `manifest.json` at the page's next load. The copy is made beside the target and renamed into
place, so a page never loads half an extension; an earlier copy of ours is replaced (an update), anything else
in the way is left alone and named.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from ..records import frozen
from ..resources import resource_dir

FOLDER = "tagengine"  # the folder's name under extensions/, as an install from the repository's Git URL names it
FILES = ("manifest.json", "index.js", "connection.js", "panel.js", "receipts.js", "reasons.js", "style.css")


def extension_dir() -> Path:
    """The extension's files: sillytavern/extension/ of a checkout, tagengine/sillytavern/extension/ of a wheel."""
    return resource_dir("sillytavern") / "extension"


@frozen
class NotInstalled:
    """Why the extension was not installed: the path at fault and what to do (errors as data)."""

    path: str
    message: str


def extensions_folder(given: Path) -> Path | NotInstalled:
    """The `extensions/` folder `given` names: a SillyTavern user's folder (data/default-user) that holds one,
    or the `extensions/` folder itself."""
    if not given.is_dir():
        return NotInstalled(str(given), "no such folder: give a SillyTavern user's folder (data/default-user)")
    if given.name == "extensions":
        return given
    if (given / "extensions").is_dir():
        return given / "extensions"
    return NotInstalled(str(given), "not a SillyTavern user's folder (it has no extensions/ folder): give "
                        "data/<user> under SillyTavern's data root (data/default-user by default), or its extensions/")


def ours(folder: Path) -> bool:
    """Whether `folder` holds a copy of this extension that an install may replace (not a Git clone: that one
    SillyTavern updates itself)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("display_name") == "tagengine" and not (folder / ".git").exists()


def install(given: Path) -> Path | NotInstalled:
    """Copy the extension into `given`'s extensions/ folder as `tagengine/`; the folder written, or why not."""
    where = extensions_folder(given)
    if isinstance(where, NotInstalled):
        return where
    target = where / FOLDER
    if target.exists() and not ours(target):
        why = ("installed from Git (SillyTavern's Install extension): update it in SillyTavern's Extensions panel"
               if (target / ".git").exists() else "a folder that is not this extension is in the way")
        return NotInstalled(str(target), why)
    source = extension_dir()
    fresh: Path | None = None
    try:
        fresh = Path(tempfile.mkdtemp(prefix=".tagengine-", dir=where))
        fresh.chmod(0o755)  # mkdtemp's is 0700: SillyTavern may run as another user (a container)
        for name in FILES:
            shutil.copyfile(source / name, fresh / name)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=".tagengine-old-", dir=where))
            os.replace(target, old / FOLDER)
            os.replace(fresh, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(fresh, target)
        fresh = None
    except OSError as e:
        return NotInstalled(str(e.filename or target), e.strerror or str(e))
    finally:
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
    return target
