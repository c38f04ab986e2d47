"""Issue 27: the sheet editor's form and the game sheet's controls as plain data (`edit_form`, `play_controls`),
and golden forms for every sample character and the party (tests/golden/forms/)."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from cmdkit import sample_state

from conftest import GOLDEN, ROOT, SAMPLES, load_sample
from tagengine import GameState, Ruleset
from tagengine._internal.commands.sheet_edits import edit_party, edit_sheet
from tagengine._internal.errors import NotFoundError
from tagengine._internal.sheet.form import edit_form, included, play_controls, with_chip

GRAVE, EMBER, FIFTH, BLADES = (load_sample(n) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like"))
FOLDER = GOLDEN / "forms"


def inputs(form):
    return {i.path: i for sec in form.sections for i in sec.inputs}


def section_of(form, path):
    return next(sec.label for sec in form.sections for i in sec.inputs if i.path == path)


def test_sheet_1_sheet_3_the_form_groups_inputs_by_the_rulesets_sections():
    form = edit_form(EMBER, sample_state("ember-roads"), "Mira")
    labels = [sec.label for sec in form.sections]
    assert labels == ["Abilities", "Skills", "Saves", "Labour", "Road", "Fields", "Derived values", "Lists"]
    labour = next(sec for sec in form.sections if sec.id == "labour")
    assert [i.path for i in labour.inputs] == ["skills.dig", "skills.haul"]  # SHEET-3: skills under their section
    assert labour.untrained == "by -1"  # the section's own rule, for the page to say (UNTR-2)
    assert section_of(form, "skills.listen") == "Skills"  # a skill that names no section keeps its kind's group


def test_sheet_2_fields_derived_values_and_lists_sit_in_the_section_they_name():
    rs = Ruleset.from_dict({"sheet": {
        "sections": [{"id": "kit", "label": "Kit"}],
        "fields": [{"id": "coin", "label": "Coin", "type": "number", "section": "kit"},
                   {"id": "name", "label": "Name", "type": "text"}],
        "derived": [{"id": "wealth", "label": "Wealth", "op": "sum", "of": [{"field": "coin"}], "section": "kit"}],
        "lists": [{"id": "gear", "label": "Gear", "section": "kit",
                   "columns": [{"id": "item", "label": "Item", "type": "text"}]}]}})
    form = edit_form(rs, GameState.new(rs, ["Ana"]), "Ana")
    assert [(sec.label, [i.path for i in sec.inputs], [t.path for t in sec.tables]) for sec in form.sections] == [
        ("Kit", ["fields.coin", "derived.wealth"], ["lists.gear"]), ("Fields", ["fields.name"], [])]


def test_sheet_4_a_sheet_without_sections_on_its_checks_shows_them_as_before():
    form = edit_form(GRAVE, sample_state("gravewatch"), "Mira")
    assert [sec.label for sec in form.sections][:3] == ["Abilities", "Skills", "Saves"]
    assert all(sec.id is None for sec in form.sections)


def test_sheet_13_sheet_14_sheet_17_suggestions_are_chips_with_choose_n():
    """Roads walked: suggestions, `pick` read from the sheet (roads_known, SHEET-16); chips stop once N are in."""
    s = sample_state("ember-roads")  # roads: "coast marsh", and Mira knows 2
    roads = inputs(edit_form(EMBER, s, "Mira"))["fields.roads"]
    assert [(c.word, c.chosen) for c in roads.chips][:3] == [("coast", True), ("marsh", True), ("pass", False)]
    assert (roads.pick, roads.chosen, roads.offer_chips) == (2, 2, False)  # "Choose 2": 2 chosen, no more chips
    fewer = edit_sheet(EMBER, s, "Mira", {"fields.roads": "coast"}).state
    roads = inputs(edit_form(EMBER, fewer, "Mira"))["fields.roads"]
    assert (roads.chosen, roads.offer_chips) == (1, True)
    assert with_chip("coast", "pass") == "coast, pass" and with_chip("  ", "pass") == "pass"  # a chip appends its word
    assert with_chip("coast,", "pass") == "coast, pass"


def test_sheet_15_sheet_18_typed_text_counts_only_suggestions_and_is_never_refused():
    s = sample_state("ember-roads")
    e = edit_sheet(EMBER, s, "Mira", {"fields.roads": "coast, the Salt Way, marsh, pass"})
    assert e.ok  # more than N, and a road the ruleset never listed: kept (pick is advisory)
    roads = inputs(edit_form(EMBER, e.state, "Mira"))["fields.roads"]
    assert (roads.value, roads.chosen, roads.offer_chips, roads.problems) == (
        "coast, the Salt Way, marsh, pass", 3, False, ())
    assert included("Beasts and UNDEAD; beastsong", ["beasts", "undead", "fey"]) == ["beasts", "undead"]


def test_sheet_19_derived_values_are_shown_computed_and_read_only():
    s = sample_state("gravewatch")
    form = edit_form(GRAVE, s, "Mira")
    derived = inputs(form)["derived.resolve_max"]
    assert derived.read_only and derived.type == "derived" and derived.value == 5  # 2 + nerve 3 + dawn 0
    after = edit_form(GRAVE, edit_sheet(GRAVE, s, "Mira", {"abilities.nerve": 4, "fields.watch": "dawn"}).state, "Mira")
    assert inputs(after)["derived.resolve_max"].value == 7  # recomputed from the draft


def test_untr_13_a_refused_untrained_check_shows_no_number():
    form = edit_form(EMBER, sample_state("ember-roads"), "Mira")
    dig = inputs(form)["skills.dig"]  # untrained, and Dig's own rule is "refuse"
    assert dig.check is not None and dig.check.total is None and dig.check.rule == "refuse"
    haul = inputs(form)["skills.haul"]
    assert haul.check is not None and haul.check.total is not None  # the section's `by -1` gives a number
    trained = edit_form(EMBER, edit_sheet(EMBER, sample_state("ember-roads"), "Mira", {"skills.dig": "trained"}).state,
                        "Mira")
    assert inputs(trained)["skills.dig"].check.total == 4  # trained: Brawn 3 + 1, the rule no longer applies


def test_hide_5_hide_when_reads_the_drafts_values():
    s = sample_state("gravewatch")  # Bram keeps the dawn watch: lantern oil is hidden
    bram = play_controls(GRAVE, s, "Bram")
    oil = next(p for p in bram.pools if p.path == "pools.oil")
    assert oil.hidden is not None
    night = edit_sheet(GRAVE, s, "Bram", {"fields.watch": "night"}).state
    assert next(p for p in play_controls(GRAVE, night, "Bram").pools if p.path == "pools.oil").hidden is None
    fifth = edit_form(FIFTH, sample_state("fifth-like"), "Vess")
    slots = next(p for p in fifth.play.pools if p.path == "pools.slots_1")
    assert slots.hidden is None  # Vess casts: the rule (casting equals none) does not hold
    rule = next(p for p in edit_form(FIFTH, GameState.new(FIFTH, ["Ada"]), "Ada").play.pools
                if p.path == "pools.slots_1")
    assert rule.hidden is not None  # an unset field reads the blank sheet's value: casting none
    assert (rule.hide_when.path, rule.hide_when.form, rule.hide_when.values) == ("fields.casting", "equals",
                                                                                 ("none",))


def test_ref_12_live_values_before_play_are_at_their_start():
    s = GameState.new(GRAVE, ["Ana"])
    play = edit_form(GRAVE, s, "Ana").play
    resolve = next(p for p in play.pools if p.path == "pools.resolve")
    assert resolve.value == resolve.max  # a full pool starts full
    assert all(b.mark is None and b.action == "mark" for w in play.wounds for b in w.boxes)  # no marks
    assert [st.value for st in play.states] == ["lit"]  # the default state


def test_state_15_a_picker_for_each_live_state():
    play = play_controls(EMBER, sample_state("ember-roads"), "Mira")
    stance = play.states[0]
    assert (stance.path, stance.type, stance.value) == ("states.stance", "state", "reckless")
    assert stance.choices == (("guarded", "Guarded"), ("steady", "Steady"), ("reckless", "Reckless"))


def test_wound_31_wound_51_every_box_is_a_control_marking_or_clearing():
    play = play_controls(GRAVE, sample_state("gravewatch"), "Mira")
    harm, strain = play.wounds
    assert (harm.indexed, strain.indexed) == (False, True)
    assert [b.action for b in strain.boxes] == ["mark", "clear", "mark", "mark"]  # any free box (WOUND-51)
    assert [b.path for b in strain.boxes][:2] == ["marks.strain.1", "marks.strain.2"]
    assert harm.kind == "knock" and [k[0] for k in harm.kinds] == ["knock", "tear"]  # a click marks the lightest
    assert [(b.label, b.mark) for b in harm.boxes][:3] == [("Scuffed", "tear"), ("Winded", "knock"), ("Winded", None)]


def test_party_35_the_party_form_names_its_revision():
    s = sample_state("blades-like")
    form = edit_form(BLADES, s, None)
    assert (form.who, form.party, form.revision) == ("Crew", True, s.party_revision)
    fields = inputs(form)
    assert fields["fields.size"].read_only  # computed from the members (PARTY-31)
    assert [t.path for sec in form.sections for t in sec.tables] == ["lists.cohorts"]
    assert [p.path for p in form.play.pools] == ["pools.coin", "pools.moorings"]
    with pytest.raises(NotFoundError):
        edit_form(GRAVE, sample_state("gravewatch"), None)
    with pytest.raises(NotFoundError):
        edit_form(GRAVE, sample_state("gravewatch"), "Nobody")


def test_party_37_a_stale_save_shows_the_newer_sheet_with_the_draft_kept_in_its_problems():
    s = sample_state("blades-like")
    newer = edit_party(BLADES, s, {"fields.heat": 5}).state
    stale = edit_party(BLADES, newer, {"fields.heat": 1}, opened_at=s.party_revision)
    form = edit_form(BLADES, newer, None, stale.problems)
    assert form.revision == newer.party_revision and inputs(form)["fields.heat"].value == 5  # the newer sheet
    assert [p.code for p in form.problems] == ["stale-revision"]


def test_a_refused_edit_keeps_what_was_typed_on_its_input():
    s = sample_state("gravewatch")
    e = edit_sheet(GRAVE, s, "Mira", {"abilities.sinew": "lots", "lists.scars.0.levels": "99", "fields.nope": 1,
                                      "marks.strain.9": "strain", "pools.resolve": "-2"})
    form = edit_form(GRAVE, s, "Mira", e.problems)
    sinew = inputs(form)["abilities.sinew"]
    assert (sinew.value, [p.code for p in sinew.problems]) == ("lots", ["wrong-type"])
    cell = form.sections[-1].tables[0].rows[0].cells[1]
    assert (cell.path, cell.value, cell.problems[0].code) == ("lists.scars.0.levels", "99", "out-of-range")
    resolve = next(p for p in form.play.pools if p.path == "pools.resolve")
    assert resolve.value == "-2" and resolve.problems
    assert [p.path for p in form.problems] == ["fields.nope", "marks.strain.9"]  # no input of the form shows them
    kind = edit_sheet(GRAVE, s, "Mira", {"marks.strain.1": "tear"})
    box = edit_form(GRAVE, s, "Mira", kind.problems).play.wounds[1].boxes[0]
    assert [p.code for p in box.problems] == ["unknown-value"]  # a box shows its own


def test_sheet_32_sheet_34_a_rolled_column_has_a_roll_button():
    table = edit_form(FIFTH, sample_state("fifth-like"), "Vess").sections[-1].tables[0]
    power = next(c for c in table.columns if c.id == "power")
    assert power.roll == "1d(Die)"  # SHEET-33: the die comes from the row's Die column
    assert [r.cells[3].roll for r in table.rows] == ["1d6", "1d10"]
    assert [r.uses.value for r in table.rows] == [0, 1] and table.rows[0].uses.path == "rows.features.0"


def test_the_form_is_plain_json():
    form = edit_form(FIFTH, sample_state("fifth-like"), "Vess")
    doc = form.to_json()
    assert json.loads(json.dumps(doc)) == json.loads(json.dumps(doc, default=str))  # nothing JSON cannot write


CASES = [(p.stem, name) for p in sorted((SAMPLES / "states").glob("*.json"))
         for name in [*json.loads(p.read_text())["gameCharacterCards"], None]
         if name is not None or load_sample(p.stem).party is not None]


@pytest.mark.parametrize(("ruleset", "name"), CASES, ids=[f"{r}-{n or 'party'}" for r, n in CASES])
def test_golden_form(ruleset, name):
    """SHEET-1 SHEET-14 SHEET-17 SHEET-19 UNTR-13 REF-12: each sample sheet's form, as the pages and the JSON
    API get it."""
    rs = Ruleset.load(SAMPLES / "rulesets" / f"{ruleset}.json")
    state = GameState.load(rs, SAMPLES / "states" / f"{ruleset}.json")
    text = json.dumps(edit_form(rs, state, name).to_json(), ensure_ascii=False, indent=1) + "\n"
    path = FOLDER / f"{ruleset}-{(name or 'party').lower()}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        FOLDER.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_sheet_12_an_enum_columns_choices_carry_their_labels():
    """DEC-8: a list's enum column offers each value with its label (here labels unlike the ids)."""
    data = json.loads((SAMPLES / "rulesets" / "fifth-like.json").read_text(encoding="utf-8"))
    die = next(c for c in data["sheet"]["lists"][0]["columns"] if c["id"] == "die")
    die["valueLabels"] = {"d6": "Six", "d8": "Eight", "d10": "Ten"}
    fifth = Ruleset.from_dict(data)
    form = edit_form(fifth, GameState.loads(fifth, sample_state("fifth-like").dumps()), "Vess")
    (table,) = [t for sec in form.sections for t in sec.tables if t.path == "lists.features"]
    (col,) = [c for c in table.columns if c.id == "die"]
    assert col.choices == (("d6", "Six"), ("d8", "Eight"), ("d10", "Ten"))


