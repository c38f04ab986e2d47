"""The documented JSON Schemas are the ones the code produces."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from tagengine._internal.schema import schema


@pytest.mark.parametrize("kind", ["ruleset", "state"])
def test_documented_schema_is_current(kind):
    documented = json.loads((ROOT / "docs" / f"{kind}.schema.json").read_text())
    assert documented == schema(kind), f"run: tagengine schema {kind} > docs/{kind}.schema.json"
