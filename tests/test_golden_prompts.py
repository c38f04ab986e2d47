"""Golden system prompts and reminders for every sample ruleset and state (tests/golden/prompts/)."""

from __future__ import annotations

import os

import pytest
from cmdkit import sample_state

from conftest import GOLDEN, load_sample
from tagengine._internal.prompt import Budget, reminder, system_prompt, world_prompt

FOLDER = GOLDEN / "prompts"
NAMES = ["blades-like", "ember-roads", "fifth-like", "gravewatch"]


def check(path, text):
    if os.environ.get("UPDATE_GOLDEN"):
        FOLDER.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_golden_prompt(name):
    rs = load_sample(name)
    check(FOLDER / f"{name}.system.md", system_prompt(rs, Budget(context=128_000, model="gpt-4o")).text)
    check(FOLDER / f"{name}.reminder.md", reminder(rs, sample_state(name)))
    check(FOLDER / f"{name}.world.md", world_prompt(rs))
