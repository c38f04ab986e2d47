"""A rule's own test, where the tests cited for it passed with the rule broken (tests/rule_mutate.py): numbers
that happened to agree (a wound track's `remaining` equal to its `filled`, a default of 0 equal to nothing), a
shape the rule covers that no test used, a rule caught only by a test of another rule. Each test here names
the rule it checks and fails when that rule's code is broken."""

from __future__ import annotations

import json

import pytest
from cmdkit import run, sample_state, with_live

from conftest import edit, load_sample, problems, sample_dict
from tagengine._internal.commands.check import card as dice_card
from tagengine._internal.commands.check import roll_tag
from tagengine._internal.commands.party_save import PartyConflict, save_party
from tagengine._internal.prompt import reminder, system_prompt
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, view_party
from tagengine._internal.sheet.check_numbers import check_number
from tagengine._internal.sheet.marking import TrackFull, TrackShape, mark
from tagengine._internal.sheet.show import party_summary
from tagengine._internal.state import Clock, GameState, LiveValues, WoundMarks
from tagengine._internal.tags import parse

GRAVE = load_sample("gravewatch")
EMBER = load_sample("ember-roads")
FIFTH = load_sample("fifth-like")
SCALE = {"k1": 0, "k2": 1, "k3": 2}


def card(rs, **parts):
    c = GameState.new(rs, ["X"]).cards["X"]
    return {**c, **parts}


def with_derived(data, *entries):
    return Ruleset.from_dict(edit(data, lambda d: d["sheet"]["derived"].extend(entries)))


def test_wound_20_each_raise_moves_the_lightest_mark_a_step_whatever_step_it_is_on():
    """Three k2 marks fill the track; two more marks raise two of them to k3, the lightest first."""
    track = TrackShape(3, SCALE)
    assert mark(track, ("k2", "k2", "k2"), 0, "k1", 2) == (("k3", "k3", "k2"), 0)


def test_wound_53_an_indexed_mark_that_does_not_fit_above_its_box_is_refused_whole():
    """Box 3 of 4 is taken and box 4 free: two marks from box 3 have one box, so none is placed."""
    track = TrackShape(4, SCALE, indexed=True, refuse_when_full=True)
    with pytest.raises(TrackFull):
        mark(track, (None, None, "k1"), 0, "k1", 2, box=3)
    assert mark(track, (None, None, "k1"), 0, "k1", 1, box=3) == ((None, None, "k1", "k1"), 0)


def test_wound_28_box_is_refused_on_a_track_that_fills_by_severity():
    state = with_live(GRAVE, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": []}}})
    _, res = run(GRAVE, state, '[sheet: who="Bram" op="damage" track="harm" kind="knock" box="1"]')
    assert res == [("refused", "bad-box")]


def test_ref_9_remaining_and_filled_are_counted_from_each_end():
    """Harm has four levels: one mark leaves three; weariness runs from min 1, so 3 is two filled."""
    ev = Eval(GRAVE, card(GRAVE), LiveValues(marks={"harm": WoundMarks(("tear",))}))
    assert (ev.track_read("harm", "filled"), ev.track_read("harm", "remaining")) == (1, 3)
    rs = Ruleset.from_dict(edit(sample_dict("ember-roads"), lambda d: d["sheet"]["live"]["tracks"][0].update(
        min=1, default=1)))
    ev = Eval(rs, card(rs, abilities={"brawn": 5}), LiveValues(tracks={"weariness": 3}))
    assert (ev.track_read("weariness", "value"), ev.track_read("weariness", "filled"),
            ev.track_read("weariness", "remaining")) == (3, 2, 2)


TABLE = {"id": "lamp", "label": "Lamp", "op": "enumTable", "from": {"liveState": "lantern"},
         "table": {"lit": 3}, "default": 7}


def test_enum_4_a_value_the_table_leaves_out_reads_its_default():
    rs = with_derived(sample_dict("gravewatch"), TABLE)
    assert Eval(rs, card(rs), LiveValues(states={"lantern": "out"})).derived("lamp") == 7
    assert Eval(rs, card(rs), LiveValues(states={"lantern": "lit"})).derived("lamp") == 3


def test_enum_4_state_10_a_hidden_state_reads_as_no_value_so_the_table_reads_its_default():
    data = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["states"][0].update(
        hideWhen={"field": "watch", "equals": "dawn"}))
    rs = with_derived(data, TABLE)
    ev = Eval(rs, card(rs, fields={"watch": "dawn"}), LiveValues(states={"lantern": "lit"}))
    assert ev.derived("lamp") == 7


