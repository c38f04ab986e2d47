"""A folder of invalid rulesets, each with the exact `tagengine check` lines it must print (DEC-24).

Regenerate after an intended change with `UPDATE_GOLDEN=1 ./dev test tests/test_golden_invalid.py`,
then read the diff.
"""

from __future__ import annotations

import io
import os

import pytest

from conftest import GOLDEN
from tagengine._internal.cli import run

FOLDER = GOLDEN / "invalid-rulesets"
CASES = sorted(FOLDER.glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_invalid_ruleset_lines(path):
    out, err = io.StringIO(), io.StringIO()
    assert run(["check", str(path)], out, err) == 1
    expected = path.with_suffix(".txt")
    if os.environ.get("UPDATE_GOLDEN"):
        expected.write_text(out.getvalue())
    assert out.getvalue() == expected.read_text()


def test_folder_is_not_empty():
    assert len(CASES) >= 6
