from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tagengine._internal.errors import RulesetError
from tagengine._internal.ruleset import Ruleset

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"
os.environ["TAGENGINE_TOKENIZERS"] = ""  # issue 15: the tests never read the user's own tokenizers.toml
# Issue 30: the tests keep their cache entries (PF-2, PF-3) in a folder of their own, gone when they end, so
# the user's cache folder is never read or written; the command lines the tests start inherit it.
_CACHE = tempfile.TemporaryDirectory(prefix="tagengine-tests-cache-")
os.environ["TAGENGINE_CACHE"] = _CACHE.name


def load_sample(name: str) -> Ruleset:
    return Ruleset.load(SAMPLES / "rulesets" / f"{name}.json")


def sample_dict(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / "rulesets" / f"{name}.json").read_text())


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, code) of every import problem; [] when the ruleset imports."""
    try:
        Ruleset.from_dict(data)
    except RulesetError as e:
        return [(p.path, p.code) for p in e.problems]
    return []


def codes(data: dict[str, Any]) -> set[str]:
    return {c for _, c in problems(data)}


def edit(data: dict[str, Any], fn: Any) -> dict[str, Any]:
    d = copy.deepcopy(data)
    fn(d)
    return d


@pytest.fixture
def gravewatch() -> dict[str, Any]:
    return sample_dict("gravewatch")


@pytest.fixture
def ember() -> dict[str, Any]:
    return sample_dict("ember-roads")


@pytest.fixture
def fifth() -> dict[str, Any]:
    return sample_dict("fifth-like")


@pytest.fixture
def blades() -> dict[str, Any]:
    return sample_dict("blades-like")


@pytest.fixture(scope="session")
def real_replies() -> list[str]:
    """Real model replies without tags (../shared/corpus); processing must change nothing."""
    path = ROOT.parent / "shared" / "corpus" / "real-replies-mit.jsonl"
    if not path.exists():
        pytest.skip("../shared is not beside this checkout")
    return [json.loads(line)["content"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
