"""Golden evaluated sheets for every sample character (`tagengine sheet`, text and --json)."""

from __future__ import annotations

import io
import json
import os

import pytest

from conftest import GOLDEN, SAMPLES
from tagengine._internal.cli import run

FOLDER = GOLDEN / "sheets"
CASES = []
for state_path in sorted((SAMPLES / "states").glob("*.json")):
    for name in json.loads(state_path.read_text())["gameCharacterCards"]:
        CASES.append((state_path.stem, name))


def check(path, text):
    if os.environ.get("UPDATE_GOLDEN"):
        FOLDER.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("ruleset", "name"), CASES, ids=[f"{r}-{n}" for r, n in CASES])
def test_golden_sheet(ruleset, name):
    args = [str(SAMPLES / "rulesets" / f"{ruleset}.json"), str(SAMPLES / "states" / f"{ruleset}.json"), name]
    for suffix, extra in ((".txt", []), (".json", ["--json"])):
        out, err = io.StringIO(), io.StringIO()
        assert run(["sheet", *args, *extra], out, err) == 0, err.getvalue()
        assert err.getvalue() == ""  # the sample states load without warnings
        check(FOLDER / f"{ruleset}-{name.lower()}{suffix}", out.getvalue())


def test_golden_party_sheet():
    out = io.StringIO()
    assert run(["sheet", str(SAMPLES / "rulesets" / "blades-like.json"), str(SAMPLES / "states" / "blades-like.json"),
                "--party"], out, io.StringIO()) == 0
    check(FOLDER / "blades-like-party.txt", out.getvalue())


def test_every_sample_ruleset_has_a_sample_state():
    stems = {p.stem for p in (SAMPLES / "rulesets").glob("*.json")}
    assert stems == {p.stem for p in (SAMPLES / "states").glob("*.json")}
