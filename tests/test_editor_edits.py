"""Issue 27: a player's edits of a sheet, checked as the sheet editor checks them (`edit_sheet`, `edit_party`):
every field type, training, suggestions and pick, derived values, list rows, rolled columns, hand edits in play,
the party's revision, and hostile input (docs/editor.md, decisions ED-1..ED-5)."""

from __future__ import annotations

import json

from cmdkit import sample_state

from conftest import load_sample
from tagengine import Ruleset
from tagengine._internal.commands.sheet_edits import MAX_CHANGES, edit_party, edit_sheet
from tagengine._internal.sheet import view_character, view_party
from tagengine._internal.sheet.edit_paths import LIST_ROWS_MAX, LONGTEXT_MAX, TEXT_MAX, Change, change_of, parse_change
from tagengine._internal.state import PARTY, GameState

GRAVE, EMBER, FIFTH, BLADES = (load_sample(n) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like"))


def codes(edited):
    return [(p.path, p.code) for p in edited.problems]


def mira():
    return sample_state("gravewatch")


# -- the field types (SHEET-11, SHEET-12) -------------------------------------------------------------------
def test_sheet_12_every_field_type_is_checked_and_stored_in_its_type():
    s = sample_state("ember-roads")
    e = edit_sheet(EMBER, s, "Mira", {"fields.level": "4", "fields.roads": "coast, pass", "fields.notes": "a\r\nb",
                                      "fields.calling": "Scout", "fields.signal": " 2D6+1 "})
    assert e.ok, e.problems
    fields = e.state.cards["Mira"]["fields"]
    assert (fields["level"], fields["roads"], fields["notes"], fields["calling"], fields["signal"]) == \
        (4, "coast, pass", "a\nb", "scout", "2d6+1")  # a number, text, longtext (CR LF read as LF), enum by label, dice
    f = sample_state("fifth-like")
    bad = edit_sheet(EMBER, s, "Mira", {"fields.level": "11", "fields.roads": "x" * 201, "fields.calling": "smith",
                                        "fields.signal": "a lot", "fields.notes": 5})
    assert codes(bad) == [("fields.level", "out-of-range"), ("fields.roads", "too-long"),
                          ("fields.calling", "unknown-value"), ("fields.signal", "bad-dice"),
                          ("fields.notes", "wrong-type")]
    assert [p.value for p in bad.problems] == ["11", "x" * 201, "smith", "a lot", 5]  # what was typed, kept
    assert bad.state is s  # nothing applied
    boolean = edit_sheet(BLADES, sample_state("blades-like"), "Cutter", {"fields.stash": True})
    assert codes(boolean) == [("fields.stash", "wrong-type")]  # a flag is not a number
    assert edit_sheet(FIFTH, f, "Vess", {"lists.features.0.name": "Rage"}).ok


def test_a_boolean_column_takes_on_and_off_as_a_form_posts_them():
    s = sample_state("ember-roads")
    e = edit_sheet(EMBER, s, "Mira", [Change("add", "lists.gear"), Change("set", "lists.gear.4.packed", "on"),
                                      Change("set", "lists.gear.4.bulk", 3),
                                      Change("set", "lists.gear.0.packed", "off")])
    assert e.ok and e.state.cards["Mira"]["lists"]["gear"][4] == {"packed": True, "bulk": 3}
    assert e.state.cards["Mira"]["lists"]["gear"][0]["packed"] is False
    assert codes(edit_sheet(EMBER, e.state, "Mira", {"lists.gear.0.packed": "maybe"})) == [
        ("lists.gear.0.packed", "wrong-type")]


def test_text_has_a_bound_where_the_ruleset_sets_none():
    """ED-3: a `text` field without maxLength holds TEXT_MAX characters, one line; a `longtext` LONGTEXT_MAX."""
    rs = Ruleset.from_dict({"sheet": {"fields": [{"id": "motto", "label": "Motto", "type": "text"},
                                                 {"id": "story", "label": "Story", "type": "longtext"}]}})
    s = GameState.new(rs, ["Ana"])
    assert edit_sheet(rs, s, "Ana", {"fields.motto": "x" * TEXT_MAX, "fields.story": "y\n" * (LONGTEXT_MAX // 2)}).ok
    assert codes(edit_sheet(rs, s, "Ana", {"fields.motto": "x" * (TEXT_MAX + 1), "fields.story": "y" * (
        LONGTEXT_MAX + 1)})) == [("fields.motto", "too-long"), ("fields.story", "too-long")]
    assert codes(edit_sheet(rs, s, "Ana", {"fields.motto": "two\nlines", "fields.story": "a\x00b"})) == [
        ("fields.motto", "not-one-line"), ("fields.story", "bad-text")]
    assert codes(edit_sheet(GRAVE, mira(), "Mira", {"lists.scars.0.name": "x" * 61, "fields.oath": "tab\there"})) == [
        ("lists.scars.0.name", "too-long"), ("fields.oath", "bad-text")]  # the ruleset's maxLength, 60


def test_abilities_and_training_levels():
    s = sample_state("blades-like")
    e = edit_sheet(BLADES, s, "cutter", {"abilities.prowess": 5, "skills.hunt": "2", "skills.prowl": "4"})
    assert codes(e) == [("abilities.prowess", "out-of-range"), ("skills.prowl", "unknown-value")]
    e = edit_sheet(BLADES, s, "cutter", {"abilities.prowess": 2, "skills.hunt": "2"})
    assert e.ok and e.state.cards["Cutter"]["abilities"]["prowess"] == 2
    assert e.state.cards["Cutter"]["skills"]["hunt"] == "2"
    hunt = next(c for c in view_character(BLADES, e.state, "Cutter").skills if c.id == "hunt")
    assert hunt.trained and hunt.training == "2"
    by_label = edit_sheet(FIFTH, sample_state("fifth-like"), "Vess", {"saves.dex_save": "Proficient"})
    assert by_label.ok and by_label.state.cards["Vess"]["saves"]["dex_save"] == "proficient"  # DEC-8: by label


def test_sheet_19_derived_values_are_never_written():
    s = mira()
    e = edit_sheet(GRAVE, s, "Mira", {"derived.resolve_max": 9, "fields.oath": "ok"})
    assert codes(e) == [("derived.resolve_max", "read-only")] and e.state is s
    party = sample_state("blades-like")
    assert codes(edit_party(BLADES, party, {"fields.size": 5})) == [("fields.size", "read-only")]  # PARTY-31


def test_sheet_15_sheet_18_suggestions_and_pick_never_refuse_typed_text():
    """A text field with suggestions takes anything typed; `pick` is advisory, so more than N is kept too."""
    s = sample_state("fifth-like")
    picked = view_character(FIFTH, s, "Vess")
    many = "beasts, undead, goblins, fey, dragons, giant spiders"
    e = edit_sheet(FIFTH, s, "Vess", {"fields.enemies": many})
    assert e.ok and e.state.cards["Vess"]["fields"]["enemies"] == many
    assert picked.derived["enemies_known"] < 6


def test_sheet_35_hand_edits_of_pools_tracks_states_conditions_and_notes():
    s = sample_state("ember-roads")
    e = edit_sheet(EMBER, s, "Mira", {"pools.grit": "0", "tracks.weariness": 3, "states.stance": "Guarded",
                                      "conditions.lost": "on", "text.heading": " north by the old road "})
    assert e.ok, e.problems
    live = e.state.live_of("Mira")
    assert (live.pools["grit"], live.tracks["weariness"], live.states["stance"], "lost" in live.conditions,
            live.text["heading"]) == (0, 3, "guarded", True, "north by the old road")
    bad = edit_sheet(EMBER, s, "Mira", {"pools.grit": 99, "tracks.weariness": -1, "states.stance": "wild",
                                        "conditions.lost": "perhaps", "text.heading": "[sheet: op=x]"})
    assert codes(bad) == [("pools.grit", "out-of-range"), ("tracks.weariness", "out-of-range"),
                          ("states.stance", "unknown-value"), ("conditions.lost", "wrong-type"),
                          ("text.heading", "unsafe-text")]  # a live note goes into the prompt (DEC-25)


def test_state_15_a_picked_state_is_stored_off_its_default_only():
    s = sample_state("ember-roads")
    e = edit_sheet(EMBER, s, "Mira", {"states.stance": "steady"})  # the default (STATE-8)
    assert e.ok and "stance" not in e.state.live_of("Mira").states
    hidden = edit_sheet(GRAVE, mira(), "Bram", {"pools.oil": 1})  # Bram keeps the dawn watch: no lantern oil
    assert codes(hidden) == [("pools.oil", "hidden")]


def test_temporary_points_and_row_uses():
    s = sample_state("fifth-like")
    e = edit_sheet(FIFTH, s, "Vess", {"temp.hp": 5, "rows.features.1": 0})
    assert e.ok, e.problems
    live = e.state.live_of("Vess")
    assert live.temp["hp"] == 5 and live.rows["features"][1] == 0
    assert codes(edit_sheet(FIFTH, s, "Vess", {"temp.slots_1": 1, "rows.features.2": 0, "rows.features.0": 9})) == [
        ("temp.slots_1", "unknown-path"), ("rows.features.2", "out-of-range"), ("rows.features.0", "out-of-range")]


# -- wound tracks by hand (WOUND-31, WOUND-51, WOUND-60) -----------------------------------------------------
def test_wound_51_any_free_box_of_an_indexed_track_takes_a_mark():
    """Strain fills by box: box 4 is free while box 1 is, and the mark lands exactly there (WOUND-48)."""
    s = mira()  # strain: [free, strain, free, free]
    e = edit_sheet(GRAVE, s, "Mira", {"marks.strain.4": "strain"})
    assert e.ok and e.state.live_of("Mira").marks["strain"].marks == (None, "strain", None, "strain")
    e = edit_sheet(GRAVE, e.state, "Mira", {"marks.strain.2": ""})  # cleared by hand: the others stay put
    assert e.state.live_of("Mira").marks["strain"].marks == (None, None, None, "strain")
    assert codes(edit_sheet(GRAVE, s, "Mira", {"marks.strain.5": "strain", "marks.strain.1": "tear"})) == [
        ("marks.strain.5", "out-of-range"), ("marks.strain.1", "unknown-value")]


def test_wound_31_marks_and_clears_boxes_of_a_severity_track_by_hand():
    """Harm fills by severity: a mark clicked onto a free box lands where its severity puts it (WOUND-17), a
    cleared box lets the lighter marks move up, and a marked box can change its kind."""
    s = mira()  # harm: [tear, knock] on 7 levels
    e = edit_sheet(GRAVE, s, "Mira", {"marks.harm.6": "tear"})
    assert e.state.live_of("Mira").marks["harm"].marks == ("tear", "tear", "knock")
    e = edit_sheet(GRAVE, e.state, "Mira", {"marks.harm.1": ""})
    assert e.state.live_of("Mira").marks["harm"].marks == ("tear", "knock")
    e = edit_sheet(GRAVE, e.state, "Mira", {"marks.harm.2": "tear"})  # the knock becomes a tear
    assert e.state.live_of("Mira").marks["harm"].marks == ("tear", "tear")
    same = edit_sheet(GRAVE, e.state, "Mira", {"marks.harm.5": ""})  # an empty box cleared: nothing to do
    assert same.ok and same.state.live_of("Mira").marks == e.state.live_of("Mira").marks
    assert codes(edit_sheet(GRAVE, s, "Mira", {"tracks.harm": 2})) == [("tracks.harm", "wound-track")]


def test_wound_60_a_deleted_row_leaves_its_marks_as_overflow_in_the_state():
    """Harm is 4 levels plus the scars' 3; six marks, then Burn (2 levels) deleted: 5 levels, 1 overflow."""
    s = mira()
    marks = {f"marks.harm.{n}": "knock" for n in range(3, 7)}
    full = edit_sheet(GRAVE, s, "Mira", marks)
    assert full.ok and len(full.state.live_of("Mira").marks["harm"].marks) == 6
    e = edit_sheet(GRAVE, full.state, "Mira", [change_of("delete:lists.scars.1")])
    assert e.ok
    stored = e.state.live_of("Mira").marks["harm"]
    assert (len(stored.marks), stored.overflow) == (5, 1)  # editing the sheet does not undo damage
    wound = next(w for w in view_character(GRAVE, e.state, "Mira").wounds if w.id == "harm")
    assert (wound.length, wound.filled, wound.overflow) == (5, 5, 1)
    back = edit_sheet(GRAVE, e.state, "Mira", [change_of("add:lists.scars"), Change("set", "lists.scars.1.levels", 2)])
    assert back.state.live_of("Mira").marks["harm"].overflow == 1  # the overflow stays overflow


# -- list rows (SHEET-28..31) and rolled columns (SHEET-32..34) ----------------------------------------------
def test_rows_are_added_moved_and_deleted_and_row_uses_follow_their_rows():
    s = sample_state("fifth-like")  # features: Arcane recovery 0/1 and Second wind 1/2 left
    spent = edit_sheet(FIFTH, s, "Vess", {"rows.features.1": 0}).state  # Second wind: 0 left
    e = edit_sheet(FIFTH, spent, "Vess", [change_of("add:lists.features", "0"),
                                          Change("set", "lists.features.0.name", "Rage"),
                                          change_of("move:lists.features.2", 0)])
    assert e.ok, e.problems
    names = [r.get("name") for r in e.state.cards["Vess"]["lists"]["features"]]
    assert names == ["Second wind", "Rage", "Arcane recovery"]
    assert e.state.live_of("Vess").rows["features"] == (0, None, 0)  # each row's uses went with it
    d = edit_sheet(FIFTH, e.state, "Vess", [change_of("delete:lists.features.0")])
    assert [r.get("name") for r in d.state.cards["Vess"]["lists"]["features"]] == ["Rage", "Arcane recovery"]
    assert d.state.live_of("Vess").rows["features"] == (None, 0)
    assert codes(edit_sheet(FIFTH, s, "Vess", [change_of("delete:lists.features.2"), change_of("move:lists.features.0",
                                                                                                 5)])) == [
        ("lists.features.2", "out-of-range"), ("lists.features.0", "out-of-range")]


def test_a_list_holds_at_most_list_rows_max_rows():
    s = sample_state("ember-roads")
    full = edit_sheet(EMBER, s, "Mira", [change_of("add:lists.gear")] * (LIST_ROWS_MAX - len(
        s.cards["Mira"]["lists"]["gear"])))
    assert full.ok
    assert codes(edit_sheet(EMBER, full.state, "Mira", [change_of("add:lists.gear")])) == [
        ("lists.gear", "too-many-rows")]


def test_sheet_32_sheet_34_a_rolled_column_rolls_the_engines_dice_clamped_to_its_range():
    """Power rolls 1d(Die): the state's own dice, which replay; the total is kept between min 1 and max 10."""
    s = sample_state("fifth-like")
    e = edit_sheet(FIFTH, s, "Vess", [change_of("roll:lists.features.1.power")])
    assert e.ok and e.state.dice.rolls == s.dice.rolls + 1
    faces, _ = s.dice.roll(1, 10)  # Second wind's die is a d10 (SHEET-33: a column of the row)
    assert e.rolled == (("lists.features.1.power", min(10, faces[0])),)
    assert e.state.cards["Vess"]["lists"]["features"][1]["power"] == e.rolled[0][1]
    again = edit_sheet(FIFTH, s, "Vess", [change_of("roll:lists.features.1.power")])
    assert again.state == e.state  # the same state rolls the same dice (DEC-5)
    assert codes(edit_sheet(FIFTH, s, "Vess", [change_of("roll:lists.features.1.name")])) == [
        ("lists.features.1.name", "no-roll")]


def test_sheet_33_sides_from_a_number_a_column_or_a_value_of_the_sheet():
    mini = Ruleset.from_dict({
        "manifest": {"capabilityApi": {"major": 1, "minor": 200}},
        "sheet": {"fields": [{"id": "die", "label": "Die", "type": "number", "min": 0, "max": 20, "default": 6}],
                  "lists": [{"id": "hits", "label": "Hits", "columns": [
                      {"id": "d", "label": "D", "type": "number", "default": 0},
                      {"id": "fixed", "label": "Fixed", "type": "number", "min": 3, "max": 4,
                       "roll": {"count": 2, "sides": 6}},
                      {"id": "by_col", "label": "By column", "type": "number", "roll": {"sides": {"column": "d"}}},
                      {"id": "by_ref", "label": "By sheet", "type": "number", "roll": {"sides": {"field": "die"}}}]}]},
    })
    s = GameState.new(mini, ["Ana"])
    e = edit_sheet(mini, s, "Ana", [change_of("add:lists.hits"), change_of("roll:lists.hits.0.fixed"),
                                    change_of("roll:lists.hits.0.by_ref")])
    assert e.ok and 3 <= e.state.cards["Ana"]["lists"]["hits"][0]["fixed"] <= 4  # 2d6 clamped to 3..4
    assert 1 <= e.state.cards["Ana"]["lists"]["hits"][0]["by_ref"] <= 6 and e.state.dice.rolls == 3
    zero = edit_sheet(mini, e.state, "Ana", [change_of("roll:lists.hits.0.by_col")])  # column d holds 0
    assert codes(zero) == [("lists.hits.0.by_col", "cannot-roll")]


# -- the party sheet (PARTY-35..37) -------------------------------------------------------------------------
def test_party_35_any_player_edits_the_shared_sheet():
    s = sample_state("blades-like")
    e = edit_party(BLADES, s, {"fields.heat": "4", "lists.cohorts.1.name": "Marta", "pools.coin": 1})
    assert e.ok, e.problems
    assert e.state.party_sheet["fields"]["heat"] == 4 and e.state.live_of(PARTY).pools["coin"] == 1
    assert e.state.party_revision == s.party_revision + 1  # one save, one revision (PARTY-36)
    pools_only = edit_party(BLADES, s, {"pools.coin": 2})
    assert pools_only.state.party_revision == s.party_revision  # a live value is not the sheet's permanent values
    assert codes(edit_party(GRAVE, mira(), {"fields.heat": 1})) == [("sheet", "no-party")]
    assert codes(edit_party(BLADES, s, {"abilities.insight": 1})) == [("abilities.insight", "unknown-path")]


def test_party_36_party_37_a_save_opened_at_a_stale_revision_is_refused_with_the_newer_sheet():
    s = sample_state("blades-like")
    opened = s.party_revision
    first = edit_party(BLADES, s, {"fields.heat": 5}, opened_at=opened)
    assert first.ok and first.state.party_revision == opened + 1
    second = edit_party(BLADES, first.state, {"fields.tier": 2}, opened_at=opened)  # opened before the first landed
    assert codes(second) == [("revision", "stale-revision")] and second.state is first.state
    assert view_party(BLADES, second.state).fields["heat"] == 5  # the newer sheet, for the player to see
    again = edit_party(BLADES, first.state, {"fields.tier": 2}, opened_at=first.state.party_revision)  # deliberately
    assert again.ok and again.state.party_sheet["fields"]["heat"] == 5 and again.state.party_revision == opened + 2


def test_a_lowered_maximum_clamps_its_pool_as_an_advance_does():
    """R-5: vault holds the coin pool's maximum; an edit lowering it writes the coin down."""
    s = sample_state("blades-like")
    full = edit_party(BLADES, s, {"pools.coin": 8}).state
    low = edit_party(BLADES, full, {"fields.vault": 3})
    assert low.state.live_of(PARTY).pools["coin"] == 3
    assert view_party(BLADES, edit_party(BLADES, low.state, {"fields.vault": 8}).state).pools[0].cur == 3


def test_ref_12_a_pool_at_its_start_follows_its_maximum_through_edits():
    """ED-5: before play no live state exists, so a full pool stays full whatever the editor does to its max."""
    s = GameState.new(FIFTH, ["Ada"])
    for level in ("5", "2", "5"):
        s = edit_sheet(FIFTH, s, "Ada", {"fields.level": level}).state
    hp = next(p for p in view_character(FIFTH, s, "Ada").pools if p.id == "hp")
    assert hp.cur == hp.max and s.live_of("Ada").pools == {}


def test_a_stored_pool_above_its_lowered_maximum_is_written_down():
    """R-5 for a card edit: Mira's Resolve 5 of 5, then Nerve 1 (max 3), then Nerve 3 again: 3 of 5."""
    s = edit_sheet(GRAVE, mira(), "Mira", {"pools.resolve": 5}).state
    low = edit_sheet(GRAVE, s, "Mira", {"abilities.nerve": 1}).state
    assert low.live_of("Mira").pools["resolve"] == 3
    back = edit_sheet(GRAVE, low, "Mira", {"abilities.nerve": 3}).state
    assert next(p for p in view_character(GRAVE, back, "Mira").pools if p.id == "resolve").cur == 3


# -- hostile input ------------------------------------------------------------------------------------------
def test_hostile_input_is_refused_with_clear_problems_and_nothing_stored():
    s = mira()
    e = edit_sheet(GRAVE, s, "Mira", {
        "fields.oath": "x" * 10_000_000, "fields.nope": 1, "fieldz.oath": 1, "lists.scars.-1.name": "x",
        "lists.scars.0.nope": "x", "abilities.sinew": 2.5, "abilities.nerve": "9" * 40, "fields.watch": ["night"],
        "marks.strain.1": {"kind": "strain"}, "fields.oath.more": "x", "": "x", "abilities.lore": "\uff13",
    })
    assert codes(e) == [
        ("fields.oath", "too-long"), ("fields.nope", "unknown-path"), ("fieldz.oath", "unknown-path"),
        ("lists.scars.-1.name", "unknown-path"), ("lists.scars.0.nope", "unknown-path"),
        ("abilities.sinew", "wrong-type"), ("abilities.nerve", "wrong-type"), ("fields.watch", "wrong-type"),
        ("marks.strain.1", "wrong-type"), ("fields.oath.more", "unknown-path"), ("", "unknown-path"),
        ("abilities.lore", "wrong-type")]  # a fullwidth digit is no digit (H-2)
    assert e.state is s and all(p.message for p in e.problems)
    assert codes(edit_sheet(GRAVE, s, "Nobody", {"fields.oath": "x"})) == [("who", "unknown-character")]
    assert codes(edit_sheet(GRAVE, s, "Mira", {"fields.oath": "bad\udcfe"})) == [("fields.oath", "bad-text")]
    assert codes(edit_sheet(GRAVE, s, "Mira", [change_of("add:lists.scars")] * (MAX_CHANGES + 1))) == [
        ("changes", "too-many-changes")]
    assert codes(edit_sheet(GRAVE, s, "Mira", ["fields.oath=x"])) == [("changes", "wrong-type")]  # not a Change
    assert codes(edit_sheet(GRAVE, s, "Mira", [Change("replace", "fields.oath", "x")])) == [
        ("fields.oath", "unknown-op")]


def test_script_is_kept_as_inert_text():
    s = mira()
    e = edit_sheet(GRAVE, s, "Mira", {"fields.oath": "<script>alert(1)</script>"})
    assert e.ok and e.state.cards["Mira"]["fields"]["oath"] == "<script>alert(1)</script>"
    assert json.loads(e.state.dumps())["gameCharacterCards"]["Mira"]["fields"]["oath"] == "<script>alert(1)</script>"


def test_the_state_given_is_never_changed():
    s = mira()
    before = s.to_json()
    e = edit_sheet(GRAVE, s, "Mira", {"fields.oath": "x", "marks.strain.1": "strain", "pools.resolve": 0})
    assert e.ok and s.to_json() == before and e.state.to_json() != before


def test_the_command_line_form_of_a_change():
    assert parse_change("fields.oath=a=b") == Change("set", "fields.oath", "a=b")
    assert parse_change("delete:lists.gear.2") == Change("delete", "lists.gear.2", None)
    assert parse_change("move:lists.gear.2=0") == Change("move", "lists.gear.2", "0")
    assert parse_change("fields.odd:id=1") == Change("set", "fields.odd:id", "1")  # only the ops' words are ops


def test_ed_2_a_path_that_reads_wrong_says_the_form_it_should_have():
    """An edit's path: a box or a row that is not a number, a row without its column, an unknown name (cut past
    60 characters); `op:path` is split at the first colon."""
    s = sample_state("gravewatch")

    def said(path):
        return [(p.code, p.message) for p in edit_sheet(GRAVE, s, "Mira", {path: 1}).problems]

    assert said("marks.harm.x") == [("unknown-path", "the path is marks.harm.<box>, with the box as a number")]
    assert said("lists.scars.x.name") == [
        ("unknown-path", "the path is lists.scars.<row>.<column>, with the row as a number")]
    assert said("lists.scars.0") == [
        ("unknown-path", "the path is lists.scars.<row>.<column>, with the row as a number")]
    assert said("fields." + "n" * 60) == [("unknown-path", f"the sheet has no field {'n' * 60!r}")]
    assert said("fields." + "n" * 61) == [("unknown-path", f"the sheet has no field {'n' * 60!r}…")]
    assert change_of("roll:lists.a:b.c") == Change("roll", "lists.a:b.c", None)
