"""The wheel as a user has it (issue 41): built from the checkout, installed into a fresh virtual environment (not
editable), and run from an empty folder, far from the checkout: the demo, a served turn of the demo game with its
receipts, a campaign from a bundled sample, the samples copied out and checked, the SillyTavern extension installed.
The wheel carries grammars/, prompts/, pages/, the extension, the samples the commands need and the commit it was
built from, and nothing of the tests; its size is written down in docs/install.md and bounded here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import httpx
import pytest
from serve_kit import Served

from conftest import ROOT, SAMPLES
from tagengine._internal.samples import KINDS
from tagengine._internal.version import git_commit

pytestmark = pytest.mark.slow  # builds a wheel and installs it into a fresh virtual environment

# docs/install.md: the wheel was 0.49 MB (1.3 MB unpacked) on 2026-12-02. A bound with room to grow, low enough
# that test data or a stray build folder in the wheel fails it.
MAX_WHEEL_BYTES = 800 * 1024


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True)
    (whl,) = out.glob("tagengine-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed (not editable), shared by this module's tests."""
    env_dir = tmp_path_factory.mktemp("installed") / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True,
                   cwd=env_dir.parent)
    return env_dir


def test_wheel_carries_grammars_and_prompts(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("grammars", "prompts", "pages", "sillytavern", "openwebui"):  # the two chat apps' kits
        shipped = {n for n in names if n.startswith(f"tagengine/{folder}/")}
        source = {f"tagengine/{folder}/{p.relative_to(ROOT / folder)}" for p in (ROOT / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}  # bytecode a test's import left
        assert source and source <= shipped, folder
    assert "tagengine/py.typed" in names  # issue 11: type checkers read the package's own hints
    assert "tagengine/prompts/teach/clock.j2" in names  # each tag kind's teaching, in a subfolder
    assert "tagengine/_internal/prompt/contexts.toml" in names  # issue 12: serve's context table (S-16)


def test_wheel_carries_the_samples_the_commands_need_and_no_test_data(wheel: Path):
    """Issue 41: every folder of samples/ that samples.py names (KINDS) ships whole, as tagengine/samples/...; a
    folder it does not name, the tests' data, the docs and the benchmarks do not; the wheel stays small."""
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("tagengine/samples/") for n in names if n.startswith("tagengine/samples/")}
    source = {str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file()}
    kinds = {kind for kind, _ in KINDS}
    assert shipped == {s for s in source if s.split("/")[0] in kinds}
    assert {"transcripts/demo-game.json", "transcripts/demo-check.json", "sillytavern/game-master.json",
            "rulesets/blades-like.json", "states/blades-like.json"} <= shipped
    assert not [n for n in names if n.split("/")[0] in ("tests", "docs", "benchmarks", "samples")
                or "/tests/" in n or n.endswith((".pyc", ".jsonl.gz")) or "__pycache__" in n]
    size = wheel.stat().st_size
    print(f"\nwheel {wheel.name}: {size / 1e6:.2f} MB, "
          f"{sum(i.file_size for i in zipfile.ZipFile(wheel).infolist()) / 1e6:.2f} MB unpacked")
    assert size <= MAX_WHEEL_BYTES, f"{size} bytes: what grew? (docs/install.md)"


def run_in(folder: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, cwd=folder, env=env, timeout=300)


def test_installed_wheel_runs_outside_the_checkout(installed: Path, tmp_path: Path):
    env_dir = installed
    py = env_dir / "bin" / "python"
    exe = str(env_dir / "bin" / "tagengine")
    sample = tmp_path / "gravewatch.json"
    shutil.copy(SAMPLES / "rulesets" / "gravewatch.json", sample)
    v = run_in(tmp_path, exe, "--version")
    assert v.returncode == 0 and v.stdout.startswith("tagengine 0.1.0")
    built = git_commit(ROOT)
    if built is not None:  # issue 41: the commit the wheel was built from (hatch_build.py, PK-5)
        assert v.stdout.strip() == f"tagengine 0.1.0 (commit {built[:12]}{built[40:]})"
    c = run_in(tmp_path, exe, "check", str(sample))
    assert c.returncode == 0 and "ok: Gravewatch" in c.stdout
    probe = "import tagengine._internal.resources as r; print(r.resource_dir('grammars'), r.resource_dir('samples'))"
    where = run_in(tmp_path, str(py), "-c", probe)
    assert where.stdout.count(str(env_dir)) == 2, where  # found inside the installed package, not the checkout
    # The grammar and the prompt templates work from the wheel, and tiktoken never reaches the network:
    # any attempt would go to a proxy that does not exist.
    offline = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
               "TIKTOKEN_CACHE_DIR": str(tmp_path / "no-cache")}
    state = tmp_path / "state.json"
    assert run_in(tmp_path, exe, "state", "new", str(sample), "Mira", "-o", str(state)).returncode == 0
    reply = tmp_path / "reply.md"
    reply.write_text('She steadies. [sheet: who="Mira" op="spend" pool="resolve" amount="1"]')
    a = run_in(tmp_path, exe, "apply", str(sample), str(state), str(reply))
    assert a.returncode == 0 and 'result="ok" now="3/4"' in a.stdout
    # Issue 14: the page templates and the stylesheet come from the wheel too
    h = run_in(tmp_path, exe, "sheet", str(sample), str(state), "Mira", "--html")
    assert h.returncode == 0, h.stderr
    assert '<h2 class="who">Mira</h2>' in h.stdout and ".clock .seg" in h.stdout
    pages = run_in(tmp_path, str(py), "-c", "import tagengine._internal.resources as r; print(r.resource_dir('pages'))")
    assert str(env_dir) in pages.stdout
    for model in ("gpt-4o", "gpt-4"):
        p = run_in(tmp_path, exe, "preview", str(sample), str(state), "--model", model, "--json", env=offline)
        assert p.returncode == 0, p.stderr
        assert "## Game Master rules reference" in json.loads(p.stdout)["system"]