@pytest.mark.parametrize(("by", "how", "want"), [(0.5, None, 3), (-0.5, None, -3), (0.5, "down", 2),
                                                 (0.3, "up", 2), (0.3, None, 2)])
def test_sheet_24_scale_rounds_half_away_from_zero_unless_told(by, how, want):
    """Level 5 scaled: 2.5 rounds to 3 and -2.5 to -3 by default; `down` and `up` as named."""
    entry = {"id": "s", "label": "S", "op": "scale", "from": {"field": "level"}, "by": by}
    if how:
        entry["round"] = how
    rs = with_derived(sample_dict("fifth-like"), entry)
    assert Eval(rs, card(rs, fields={"level": 5}), None).derived("s") == want


def test_adj_7_every_matching_entry_is_added():
    """Two entries apply to a Brawn roll (-1 for all, -2 for Brawn): the roll gets -3."""
    rs = Ruleset.from_dict(edit(sample_dict("ember-roads"), lambda d: d["resolution"].update(adjust=[
        {"value": {"const": -1}}, {"value": {"const": -2}, "abilities": ["brawn"]},
        {"value": {"const": -4}, "abilities": ["wits"]}])))
    ev = Eval(rs, card(rs, abilities={"brawn": 6}), None)
    assert check_number(ev, "ability", "brawn").adjust == -3


def test_pen_6_the_dice_card_states_the_penalty_applied():
    """Mira's harm costs a die: the card says so and where it comes from, beside the roll record's penalty."""
    done = roll_tag(GRAVE, sample_state("gravewatch"), parse('[check: who="Mira" skill="Ward"]'))
    assert ("penalty", "-1") in done.result.record
    assert "  wound penalty: -1 (from Harm, PEN-6)" in dice_card(GRAVE, done)


def test_untr_10_the_card_of_a_refused_check_says_it_could_not_be_attempted():
    state = sample_state("ember-roads")
    done = roll_tag(EMBER, state, parse('[check: who="Mira" skill="Dig"]'))
    assert (done.result.result, done.result.reason) == ("refused", "untrained")
    assert "The character cannot attempt this check; no dice were rolled (UNTR-9, UNTR-10)." in dice_card(EMBER, done)


@pytest.mark.parametrize(("op", "want"), [("min", -2), ("max", 9), ("sum", 7)])
def test_sheet_23_min_max_and_sum_of_their_operands(op, want):
    rs = with_derived(sample_dict("gravewatch"), {"id": "o", "label": "O", "op": op,
                                                   "of": [{"const": 9}, {"const": -2}, {"const": 0}]})
    assert Eval(rs, card(rs), None).derived("o") == want


def test_track_2_a_value_reference_max_below_the_min_reads_the_min():
    """Weariness's max is max(3, brawn); with min raised to 4 it can never hold less than 4."""
    rs = Ruleset.from_dict(edit(sample_dict("ember-roads"), lambda d: d["sheet"]["live"]["tracks"][0].update(
        min=4, default=4)))
    ev = Eval(rs, card(rs, abilities={"brawn": 1}), None)
    t = rs.sheet.tracks.get("weariness")
    assert ev.plain_max(t) == 4 and ev.plain_value(t) == 4


def test_clock_4_5_7_an_empty_clocks_object_takes_the_defaults():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d.update(clocks={})))
    assert (rs.file.clocks.sizes, rs.file.clocks.max) == ([4, 6, 8], 8)


