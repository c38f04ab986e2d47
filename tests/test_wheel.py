"""The wheel carries grammars/, prompts/, pages/ and the SillyTavern extension, and works from outside the checkout
(non-editable install)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

pytestmark = pytest.mark.slow  # builds a wheel and installs it into a fresh virtual environment


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True)
    (whl,) = out.glob("tagengine-*.whl")
    return whl


def test_wheel_carries_grammars_and_prompts(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("grammars", "prompts", "pages", "sillytavern"):  # sillytavern/: the extension (issue 28)
        shipped = {n for n in names if n.startswith(f"tagengine/{folder}/")}
        source = {f"tagengine/{folder}/{p.relative_to(ROOT / folder)}" for p in (ROOT / folder).rglob("*")
                  if p.is_file()}
        assert source and source <= shipped, folder
    assert "tagengine/py.typed" in names  # issue 11: type checkers read the package's own hints
    assert "tagengine/prompts/teach/clock.j2" in names  # each tag kind's teaching, in a subfolder
    assert "tagengine/_internal/prompt/contexts.toml" in names  # issue 12: serve's context table (S-16)


def test_installed_wheel_runs_outside_the_checkout(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheel)], check=True, cwd=tmp_path)
    exe = env_dir / "bin" / "tagengine"
    sample = tmp_path / "gravewatch.json"
    shutil.copy(SAMPLES / "rulesets" / "gravewatch.json", sample)
    v = subprocess.run([str(exe), "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert v.returncode == 0 and v.stdout.strip() == "tagengine 0.1.0"
    c = subprocess.run([str(exe), "check", str(sample)], capture_output=True, text=True, cwd=tmp_path)
    assert c.returncode == 0 and "ok: Gravewatch" in c.stdout
    probe = "import tagengine._internal.resources as r; print(r.resource_dir('grammars'))"
    where = subprocess.run([str(py), "-c", probe],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(env_dir) in where.stdout  # found inside the installed package, not the checkout
    # The grammar and the prompt templates work from the wheel, and tiktoken never reaches the network:
    # any attempt would go to a proxy that does not exist.
    offline = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
               "TIKTOKEN_CACHE_DIR": str(tmp_path / "no-cache")}
    state = tmp_path / "state.json"
    new = subprocess.run([str(exe), "state", "new", str(sample), "Mira", "-o", str(state)], cwd=tmp_path)
    assert new.returncode == 0
    reply = tmp_path / "reply.md"
    reply.write_text('She steadies. [sheet: who="Mira" op="spend" pool="resolve" amount="1"]')
    a = subprocess.run([str(exe), "apply", str(sample), str(state), str(reply)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert a.returncode == 0 and 'result="ok" now="3/4"' in a.stdout
    # Issue 14: the page templates and the stylesheet come from the wheel too
    h = subprocess.run([str(exe), "sheet", str(sample), str(state), "Mira", "--html"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert h.returncode == 0, h.stderr
    assert '<h2 class="who">Mira</h2>' in h.stdout and ".clock .seg" in h.stdout
    pages = subprocess.run([str(py), "-c", "import tagengine._internal.resources as r; print(r.resource_dir('pages'))"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(env_dir) in pages.stdout
    (tmp_path / "st-user" / "extensions").mkdir(parents=True)  # issue 28: the extension installed from the wheel
    x = subprocess.run([str(exe), "st", "extension", "--install", str(tmp_path / "st-user")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert x.returncode == 0 and (tmp_path / "st-user" / "extensions" / "tagengine" / "index.js").is_file(), x.stderr
    for model in ("gpt-4o", "gpt-4"):
        p = subprocess.run([str(exe), "preview", str(sample), str(state), "--model", model, "--json"],
                           capture_output=True, text=True, cwd=tmp_path, env=offline)
        assert p.returncode == 0, p.stderr
        assert "## Game Master rules reference" in json.loads(p.stdout)["system"]
