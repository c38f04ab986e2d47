"""The SillyTavern screenshots of docs/sillytavern.md, made again: `python tests/st_screens.py` runs the browser
tests that take them (tests/test_st_walk.py, the walk at a desktop's width and at 390x844, and
tests/test_st_extension_ui.py's panel and phone tests) and copies each screenshot the doc shows from
tests/output/screens/ into docs/screens/. A screenshot the doc shows that no test took is named and the script exits
1, so the doc never shows a picture of an older extension than the one it describes.

Run it with the checkout's environment (`./dev` made `.venv`): `.venv/bin/python tests/st_screens.py`. It needs
SillyTavern 1.19.0 and Chromium, as `./dev test` installs them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "sillytavern.md"
TAKEN = ROOT / "tests" / "output" / "screens"
SHOWN = ROOT / "docs" / "screens"
TESTS = ["tests/test_st_walk.py",
         "tests/test_st_extension_ui.py::test_a_checks_dice_card_and_a_hand_edit_through_a_regenerate",
         "tests/test_st_extension_ui.py::test_the_panel_at_a_phones_width"]


def shown_in_doc() -> list[str]:
    """The screenshots docs/sillytavern.md shows: `![...](screens/NAME.png)`."""
    return re.findall(r"\]\(screens/([\w.-]+\.png)\)", DOC.read_text(encoding="utf-8"))


def main() -> int:
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS], cwd=ROOT)
    if got.returncode != 0:
        print("the tests that take the screenshots failed: nothing copied", file=sys.stderr)
        return 1
    missing = []
    for name in shown_in_doc():
        if (TAKEN / name).is_file():
            shutil.copyfile(TAKEN / name, SHOWN / name)
            print(f"docs/screens/{name}")
        else:
            missing.append(name)
    for name in missing:
        print(f"{name}: docs/sillytavern.md shows it, and no test took it", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