@pytest.mark.parametrize("tag", ['[clock: name="Ghost" tick="1"]', '[clock: name="Ghost" tick="-1"]',
                                 '[clock: name="Ghost" clear]'])
def test_clock_21_each_action_on_an_unknown_clock_is_refused(tag):
    blades = load_sample("blades-like")
    state = GameState.new(blades, ["X"])
    applied, res = run(blades, state, tag)
    assert res == [("refused", "unknown-clock")] and applied.state.clocks == ()


@pytest.mark.parametrize(("size", "kept"), [(1, False), (2, True), (12, True), (13, False)])
def test_clock_25_a_stored_clock_is_read_only_with_2_to_12_segments(size, kept):
    """A snapshot's clocks are read back as the rules allow them; one the rules could not make is dropped."""
    blades = load_sample("blades-like")
    doc = GameState.new(blades, ["X"]).to_json()
    doc["rulesetClocks"] = [{"name": "A", "size": size, "filled": 1}]
    s = GameState.loads(blades, json.dumps(doc))
    assert (len(s.clocks) == 1) is kept
    assert (("rulesetClocks[0].size", "bad-size") in [(w.path, w.code) for w in s.warnings]) is not kept


BLADES = load_sample("blades-like")


def party_run(tag, rs=BLADES):
    return run(rs, sample_state("blades-like"), tag)


@pytest.mark.parametrize(("tag", "want"), [
    ('[sheet: sheet="party" op="advance" field="Heat" to="9"]', ("ok", "9")),
    ('[sheet: sheet="party" op="advance" field="Heat" to="10"]', ("refused", "invalid-value")),
    ('[sheet: sheet="party" op="advance" field="Heat" by="7"]', ("ok", "9")),
    ('[sheet: sheet="party" op="advance" field="Heat" by="8"]', ("refused", "invalid-value")),
    ('[sheet: sheet="party" op="advance" field="Heat" to="0"]', ("ok", "0")),
    ('[sheet: sheet="party" op="advance" field="Heat" to="-1"]', ("refused", "invalid-value")),
])
def test_party_18_an_advance_stays_within_the_fields_range(tag, want):
    """Heat runs 0..9 (it stands at 2): both ends reached, one past either refused."""
    assert party_run(tag)[1] == [want]


def test_party_11_only_the_fields_advancement_names_advance():
    _, res = party_run('[sheet: sheet="party" op="advance" field="Lair" to="tower"]')
    assert res == [("refused", "not-advanceable")]


def test_party_31_a_member_field_is_never_advanced_even_when_named():
    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), lambda d: d["party"]["advancement"]["fields"].append(
        "size")))
    applied, res = party_run('[sheet: sheet="party" op="advance" field="Crew size" to="5"]', rs)
    assert res == [("refused", "not-advanceable")]
    assert "size" not in applied.state.party_sheet["fields"] or applied.state.party_sheet["fields"]["size"] == 0


def test_party_29_30_count_and_sum_read_every_member():
    p = view_party(BLADES, sample_state("blades-like"))
    assert (p.fields["size"], p.fields["stashes"]) == (2, 10)  # two members; stash 6 + 4


def test_party_14_without_a_summary_every_visible_field_and_no_hidden_one():
    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), lambda d: (
        d["party"].pop("summary"), d["party"]["fields"][2].update(hideWhen={"field": "lair", "equals": "barge"}))))
    fields, _ = party_summary(rs, view_party(rs, sample_state("blades-like")))
    assert fields == ["heat", "vault", "tier", "size", "stashes", "lair"]  # upgrades hidden on a barge


def test_party_36_a_save_names_the_revision_it_was_opened_at():
    """Opened at the sheet's revision saves; at an older or a later one, it is refused."""
    state = sample_state("blades-like")
    draft = {**state.party_sheet, "fields": {**state.party_sheet["fields"], "heat": 4}}
    assert save_party(BLADES, state, draft, state.party_revision).party_revision == state.party_revision + 1
    for opened_at in (state.party_revision - 1, state.party_revision + 1):
        with pytest.raises(PartyConflict):
            save_party(BLADES, state, draft, opened_at)


