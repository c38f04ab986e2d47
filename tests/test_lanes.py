"""The fast lane stays fast and honest (issue 25): a property test's example count goes through the Hypothesis
profile (`examples(n)` of tests/conftest.py), so `./dev test --fast` runs a tenth of it and `./dev test` all."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT, examples

FIXED = re.compile(r"max_examples\s*=\s*\d")
THIS = Path(__file__).name


def test_no_test_fixes_its_example_count():
    found = [f"{p.name}:{n}: {line.strip()}" for p in sorted((ROOT / "tests").glob("*.py")) if p.name != THIS
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if FIXED.search(line)]
    assert not found, "write max_examples=examples(N), so the dev profile can scale it:\n" + "\n".join(found)


def test_examples_scale_with_the_loaded_profile():
    from hypothesis import settings

    assert FIXED.search("@settings(max_examples=1000)") and not FIXED.search("max_examples=examples(1000)")
    assert examples(1000) == 1000 * settings.default.max_examples // 100 and examples(1) >= 1
