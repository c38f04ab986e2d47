"""`tagengine sheet` for people (sheet/show.py): where each line goes and what it says at the edges the golden
sheets do not reach, pinned where a mutation pass found them unchecked (issue 29, docs/mutation.md)."""

from __future__ import annotations

import json

from cmdkit import sample_state, with_live

from conftest import edit, load_sample, sample_dict
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, view_character, view_party
from tagengine._internal.sheet.form import with_chip
from tagengine._internal.sheet.show import check_parts, render_party, render_sheet
from tagengine._internal.state import GameState


def test_sheet_2_fields_derived_values_and_lists_are_shown_under_their_section():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: (
        d["sheet"].update(sections=[{"id": "vigil", "label": "The vigil"}]),
        d["sheet"]["fields"][0].update(section="vigil"), d["sheet"]["derived"][1].update(section="vigil"),
        d["sheet"]["lists"][0].update(section="vigil"))))
    text = render_sheet(rs, view_character(rs, sample_state("gravewatch"), "Bram"))
    block = text[text.index("\nThe vigil\n"):text.index("\nPools\n")]
    assert block == ("\nThe vigil\n  field: Watch: 'dawn'\n  derived: Resolve max: 5\n  list: Scars: no rows")
    assert "field: Oath" in text[:text.index("\nThe vigil\n")]  # a field without a section stays in "Sheet"


def test_untr_1_without_a_training_ladder_no_level_is_shown():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"].update(training=[])))
    text = render_sheet(rs, view_character(rs, GameState.new(rs, ["X"]), "X"))
    assert "  skill: Ward: 2 dice (base 2)\n" in text and " [None]" not in text


def test_untr_10_the_page_names_an_untrained_check_and_its_rule():
    ember = load_sample("ember-roads")
    view = view_character(ember, GameState.new(ember, ["X"]), "X")
    by_id = {c.id: c for c in (*view.skills, *view.abilities)}
    harder = next(c for c in view.skills if c.rule == "harder")
    plain = next(c for c in view.skills if not c.trained and c.rule == "normal")
    assert check_parts(harder, True, name_untrained=True)[-1] == "untrained, harder"
    assert "untrained" in check_parts(plain, True, name_untrained=True)
    assert "untrained" not in check_parts(plain, True)  # the text sheet names only the `by` rule
    ability = by_id[view.abilities[0].id]
    assert not any(p.startswith("untrained") for p in check_parts(ability, True, name_untrained=True))


def test_wound_34_the_text_sheet_says_why_a_character_is_down():
    rs = load_sample("gravewatch")
    st = with_live(rs, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["tear"] * 4}}})
    text = render_sheet(rs, view_character(rs, st, "Bram"))
    assert "\nHealth\n  Harm: down: 0 of 4 left, at Down (Harm is full)\n" in text
    assert "\nHealth\n  Harm: 4 of 4 left\n" in render_sheet(rs, view_character(rs, sample_state("gravewatch"), "Bram"))


def test_party_21_a_party_list_with_no_rows_says_so():
    rs = load_sample("blades-like")
    st = GameState.new(rs, ["Cutter"])
    text = render_party(rs, view_party(rs, st))
    assert "\nCohorts: no rows\n" in text


def test_sheet_2_a_derived_value_alone_in_its_section_has_the_section_to_itself():
    data = sample_dict("ember-roads")
    data["sheet"]["sections"].append({"id": "misc", "label": "Misc"})
    data["sheet"]["derived"][0]["section"] = "misc"  # no field or check sits in it
    ember = Ruleset.from_dict(data)
    s = GameState.loads(ember, sample_state("ember-roads").dumps())
    text = render_sheet(ember, view_character(ember, s, "Mira"))
    assert "\nMisc\n  derived: Roads known: 2\n" in text


def test_dec_8_a_row_named_by_an_enum_reads_as_its_label_and_its_value():
    data = sample_dict("fifth-like")
    data["sheet"]["lists"][0]["columns"][0] = {"id": "name", "label": "Feature", "type": "enum", "values": ["ar", "sw"],
                                               "valueLabels": {"ar": "Arcane recovery", "sw": "Second wind"},
                                               "default": "ar"}
    fifth = Ruleset.from_dict(data)
    doc = json.loads(sample_state("fifth-like").dumps())
    for row, name in zip(doc["gameCharacterCards"]["Vess"]["lists"]["features"], ("ar", "sw"), strict=True):
        row["name"] = name
    s = GameState.loads(fifth, json.dumps(doc))
    ev = Eval(fifth, s.cards["Vess"], s.live_of("Vess"))
    assert ev.row_names("features") == [("Arcane recovery", "ar"), ("Second wind", "sw")]


def test_sheet_14_a_chip_is_appended_after_a_comma_keeping_what_was_written():
    assert with_chip("  sword ,", "rope") == "  sword, rope"
    assert with_chip("sword;", "rope") == "sword, rope"
    assert with_chip("   ", "rope") == "rope"