def test_party_12_the_party_text_reaches_the_system_prompt():
    assert "Coin belongs to the crew." in system_prompt(BLADES).text


def test_clock_9_the_reminder_lists_every_clock():
    state = sample_state("blades-like").with_clocks((Clock("Bluecoats", 6, 3), Clock("Flood", 4, 4)))
    r = reminder(BLADES, state)
    assert "- Bluecoats: 3/6" in r and "- Flood: 4/4" in r


def test_gm_13_every_summary_field_and_derived_value_is_shown():
    r = reminder(EMBER, sample_state("ember-roads"))
    block = r.split("## ")[1]
    assert "- Calling:" in block and "- Level:" in block and "- Burden:" in block


def test_gm_15_17_a_name_column_that_is_not_the_first_and_a_boolean_off_prints_nothing():
    """The features list named by its enum die (its value's label), and Ember's unpacked Lute without Packed."""
    rs = Ruleset.from_dict(edit(sample_dict("fifth-like"), lambda d: d["gm"]["sheetSummary"]["lists"][0].update(
        nameColumn="die", columns=[])))
    assert "- Features: d6, d10" in reminder(rs, sample_state("fifth-like"))
    lines = reminder(EMBER, sample_state("ember-roads")).splitlines()
    assert "- Gear: Rope 2 Packed, Lantern 1 Packed, Tent 3 Packed, Lute 2" in lines


def test_state_11_a_state_is_set_by_its_values_label_or_id():
    """`out` is labelled Snuffed here: either name sets it, case and spacing aside."""
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["states"][0][
        "valueLabels"].update(out="Snuffed")))
    state = GameState.loads(rs, sample_state("gravewatch").dumps())
    for value in ("Snuffed", "out", "  SNUFFED "):
        _, res = run(rs, state, f'[sheet: who="Mira" op="state" state="Lantern" value="{value}"]')
        assert res == [("ok", "Snuffed")], value


@pytest.mark.parametrize(("tag", "want"), [
    ('[sheet: who="Mira" op="spend" pool="Resolve" amount="{cur}"]', ("ok", "0/{top}")),
    ('[sheet: who="Mira" op="spend" pool="Resolve" amount="{over}"]', ("refused", "insufficient")),
    ('[sheet: who="Mira" op="restore" pool="Resolve" amount="{top}"]', ("ok", "{top}/{top}")),
])
def test_sheet_35_a_pool_is_spent_down_to_0_and_restored_up_to_its_max(tag, want):
    state = sample_state("gravewatch")
    ev = Eval(GRAVE, state.cards["Mira"], state.live_of("Mira"))
    pool = GRAVE.sheet.pools.get("resolve")
    cur, top = ev.pool_cur(pool), ev.pool_max(pool)
    assert 0 < cur < top
    _, res = run(GRAVE, state, tag.format(cur=cur, over=cur + 1, top=top))
    assert res == [(want[0], want[1].format(top=top))]


def test_sheet_17_choose_n_counts_a_suggestion_whatever_its_case():
    """Mira knows 2 roads: "COAST and Marsh" has both chosen, so no more chips are offered."""
    from tagengine._internal.commands.sheet_edits import edit_sheet
    from tagengine._internal.sheet.form import edit_form

    state = edit_sheet(EMBER, sample_state("ember-roads"), "Mira", {"fields.roads": "COAST and Marsh"}).state
    roads = {i.path: i for sec in edit_form(EMBER, state, "Mira").sections for i in sec.inputs}["fields.roads"]
    assert (roads.pick, roads.chosen, roads.offer_chips) == (2, 2, False)


@pytest.mark.parametrize(("value", "ok"), [(True, True), (False, True), ("maybe", False), (2, False)])
def test_sheet_12_a_boolean_cell_takes_true_or_false_only(value, ok):
    from tagengine._internal.commands.sheet_edits import edit_sheet

    edited = edit_sheet(EMBER, sample_state("ember-roads"), "Mira", {"lists.gear.0.packed": value})
    assert edited.ok is ok
    if not ok:
        assert [p.path for p in edited.problems] == ["lists.gear.0.packed"]