def test_hide_5_a_hidden_track_and_a_hidden_party_lists_uses_say_so_in_play():
    """HIDE-5: the game sheet follows the typing: a plain track carries its hiding rule; a party list hidden by
    its rule hides each row's uses, saying why."""
    data = json.loads((SAMPLES / "rulesets" / "ember-roads.json").read_text(encoding="utf-8"))
    data["sheet"]["live"]["tracks"][0]["hideWhen"] = {"field": "calling", "equals": "drover"}
    ember = Ruleset.from_dict(data)
    (track,) = play_controls(ember, GameState.loads(ember, sample_state("ember-roads").dumps()), "Mira").tracks
    assert track.hide_when is not None and (track.hide_when.path, track.hide_when.form, track.hide_when.values) == (
        "fields.calling", "equals", ("drover",))
    data = json.loads((SAMPLES / "rulesets" / "blades-like.json").read_text(encoding="utf-8"))
    cohorts = data["party"]["lists"][0]
    cohorts["columns"].append({"id": "uses", "label": "Uses", "type": "number", "min": 0, "max": 5, "default": 2})
    cohorts.update(pools={"maxColumn": "uses", "start": "full"}, hideWhen={"field": "lair", "equals": "barge"})
    blades = Ruleset.from_dict(data)
    uses = play_controls(blades, GameState.loads(blades, sample_state("blades-like").dumps()), None).uses
    assert len(uses) == 2 and all(u.hidden for u in uses)


