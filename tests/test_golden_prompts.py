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


WRITE_EVERY_TEMPLATE = r"""
import json, sys
from pathlib import Path
import jinja2
from tagengine import GameState, Ruleset
from tagengine._internal.prompt import render
if sys.argv[1] == "plain":
    render.FlatGlobals = jinja2.Environment  # the switch back to Jinja's own environment
from tagengine._internal.pages.game_sheet import sheet_html
from tagengine._internal.pages.ruleset_inspection import inspection_context
from tagengine._internal.pages.templates import html_env, render_page
from tagengine._internal.prompt import Budget, reminder, system_prompt, world_prompt
def checked(data, source):
    inspected = inspection_context(data, source)
    return render_page("check.html.j2", {**inspected, "result": inspected, "pasted": data.decode(), "nav": None})
out = []
samples = Path(sys.argv[2])
for path in sorted((samples / "rulesets").glob("*.json")):
    rs = Ruleset.load(path)
    state = GameState.loads(rs, (samples / "states" / path.name).read_text())
    out += [system_prompt(rs, Budget(context=128_000, model="gpt-4o")).text, reminder(rs, state), world_prompt(rs),
            sheet_html(rs, state), sheet_html(rs, state, [next(iter(state.cards))]),
            checked(path.read_bytes(), path.name)]
out += [checked(b'{"name": 1}', "bad.json"),
        render_page("login.html.j2", {"next": "/ui/", "wrong": True, "wait": 3}), render_page("logout.html.j2", {}),
        render.env().from_string("{% set n = namespace(x=1) %}{{ range(3) | list }} {{ n.x }}").render(),
        type(render.env().get_template("_block.j2").globals).__name__,
        type(html_env().get_template("sheet.html.j2").globals).__name__]
print(json.dumps(out))
"""


def test_the_templates_write_the_same_through_jinjas_own_environment():
    """PF-59: `FlatGlobals` gives each template its globals as one plain dict (Jinja's `make_globals` hook) and is
    one switch away from Jinja's own `Environment`: each in a new process (no text kept from the other), the prompts
    (system, reminder with every taught command, world) and pages (sheets, the checker's with and without problems,
    sign-in) of every sample come out the same, and a template still reads Jinja's globals (`range`, `namespace`)."""
    import json
    import subprocess
    import sys

    from conftest import SAMPLES

    def written(kind: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", WRITE_EVERY_TEMPLATE, kind, str(SAMPLES)], capture_output=True,
                              text=True, timeout=300, check=True)
        return list(json.loads(done.stdout))

    flat, plain = written("flat"), written("plain")
    assert flat[:-2] == plain[:-2] and flat[-3] == "[0, 1, 2] 1" and len(flat) == 6 * len(NAMES) + 6
    assert (flat[-2:], plain[-2:]) == (["dict", "dict"], ["ChainMap", "ChainMap"])