@pytest.mark.parametrize(("low", "high"), [(1, 4), (15, 18)])
def test_sheet_32_a_rolled_total_is_kept_within_the_columns_min_and_max(low, high):
    """3d6 into a column of 1..4 (the total clamped down) and of 15..18 (clamped up)."""
    from tagengine._internal.commands.sheet_edits import edit_sheet
    from tagengine._internal.sheet.edit_paths import change_of

    rs = Ruleset.from_dict({
        "manifest": {"capabilityApi": {"major": 1, "minor": 200}},
        "sheet": {"lists": [{"id": "hits", "label": "Hits", "columns": [
            {"id": "n", "label": "N", "type": "number", "min": low, "max": high,
             "roll": {"count": 3, "sides": 6}}]}]}})
    state = GameState.new(rs, ["Ana"])
    added = edit_sheet(rs, state, "Ana", [change_of("add:lists.hits")]).state
    faces, _ = added.dice.roll(3, 6)
    e = edit_sheet(rs, added, "Ana", [change_of("roll:lists.hits.0.n")])
    assert e.rolled == (("lists.hits.0.n", max(low, min(high, sum(faces)))),)


@pytest.mark.parametrize(("form", "ok"), [("normal", True), ("harder", True), ("refuse", True), ({"by": -1}, True),
                                          ("easier", False), ("never", False)])
def test_untr_4_each_of_the_four_forms_and_no_other(form, ok):
    """Ember's pool target moves (2..6), so `harder` applies there too."""
    found = problems(edit(sample_dict("ember-roads"), lambda d: d["sheet"]["skills"][1].update(untrained=form)))
    assert (found == []) is ok
    if not ok:
        assert ("sheet.skills[1].untrained", "not-allowed") in found


@pytest.mark.parametrize("boxes", [1, 5, 64])
def test_track_4_a_boxed_track_with_a_number_max_is_that_many_boxes_long(boxes):
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["tracks"][1].update(
        max=boxes)))
    t = rs.sheet.tracks.get("strain")
    assert Eval(rs, card(rs), None).wound(t).length == boxes


def test_rest_4_a_rest_never_marks_a_wound_track():
    """A step `by` +2 on harm (imported with a warning) leaves the marks as they were."""
    from tagengine._internal.sheet.rests import take_rest

    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["rests"][1]["steps"][2].update(
        by={"const": 2})))
    state = with_live(rs, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["knock"]}}})
    after, _ = take_rest(rs, state, "Bram", "vigil")
    assert after.live_of("Bram").marks.get("harm", WoundMarks()).marks == ("knock",)


def test_adj_8_a_fights_roll_gets_the_adjust_entries_for_every_roll():
    from tagengine._internal.sheet.check_numbers import fight_number

    rs = Ruleset.from_dict(edit(sample_dict("fifth-like"), lambda d: d["resolution"].update(adjust=[
        {"value": {"const": -2}}, {"value": {"const": 5}, "abilities": ["str"]}])))
    n = fight_number(Eval(rs, card(rs), None), "initiative")
    assert (n.adjust, n.total) == (-2, -2)


@pytest.mark.parametrize(("who", "ok"), [("game-master", True), ("engine", True), ("players", False)])
def test_gm_6_opposition_is_the_game_master_or_the_engine(who, ok):
    found = problems(edit(sample_dict("blades-like"), lambda d: d["gm"].update(opposition=who)))
    assert (found == []) is ok


def scars(state):
    return [r.get("name") for r in state.cards["Mira"]["lists"]["scars"]]