def test_hide_5_a_hidden_field_and_a_hidden_lists_uses_carry_why_and_their_rule():
    """HIDE-5: a field hidden by its rule says why and carries the rule, for a page to follow the typing; a
    character's list hidden by its rule hides each row's uses."""
    data = json.loads((SAMPLES / "rulesets" / "ember-roads.json").read_text(encoding="utf-8"))
    roads = next(f for f in data["sheet"]["fields"] if f["id"] == "roads")
    roads["hideWhen"] = {"field": "calling", "equals": "scout"}  # Mira is a scout
    ember = Ruleset.from_dict(data)
    form = edit_form(ember, GameState.loads(ember, sample_state("ember-roads").dumps()), "Mira")
    (field,) = [i for sec in form.sections for i in sec.inputs if i.path == "fields.roads"]
    assert field.hidden and field.hide_when is not None and field.hide_when.values == ("scout",)
    data = json.loads((SAMPLES / "rulesets" / "fifth-like.json").read_text(encoding="utf-8"))
    data["sheet"]["lists"][0]["hideWhen"] = {"field": "casting", "equals": "full"}  # Vess casts in full
    fifth = Ruleset.from_dict(data)
    uses = play_controls(fifth, GameState.loads(fifth, sample_state("fifth-like").dumps()), "Vess").uses
    assert len(uses) == 2 and all(u.hidden for u in uses)


