"""Issue 27, item 5: `tagengine character set|form` (the editor's checks from the command line) and
`tagengine campaign new NAME RULESET --state FILE` (decisions ED-12)."""

from __future__ import annotations

import io
import json

from conftest import SAMPLES, load_sample
from tagengine import GameState
from tagengine._internal.cli import run
from tagengine._internal.sheet.form import edit_form

BLADES = str(SAMPLES / "rulesets" / "blades-like.json")
GRAVE = str(SAMPLES / "rulesets" / "gravewatch.json")
GRAVE_STATE = str(SAMPLES / "states" / "gravewatch.json")


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = run([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_character_set_writes_the_state_with_the_changes(tmp_path):
    state = tmp_path / "s.json"
    assert cli("state", "new", BLADES, "Cutter", "Lurk", "-o", state)[0] == 0
    code, out, err = cli("character", "set", BLADES, state, "cutter", "skills.hunt=2", "fields.playbook=Cutter",
                         "fields.vice=Weird <script> & [brackets]", "--state-out", state)
    assert (code, out, err) == (0, "cutter: 3 changes\n", "")
    card = GameState.load(load_sample("blades-like"), state).cards["Cutter"]
    assert (card["skills"]["hunt"], card["fields"]["playbook"], card["fields"]["vice"]) == (
        "2", "cutter", "Weird <script> & [brackets]")
    code, out, _ = cli("character", "set", BLADES, state, "--party", "fields.heat=3", "add:lists.cohorts",
                       "lists.cohorts.0.name=Grinders")
    assert code == 0 and json.loads(out)["gamePartySheet"]["lists"]["cohorts"] == [{"name": "Grinders"}]


def test_character_set_prints_every_problem_and_writes_nothing(tmp_path):
    state = tmp_path / "s.json"
    state.write_text((SAMPLES / "states" / "gravewatch.json").read_text())
    before = state.read_bytes()
    code, out, err = cli("character", "set", GRAVE, state, "Mira", "abilities.sinew=99", "fields.nope=1",
                         "derived.resolve_max=3", "--state-out", state)
    assert code == 1 and out == "" and state.read_bytes() == before
    assert err.splitlines() == ["abilities.sinew: out-of-range: 99 is outside 1..5",
                                "fields.nope: unknown-path: the sheet has no field 'nope'",
                                "derived.resolve_max: read-only: is computed from other values and cannot be typed "
                                "over"]
    code, _, err = cli("character", "set", GRAVE, state, "Nobody", "fields.oath=x")
    assert code == 1 and err.startswith("who: unknown-character")


def test_party_37_character_set_refuses_a_stale_revision(tmp_path):
    code, _, err = cli("character", "set", BLADES, SAMPLES / "states" / "blades-like.json", "--party", "--opened", "1",
                       "fields.heat=1")
    assert code == 1 and err.startswith("revision: stale-revision: the party sheet was saved at revision 3")
    assert cli("character", "set", BLADES, SAMPLES / "states" / "blades-like.json", "--party", "--opened", "3",
               "fields.heat=1")[0] == 0


def test_character_set_usage_errors():
    assert cli("character", "set", GRAVE, GRAVE_STATE, "Mira")[0] == 2  # no change
    assert cli("character", "set", GRAVE, GRAVE_STATE, "Mira", "fields.oath=x", "--opened", "1")[0] == 2
    assert cli("character", "set", GRAVE, GRAVE_STATE, "Mira", "fields.oath=x", "--state-out", GRAVE)[0] == 2  # F-3
    assert cli("character", "form", GRAVE, GRAVE_STATE)[0] == 2
    assert cli("character", "form", GRAVE, GRAVE_STATE, "Mira", "--party")[0] == 2


def test_character_form_prints_the_form_as_json():
    code, out, _ = cli("character", "form", GRAVE, GRAVE_STATE, "Mira")
    rs = load_sample("gravewatch")
    assert code == 0 and json.loads(out) == json.loads(json.dumps(
        edit_form(rs, GameState.load(rs, GRAVE_STATE), "Mira").to_json()))


def test_campaign_new_from_a_state_file(tmp_path):
    state, data = tmp_path / "s.json", tmp_path / "data"
    cli("state", "new", BLADES, "Cutter", "Lurk", "-o", state, "--seed", "fixed")
    cli("character", "set", BLADES, state, "Lurk", "skills.prowl=3", "--state-out", state)
    code, out, err = cli("campaign", "new", "heist", BLADES, "--state", state, "--data", data)
    assert code == 0 and out.startswith("campaign heist: ") and out.endswith("Cutter, Lurk\n") and err == ""
    code, out, _ = cli("campaign", "show", "heist", "--data", data)
    start = json.loads(out)["start"]
    assert start == json.loads(state.read_text())  # the state as given, its dice included
    assert start["gameCharacterCards"]["Lurk"]["skills"]["prowl"] == "3"
    code, out, _ = cli("campaign", "new", "heist2", BLADES, "--state", state, "--seed", "other", "--data", data)
    assert code == 0
    assert json.loads(cli("campaign", "show", "heist2", "--data", data)[1])["start"]["rulesetDice"] == {
        "seed": "other", "rolls": 0}


def test_campaign_new_takes_characters_or_a_state_file(tmp_path):
    data = tmp_path / "data"
    state = tmp_path / "s.json"
    cli("state", "new", BLADES, "Cutter", "-o", state)
    assert cli("campaign", "new", "x", BLADES, "--data", data)[0] == 2
    assert cli("campaign", "new", "x", BLADES, "Cutter", "--state", state, "--data", data)[0] == 2
    assert cli("campaign", "new", "bad name", BLADES, "--state", state, "--data", data)[0] == 1
    assert cli("campaign", "new", "x", BLADES, "--state", tmp_path / "missing.json", "--data", data)[0] == 1
    code, _, err = cli("campaign", "new", "x", BLADES, "--state", state, "--seed", "two\nlines", "--data", data)
    assert code == 1 and "bad-seed" in err
