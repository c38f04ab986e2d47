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


def test_the_templates_write_the_same_through_jinjas_own_environment(monkeypatch):
    """PF-59: `FlatGlobals` gives each template its globals as one plain dict (Jinja's `make_globals` hook) and is
    one switch away from Jinja's own `Environment`: the goldens come out the same through either, and a template
    still reads Jinja's globals (`range`, `namespace`)."""
    import jinja2

    from tagengine._internal.prompt import render

    def written() -> list[str]:
        render.env.cache_clear()
        out = []
        for name in NAMES:
            rs, state = load_sample(name), sample_state(name)
            block = {"name": name, "lines": [(f"Line {i}", f"value [{i}]") for i in range(3)]}
            out += [system_prompt(rs, Budget(context=128_000, model="gpt-4o")).text,
                    render.render("reminder.j2", {"characters": [], "party": None, "clocks": None, "teaching": [],
                                                  "untrained": [], "commands": "", "blocks": [name],
                                                  "party_text": None}),
                    render.include_text("_block.j2", {"c": block}), world_prompt(rs), reminder(rs, state)]
        out.append(render.env().from_string("{% set n = namespace(x=1) %}{{ range(3) | list }} {{ n.x }}").render())
        out.append(type(render.env().get_template("_block.j2").globals).__name__)
        return out

    try:
        flat = written()
        monkeypatch.setattr(render, "FlatGlobals", jinja2.Environment)
        plain = written()
    finally:
        render.env.cache_clear()
    assert flat[:-1] == plain[:-1] and flat[-2] == "[0, 1, 2] 1"
    assert (flat[-1], plain[-1]) == ("dict", "ChainMap")