def test_sheet_1_a_section_of_only_a_derived_value_or_only_a_list_is_shown():
    data = json.loads((SAMPLES / "rulesets" / "ember-roads.json").read_text(encoding="utf-8"))
    data["sheet"]["sections"] += [{"id": "misc", "label": "Misc"}, {"id": "packs", "label": "Packs"}]
    data["sheet"]["derived"][0]["section"] = "misc"  # nothing else sits in either
    data["sheet"]["lists"][0]["section"] = "packs"
    ember = Ruleset.from_dict(data)
    form = edit_form(ember, GameState.loads(ember, sample_state("ember-roads").dumps()), "Mira")
    by_id = {sec.id: sec for sec in form.sections}
    assert [i.path for i in by_id["misc"].inputs] == ["derived.roads_known"] and not by_id["misc"].tables
    assert not by_id["packs"].inputs and [t.path for t in by_id["packs"].tables] == ["lists.gear"]


def test_sheet_35_a_refused_temporary_value_is_shown_as_typed():
    s = sample_state("fifth-like")
    refused = edit_sheet(FIFTH, s, "Vess", {"temp.hp": "lots"})
    play = edit_form(FIFTH, s, "Vess", refused.problems).play
    (temp,) = [i for i in play.pools if i.path == "temp.hp"]
    assert temp.value == "lots" and [p.code for p in temp.problems] == ["wrong-type"]