def test_a_new_user_plays_the_demo_from_an_empty_folder(installed: Path, tmp_path: Path):
    """Issue 41, as the README tells a new user: install, then in a folder of their own the demo, a campaign from
    a bundled sample, the server with the demo model and one turn with its receipts, the GM card and the
    extension for SillyTavern, and a sample copied out to edit and check. Nothing reads the checkout."""
    env_dir = installed
    exe = str(env_dir / "bin" / "tagengine")
    home = tmp_path / "player"
    home.mkdir()
    data = tmp_path / "data"
    d = run_in(home, exe, "demo")
    assert d.returncode == 0, d.stderr
    assert "blades-like.json: ok: Blades-like Crew" in d.stdout and "-- receipts:" in d.stdout
    listed = run_in(home, exe, "samples")
    assert listed.returncode == 0 and "rulesets/blades-like.json" in listed.stdout
    assert str(env_dir) in listed.stdout.splitlines()[0]  # "bundled in <the installed package>"
    new = run_in(home, exe, "campaign", "new", "heist", "blades-like", "--data", str(data))
    assert new.returncode == 0 and "Cutter, Lurk" in new.stdout, new.stderr
    assert str(data / "rulesets") in new.stdout  # a copy in the data folder, not the installed package's (PK-3)
    with Served(data, "demo", "--campaign", "heist", exe=(exe,), cwd=home) as served:
        turn = httpx.post(f"{served.url}/v1/chat/completions", timeout=60, json={
            "model": "m", "messages": [{"role": "user", "content": "We slip into the counting-house."}]})
        assert turn.status_code == 200, served.log
        assert 'result="ok"' in turn.json()["choices"][0]["message"]["content"]
        new_page = httpx.get(f"{served.url}/ui/new", timeout=60)  # serve's default --rulesets: the bundled ones
        assert new_page.status_code == 200 and "blades-like.json" in new_page.text
    copied = run_in(home, exe, "samples", "copy", "blades-like", "sillytavern")
    assert copied.returncode == 0, copied.stderr
    assert (home / "samples" / "sillytavern" / "game-master.json").is_file()  # the GM card, to import
    checked = run_in(home, exe, "check", "samples/rulesets/blades-like.json")
    assert checked.returncode == 0 and "ok: Blades-like Crew" in checked.stdout
    (home / "st-user" / "extensions").mkdir(parents=True)  # issue 28: the extension installed from the wheel
    x = run_in(home, exe, "st", "extension", "--install", "st-user")
    assert x.returncode == 0 and (home / "st-user" / "extensions" / "tagengine" / "index.js").is_file(), x.stderr
    assert sorted(p.name for p in home.iterdir()) == ["samples", "st-user"]  # nothing else written where it ran
