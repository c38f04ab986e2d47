from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

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

# Hypothesis profiles (issue 25). `ci` is what `./dev test` and CI run: Hypothesis' own CI settings (the same
# examples every run, no deadline, no example database), 100 examples a test unless the test asks for more through
# examples(). `dev` (`./dev test --fast`) runs a tenth of those, new ones each run (failures found are replayed
# from .hypothesis/), with no deadline on a busy machine. `ci` is loaded here; `--hypothesis-profile=dev` picks dev.
CI_EXAMPLES = 100
settings.register_profile("ci", settings.get_profile("ci"), max_examples=CI_EXAMPLES)
settings.register_profile("dev", settings.get_profile("default"), max_examples=CI_EXAMPLES // 10, deadline=None)
settings.load_profile("ci")


def examples(n: int) -> int:
    """A property test's own example count (`n` under `ci`), scaled to the loaded profile: `dev` runs n // 10."""
    return max(1, n * settings.default.max_examples // CI_EXAMPLES)


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
def untagged_replies() -> list[str]:
    """Model-like replies with no tag (tests/fixtures/untagged-replies.jsonl: several languages and scripts,
    Markdown, brackets that are not tags, CRLF, tabs, a zero-width space); processing must change nothing."""
    path = Path(__file__).resolve().parent / "fixtures" / "untagged-replies.jsonl"
    return [json.loads(line)["content"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# A test that uses one of these fixtures starts the program named, so it is `slow` (deselected by `./dev test
# --fast`) wherever it is written; other slow tests carry the marker themselves.
SLOW_FIXTURES = {"browser": "a headless Chromium (tests/browser_kit.py)",
                 "rebinding_browser": "a headless Chromium resolving a rebound name (tests/test_serve_trust.py)"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in SLOW_FIXTURES for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