def rule_ids() -> re.Pattern[str]:
    """A rule ID of the spec or of docs/decisions.md (`REF-12`, `DEC-25`, `H-3`, `ED-3`), not glued to a longer
    word: its prefixes read from the decisions' tables and the spec's list, so `UTF-8` is no ID."""
    from spec_coverage import PREFIXES

    decided = set(re.findall(r"^\| ([A-Z]+)-\d+ \|", (ROOT / "docs" / "decisions.md").read_text(), re.M))
    alt = "|".join(sorted({*PREFIXES, *decided, "DEC"}, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_-])(?:{alt})-\d+(?![0-9])")


def player_strings(path: Path) -> list[str]:
    """The text of `path` a player can be shown: a template without its `{# #}` comments; a module's string
    literals and f-string parts, docstrings aside (comments are not in the tree)."""
    text = path.read_text()
    if path.suffix != ".py":
        return [re.sub(r"\{#.*?#\}", "", text, flags=re.S)]
    tree = ast.parse(text)
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def test_the_editor_shows_players_words_not_rule_ids():
    """A player reads words: no rule ID in the editor's and the game sheet's templates ("they start here", with no
    ID after it), in the problems an edit is refused with, which the editor shows, nor in the text sheet."""
    ids = rule_ids()
    assert ids.search("they start here (REF-12)") and ids.search("(DEC-25)") and not ids.search("UTF-8 text")
    internal = ROOT / "tagengine" / "_internal"
    shown = [*(ROOT / "pages").glob("*.j2"), *(ROOT / "pages").glob("*.js"),
             *(internal / "pages" / m for m in ("sheet_editor.py", "game_sheet.py", "campaign_start.py")),
             internal / "sheet" / "form.py", internal / "sheet" / "edit_paths.py", internal / "sheet" / "show.py",
             *(internal / "commands" / m for m in ("edit_values.py", "sheet_edits.py", "live_edits.py",
                                                   "party_save.py"))]
    found = [(p.relative_to(ROOT).as_posix(), m.group()) for p in shown for s in player_strings(p)
             for m in ids.finditer(s) if p.suffix != ".js" or "//" not in s[:m.start()].rsplit("\n", 1)[-1]]
    assert found == []
