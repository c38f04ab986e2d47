"""The bundled samples (issue 41, decisions PK-1..PK-5): found through the package's resources, listed and copied
out by `tagengine samples`, a campaign made from one, serve's default `--rulesets`, and `--version`'s commit. The
wheel itself (installed, from an empty folder) is tests/test_wheel.py's."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES
from tagengine._internal import samples
from tagengine._internal.cli import run
from tagengine._internal.server.upstream.demo import DemoCheck, DemoGame
from tagengine._internal.version import git_commit, version_line


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_checkout_reads_its_own_samples_folder():
    """One source (PK-1): in a checkout the repository's samples/, the files the tests and the docs name."""
    assert samples.samples_dir() == SAMPLES
    assert samples.sample_path("transcripts", "demo-game.json") == SAMPLES / "transcripts" / "demo-game.json"


def test_every_file_of_a_kind_is_bundled_and_every_folder_is_a_kind():
    """A folder of samples/ that is no kind would not ship (pyproject's force-include names the kinds): a new one
    must be added to KINDS and pyproject.toml together."""
    kinds = [kind for kind, _ in samples.KINDS]
    assert sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) == sorted(kinds)
    pyproject = (ROOT / "pyproject.toml").read_text()
    for kind in kinds:
        assert f'"samples/{kind}" = "tagengine/samples/{kind}"' in pyproject
    names = [s.name for s in samples.bundled()]
    assert names == [f"{k}/{p.name}" for k in kinds for p in sorted((SAMPLES / k).iterdir())]
    assert samples.ruleset_names() == ["blades-like", "ember-roads", "fifth-like", "gravewatch"]


def test_the_demo_upstream_reads_the_bundled_games():
    assert DemoGame.load(None).replies and DemoCheck.load(None).reply


def test_samples_lists_each_file_with_what_it_is():
    code, out, _ = call("samples")
    assert code == 0 and out.splitlines()[0] == f"bundled in {SAMPLES}"
    assert re.search(r"rulesets/blades-like\.json +Blades-like Crew", out)
    assert re.search(r"states/gravewatch\.json +characters Mira, Bram", out)
    assert re.search(r"sillytavern/game-master\.json +Game Master", out)
    assert call("samples", "list")[1] == out
    code, out, _ = call("samples", "list", "--json")
    docs = json.loads(out)
    assert code == 0 and {"name": "rulesets/gravewatch.json", "kind": "rulesets", "about": "Gravewatch",
                          "path": str(SAMPLES / "rulesets" / "gravewatch.json")} in docs


def test_samples_copy_by_short_name_kind_and_file(tmp_path: Path):
    to = tmp_path / "mine"
    code, _, err = call("samples", "copy", "blades-like", "sillytavern", "transcripts/demo-game.json",
                          "--to", str(to))
    assert code == 0, err
    copied = sorted(str(p.relative_to(to)) for p in to.rglob("*") if p.is_file())
    assert copied == ["rulesets/blades-like.json", "sillytavern/game-master.json", "states/blades-like.json",
                      "transcripts/demo-game.json"]
    sample = SAMPLES / "rulesets" / "blades-like.json"
    assert (to / "rulesets" / "blades-like.json").read_bytes() == sample.read_bytes()
    assert call("check", str(to / "rulesets" / "blades-like.json"))[0] == 0


def test_samples_copy_defaults_to_everything_into_samples_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The default target is ./samples, so the docs' `samples/rulesets/...` paths work where it ran (PK-2)."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = call("samples", "copy")
    assert code == 0 and len(out.splitlines()) == len(samples.bundled())
    assert (tmp_path / "samples" / "transcripts" / "crew-night.jsonl").is_file()
    code, out, _ = call("samples", "copy")  # again: every file already there, nothing written
    assert code == 0 and out.count("(already there)") == len(samples.bundled())


def test_samples_copy_keeps_an_authors_edits_unless_forced(tmp_path: Path):
    edited = tmp_path / "rulesets" / "blades-like.json"
    edited.parent.mkdir()
    edited.write_text('{"mine": true}')
    code, _, err = call("samples", "copy", "blades-like", "--to", str(tmp_path))
    assert code == 1 and f"{edited}: there with other content, kept (--force replaces it)" in err
    assert edited.read_text() == '{"mine": true}' and (tmp_path / "states" / "blades-like.json").is_file()
    code, _, _ = call("samples", "copy", "blades-like", "--to", str(tmp_path), "--force")
    assert code == 0 and edited.read_bytes() == (SAMPLES / "rulesets" / "blades-like.json").read_bytes()


def test_samples_copy_of_an_unknown_name_is_a_usage_error(tmp_path: Path):
    code, _, err = call("samples", "copy", "blades", "--to", str(tmp_path))
    assert code == 2 and "no sample named blades" in err and "blades-like" in err
    assert not list(tmp_path.iterdir())


