"""DEC-20: one documented table of reason codes, and nothing else used as a reason."""

from __future__ import annotations

import re

from conftest import ROOT
from tagengine._internal.commands.reasons import REASONS
from tagengine._internal.commands.result import refused

KEBAB = re.compile(r"[a-z]+(?:-[a-z]+)*")


def test_codes_are_short_kebab_case():
    assert all(KEBAB.fullmatch(c) and len(c) <= 24 for c in REASONS)


def test_docs_list_exactly_the_table():
    doc = (ROOT / "docs" / "reasons.md").read_text()
    documented = re.findall(r"^\| `([a-z-]+)` \|", doc, re.M)
    assert documented == list(REASONS)


def test_code_uses_only_table_reasons():
    used = set()
    for path in (ROOT / "tagengine").rglob("*.py"):
        used |= set(re.findall(r'refuse[d]?\((?:state, )?"([a-z-]+)"\)', path.read_text()))
    assert used and used <= set(REASONS), used - set(REASONS)


def test_unknown_reason_is_a_programming_error():
    import pytest

    with pytest.raises(ValueError):
        refused("made-up")
