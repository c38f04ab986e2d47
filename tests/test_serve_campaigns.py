"""Issue 12: `tagengine campaign new|list|show` keep a campaign (ruleset path, its sha256, start state) in
the server's SQLite file; the server modules are not imported by the other commands."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys

from conftest import ROOT, SAMPLES
from tagengine._internal.cli import run
from tagengine._internal.tags import narration
from tagengine._internal.tags.vocabulary import VOCABULARY

BLADES = str(SAMPLES / "rulesets" / "blades-like.json")


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_campaign_new_list_show(tmp_path):
    data = str(tmp_path / "data")
    code, out, _ = call("campaign", "new", "heist", BLADES, "Cutter", "Lurk", "--data", data)
    assert code == 0 and "campaign heist" in out
    assert (tmp_path / "data" / "tagengine.sqlite3").exists()
    code, out, _ = call("campaign", "list", "--data", data)
    assert code == 0 and out.startswith("heist\t") and "Cutter, Lurk" in out
    code, out, _ = call("campaign", "show", "heist", "--data", data)
    doc = json.loads(out)
    assert doc["sha256"] == hashlib.sha256((SAMPLES / "rulesets" / "blades-like.json").read_bytes()).hexdigest()
    assert sorted(doc["start"]["gameCharacterCards"]) == ["Cutter", "Lurk"]


def test_campaign_errors_name_what_is_wrong(tmp_path):
    data = str(tmp_path / "data")
    assert call("campaign", "new", "heist", BLADES, "Cutter", "--data", data)[0] == 0
    code, _, err = call("campaign", "new", "heist", BLADES, "Cutter", "--data", data)
    assert code == 1 and "'heist' exists already" in err
    code, _, err = call("campaign", "new", "bad/name", BLADES, "Cutter", "--data", data)
    assert code == 1 and "'bad/name'" in err
    code, _, err = call("campaign", "show", "nope", "--data", data)
    assert code == 1 and "unknown campaign 'nope'; choose one of heist" in err
    code, _, err = call("campaign", "new", "x", str(tmp_path / "missing.json"), "Cutter", "--data", data)
    assert code == 1 and "missing.json" in err


def test_other_commands_do_not_import_the_server():
    code = ("import sys\nfrom tagengine._internal.cli import run\nimport io\n"
            "run(['narrate', '-'], io.StringIO(), io.StringIO())\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'httpx')"
            " or m.startswith('tagengine._internal.server')]\nprint(bad)\n")
    got = subprocess.run([sys.executable, "-c", code], input="hi", capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "[]"


GOLDEN_OUT = sorted((ROOT / "tests" / "golden" / "replies").glob("*.out.md"))


def test_st_regex_hides_every_tag_of_every_golden_reply_in_the_display():
    code, out, _ = call("st", "regex")
    script = json.loads(out)
    assert code == 0 and script["markdownOnly"] and not script["promptOnly"] and script["placement"] == [2]
    body, flags = script["findRegex"][1:].rsplit("/", 1)
    assert flags == "gi"
    hide = re.compile(body, re.IGNORECASE)
    for path in GOLDEN_OUT:
        text = path.read_text(encoding="utf-8")
        shown = hide.sub("", text)
        assert not VOCABULARY.opener.search(shown), path.name
        assert shown.split() == narration(text).split(), path.name  # the prose is all there
