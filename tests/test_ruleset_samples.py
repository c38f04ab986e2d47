"""The bundled sample rulesets import, and each declares the lowest version it needs (DEC-22, spec 18.1)."""

from __future__ import annotations

import pytest

from conftest import load_sample

SAMPLES = {"ember-roads": "1.797", "gravewatch": "1.145", "fifth-like": "1.797", "blades-like": "1.774"}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_imports_and_declares_lowest_version(name: str) -> None:
    rs = load_sample(name)
    assert rs.requires_text == SAMPLES[name]
    m = rs.file.manifest
    assert m is not None and m.capabilityApi is not None
    assert f"{m.capabilityApi.major}.{m.capabilityApi.minor}" == rs.requires_text
    assert rs.warnings == ()