def test_sheet_28_a_row_is_added_where_asked_and_the_row_named_is_deleted():
    """Mira has two scars: a row added at 0 comes first, one deleted at 0 takes the first away."""
    from tagengine._internal.commands.sheet_edits import edit_sheet
    from tagengine._internal.sheet.edit_paths import Change, change_of

    s = sample_state("gravewatch")
    first, second = scars(s)
    added = edit_sheet(GRAVE, s, "Mira", [change_of("add:lists.scars", "0"), Change("set", "lists.scars.0.name",
                                                                                      "New")]).state
    assert scars(added) == ["New", first, second]
    assert scars(edit_sheet(GRAVE, s, "Mira", [change_of("delete:lists.scars.0")]).state) == [second]


def test_party_3_a_party_pools_hide_when_is_checked_as_a_live_pools_is():
    found = problems(edit(sample_dict("blades-like"), lambda d: d["party"]["pools"][1].update(
        hideWhen={"field": "nope", "equals": "barge"})))
    assert ("party.pools[1].hideWhen.field", "unknown-ref") in found


@pytest.mark.parametrize("key", ["sections", "abilities", "derived", "skills"])
def test_party_7_a_party_sheet_has_no_sections_abilities_or_derived_values(key):
    found = problems(edit(sample_dict("blades-like"), lambda d: d["party"].update({key: []})))
    assert (f"party.{key}", "unknown-key") in found


def loaded(rs, edit_doc):
    """A new game's state file, changed by `edit_doc`, read back: (state, {(path, code) of its warnings})."""
    doc = GameState.new(rs, ["Mira"]).to_json()
    edit_doc(doc)
    s = GameState.loads(rs, json.dumps(doc))
    return s, {(w.path, w.code) for w in s.warnings}


@pytest.mark.parametrize("raw", [True, "4", 2.5, None])
def test_sheet_7_a_stored_score_of_the_wrong_type_is_read_as_the_default(raw):
    s, warned = loaded(GRAVE, lambda d: d["gameCharacterCards"]["Mira"]["abilities"].update(nerve=raw))
    assert s.cards["Mira"]["abilities"]["nerve"] == 2  # nerve's default
    if raw is not None:
        assert ("gameCharacterCards.Mira.abilities.nerve", "bad-value") in warned


@pytest.mark.parametrize("raw", ["dim", 3, True])
def test_state_9_a_stored_state_value_no_longer_offered_is_read_as_the_default(raw):
    s, warned = loaded(GRAVE, lambda d: d["rulesetLive"].update(mira={"states": {"lantern": raw}}))
    assert s.live_of("Mira").states == {}
    assert ("rulesetLive.mira.states.lantern", "unknown-value") in warned


@pytest.mark.parametrize("raw", [True, "2", 1.5])
def test_track_1_a_plain_track_stored_as_another_type_reads_its_default(raw):
    s, warned = loaded(FIFTH, lambda d: d["rulesetLive"].update(mira={"tracks": {"exhaustion": raw}}))
    assert "exhaustion" not in s.live_of("Mira").tracks
    assert ("rulesetLive.mira.tracks.exhaustion", "bad-value") in warned


def test_wound_15_marks_stored_lightest_first_are_read_most_severe_first():
    s, _ = loaded(GRAVE, lambda d: d["rulesetLive"].update(mira={"marks": {"harm": {"marks": ["knock", "tear"]}}}))
    assert s.live_of("Mira").marks["harm"].marks == ("tear", "knock")


@pytest.mark.parametrize(("raw", "read"), [(-1, 0), (True, 0), ("2", 0), (3, 3)])
def test_wound_22_a_stored_overflow_is_a_count_else_read_as_0(raw, read):
    s, _ = loaded(GRAVE, lambda d: d["rulesetLive"].update(mira={"marks": {"harm": {"marks": ["tear"],
                                                                                     "overflow": raw}}}))
    assert s.live_of("Mira").marks["harm"].overflow == read


@pytest.mark.parametrize(("raw", "read"), [(-1, None), (True, None), ("1", None), (0, 0), (1, 1)])
def test_sheet_31_a_stored_row_use_is_a_count_else_the_rows_start(raw, read):
    s, _ = loaded(FIFTH, lambda d: d["rulesetLive"].update(mira={"rows": {"features": [raw]}}))
    assert s.live_of("Mira").rows["features"] == (read,)