def test_a_campaign_from_a_sample_starts_from_its_state_with_its_own_dice(tmp_path: Path):
    data = tmp_path / "data"
    code, out, err = call("campaign", "new", "heist", "blades-like", "--data", str(data))
    assert code == 0, err
    assert "Cutter, Lurk" in out
    kept = next((data / "rulesets").glob("*.json"))  # the copy the campaign names (PK-3)
    assert kept.read_bytes() == (SAMPLES / "rulesets" / "blades-like.json").read_bytes()
    assert str(kept) in out
    code, out, _ = call("campaign", "show", "heist", "--data", str(data))
    start = json.loads(out)["start"]
    sample = json.loads((SAMPLES / "states" / "blades-like.json").read_text())
    for who, card in sample["gameCharacterCards"].items():  # the sample's sheets, as the state writer writes them
        assert {k: start["gameCharacterCards"][who][k] for k in card} == card
    assert call("campaign", "new", "again", "blades-like", "--data", str(data))[0] == 0
    again = json.loads(call("campaign", "show", "again", "--data", str(data))[1])["start"]
    assert again["rulesetDice"]["seed"] != start["rulesetDice"]["seed"]
    assert len(list((data / "rulesets").glob("*.json"))) == 1  # one copy per ruleset's bytes
    seeded = call("campaign", "new", "seeded", "ember-roads", "--seed", "abc", "--data", str(data))
    assert seeded[0] == 0 and "Mira, Tobin" in seeded[1]
    shown = json.loads(call("campaign", "show", "seeded", "--data", str(data))[1])["start"]
    assert shown["rulesetDice"] == {"rolls": 0, "seed": "abc"}


def test_a_campaign_from_a_sample_with_characters_named_or_a_state(tmp_path: Path):
    data = tmp_path / "data"
    code, out, err = call("campaign", "new", "blank", "gravewatch", "Ash", "--data", str(data))
    assert code == 0 and out.rstrip().endswith(", Ash"), err
    state = SAMPLES / "states" / "gravewatch.json"
    code, out, err = call("campaign", "new", "own", "gravewatch", "--state", str(state), "--data", str(data))
    assert code == 0 and out.rstrip().endswith("Mira, Bram"), err


def test_a_ruleset_that_is_neither_a_file_nor_a_sample(tmp_path: Path):
    data = str(tmp_path / "data")
    code, _, err = call("campaign", "new", "x", "blades", "Cutter", "--data", data)
    assert code == 2 and "blades: no such file, nor a bundled ruleset" in err and "blades-like" in err
    code, _, err = call("campaign", "new", "x", str(tmp_path / "gone.json"), "Cutter", "--data", data)
    assert code == 1 and "gone.json" in err  # a path is a file's, named as before
    code, _, err = call("campaign", "new", "x", str(SAMPLES / "rulesets" / "gravewatch.json"), "--data", data)
    assert code == 2 and "name the characters" in err  # a file has no start state to take


def test_a_file_in_the_way_wins_over_a_sample_of_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blades-like").write_bytes((SAMPLES / "rulesets" / "gravewatch.json").read_bytes())
    code, out, err = call("campaign", "new", "x", "blades-like", "Mira", "--data", "data")
    assert code == 0 and str(tmp_path / "blades-like") in out, err


def test_serve_offers_the_bundled_rulesets_by_default():
    from tagengine._internal.cli.serve import _bundled_rulesets

    assert _bundled_rulesets() == SAMPLES / "rulesets"


def test_version_names_the_checkouts_commit():
    """A checkout (an editable install) reads its commit from git when asked (PK-5)."""
    head = git_commit(ROOT)
    line = version_line()
    if head is None:
        assert "commit" not in line
    else:
        assert line.endswith(f"(commit {head[:12]}{head[40:]})") and re.fullmatch(r"[0-9a-f]{40}(\+changes)?", head)
    assert call("--version")[1] == line + "\n"


def test_git_commit_is_none_outside_a_work_trees_top(tmp_path: Path):
    """An unpacked sdist inside another repository must not name that repository's commit."""
    assert git_commit(tmp_path) is None
    assert git_commit(ROOT / "tagengine") is None


def test_samples_imports_no_engine():
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "tagengine", "samples"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", p.stderr, re.M)
    ours = {n for n in names if n.startswith("tagengine._internal.") and n.count(".") == 2}
    assert ours <= {"tagengine._internal.console", "tagengine._internal.errors", "tagengine._internal.files",
                    "tagengine._internal.cli", "tagengine._internal.lazy", "tagengine._internal.samples",
                    "tagengine._internal.resources", "tagengine._internal.records",
                    "tagengine._internal.record_inits"}, ours


def test_the_demos_next_commands_run_where_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`tagengine demo` ends with what to try next; each of those commands works as printed in any folder (the
    samples copied out first), so the demo never sends a new user to a path that is not there. `serve` runs
    for good, so it is only parsed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # campaign new's default data folder
    code, out, _ = call("demo")
    assert code == 0
    commands = [shlex.split(c) for c in re.findall(r"tagengine ([^#&\n]+)", out[out.index("Try next:"):])]
    assert [c[0] for c in commands] == ["samples", "replay", "preview", "campaign", "serve"]
    for argv in commands[:-1]:
        code, _, err = call(*argv)
        assert code == 0, (argv, err)
    from tagengine._internal.cli.arguments import arg_parser

    assert arg_parser(commands[-1]).parse_args(commands[-1]).upstream == "demo"
