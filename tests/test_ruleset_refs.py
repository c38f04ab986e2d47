"""Value references (REF), live reads (REF-13..15), caps (CAP) and derived values (SHEET, ENUM)."""

from __future__ import annotations

from conftest import codes, edit, problems


def test_ref_1_exactly_one_key(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][0].update(max={"const": 1, "derived": "x"}))
    assert ("sheet.live.pools[0].max", "invalid") in problems(d)


def test_ref_1_unknown_target_is_named(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][0].update(max={"derived": "nope"}))
    assert ("sheet.live.pools[0].max.derived", "unknown-ref") in problems(d)


def test_ref_1_field_reference_reads_a_number_field(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][1].update(max={"field": "oath"}))
    assert ("sheet.live.pools[1].max.field", "not-numeric") in problems(d)


def test_ref_1_live_state_only_in_enum_table(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][2].update(of=[{"liveState": "lantern"}]))
    assert ("sheet.derived[2].of[0].liveState", "bad-ref-key") in problems(d)


def test_ref_2_3_list_sum_column_and_only_when(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"][1]["of"][0]["listSum"].update(column="item", onlyWhen="bulk"))
    p = problems(d)
    assert ("sheet.derived[1].of[0].listSum.column", "not-numeric") in p
    assert ("sheet.derived[1].of[0].listSum.onlyWhen", "not-boolean") in p


def test_ref_9_penalty_read_only_on_wound_track(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"].append(
        {"id": "w", "label": "W", "op": "sum", "of": [{"liveTrack": "weariness", "read": "penalty"}]}))
    assert ("sheet.derived[6].of[0].read", "penalty-needs-wound-track") in problems(d)


def test_ref_9_read_goes_only_with_live_track(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][3].update(of=[{"livePool": "resolve", "read": "value"}]))
    assert ("sheet.derived[3].of[0]", "invalid") in problems(d)


def test_ref_13_15_pool_max_reading_live_state_names_the_value(gravewatch):
    # resolve_max -> harm_left -> liveTrack harm: a pool max computed before live state exists.
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][1]["of"].append({"derived": "harm_left"}))
    from tagengine._internal.errors import RulesetError
    from tagengine._internal.ruleset import Ruleset

    try:
        Ruleset.from_dict(d)
        raise AssertionError("expected a RulesetError")
    except RulesetError as e:
        hits = [p for p in e.problems if p.code == "live-read"]
    assert [p.path for p in hits] == ["sheet.live.pools[0].max"]
    assert "derived 'resolve_max'" in hits[0].message and "liveTrack 'harm'" in hits[0].message
    assert hits[0].value == "liveTrack 'harm'"


def test_ref_14_through_a_capped_skill(gravewatch):
    # Soothe is capped by livePool resolve; a track max that reads Soothe reads live state (REF-14, CAP).
    d = edit(gravewatch, lambda d: (
        d["sheet"]["derived"].insert(0, {"id": "soothe_n", "label": "S", "op": "sum", "of": [{"skillMod": "soothe"}]}),
        d["sheet"]["live"]["tracks"][1].update(max={"derived": "soothe_n"})))
    assert ("sheet.live.tracks[1].max", "live-read") in problems(d)


def test_enum_7_live_state_table_cannot_feed_a_max(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"][3]["of"].append({"derived": "stance_brawn"}))
    # grit_max is declared above stance_brawn: both the live read and the order are reported.
    p = problems(d)
    assert ("sheet.live.pools[0].max", "live-read") in p


def test_enum_6_field_table_may_feed_a_max(gravewatch):
    assert problems(gravewatch) == []  # resolve_max reads dawn_resolve, an enumTable on the watch field


def test_training_bonus_is_computed_before_live_state(fifth):
    d = edit(fifth, lambda d: d["sheet"]["training"][1].update(bonus={"livePool": "hp"}))
    assert ("sheet.training[1].bonus", "live-read") in problems(d)


def test_ref_17_item_stat_is_refused_clearly(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"][3]["of"].append({"itemStat": {"slot": "armour"}}))
    assert ("sheet.derived[3].of[2].itemStat", "unsupported-feature") in problems(d)


def test_cap_4_cap_cannot_read_a_modifier(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["skills"][1].update(cap={"skillMod": "brawl"}))
    assert ("sheet.skills[1].cap", "cap-reads-modifier") in problems(d)


def test_cap_5_cap_derived_cannot_read_a_modifier(gravewatch):
    d = edit(gravewatch, lambda d: (
        d["sheet"]["derived"].append({"id": "c", "label": "C", "op": "sum", "of": [{"saveMod": "dread"}]}),
        d["sheet"]["skills"][1].update(cap={"derived": "c"})))
    assert ("sheet.skills[1].cap", "cap-reads-modifier") in problems(d)


def test_cap_6_no_modifier_read_above_the_capping_value(gravewatch):
    d = edit(gravewatch, lambda d: (
        d["sheet"]["derived"].insert(0, {"id": "m", "label": "M", "op": "sum", "of": [{"saveMod": "dread"}]}),
        d["sheet"]["skills"][1].update(cap={"derived": "strain_boxes"})))
    assert ("sheet.derived[0]", "cap-order") in problems(d)


def test_cap_5_derived_values_read_only_values_above_them(fifth):
    d = edit(fifth, lambda d: d["sheet"]["derived"].insert(0, d["sheet"]["derived"].pop(1)))  # expertise first
    assert ("sheet.derived[0]", "derived-order") in problems(d)


def test_cap_5_skill_read_needs_its_training_bonus_above(fifth):
    # passive_perception reads skillMod perception, whose proficient bonus is the derived proficiency.
    d = edit(fifth, lambda d: d["sheet"]["derived"].insert(0, d["sheet"]["derived"].pop(8)))
    assert ("sheet.derived[0]", "derived-order") in problems(d)


def test_sheet_23_op_operands(fifth):
    d = edit(fifth, lambda d: (d["sheet"]["derived"][4].pop("by"), d["sheet"]["derived"][0].update(of=[])))
    p = problems(d)
    assert ("sheet.derived[4].by", "missing-key") in p
    assert ("sheet.derived[0].of", "key-not-allowed") in p


def test_sheet_25_multiply_takes_two_to_six(fifth):
    d = edit(fifth, lambda d: d["sheet"]["derived"][1].update(of=[{"const": 2}]))
    assert ("sheet.derived[1].of", "bad-count") in problems(d)
    d = edit(fifth, lambda d: d["sheet"]["derived"][1].update(of=[{"const": 2}] * 7))
    assert ("sheet.derived[1].of", "bad-count") in problems(d)


def test_sheet_26_step_table_thresholds_rise(fifth):
    d = edit(fifth, lambda d: d["sheet"]["derived"][0].update(table=[[1, 2], [1, 3]]))
    assert ("sheet.derived[0].table[1]", "bad-table") in problems(d)


def test_enum_2_from_names_an_enum_field_or_live_state(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][0].update({"from": {"field": "oath"}}))
    assert ("sheet.derived[0].from.field", "not-enum") in problems(d)
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][0].update({"from": {"const": 1}}))
    assert ("sheet.derived[0].from", "bad-enum-source") in problems(d)


def test_enum_3_keys_are_values_the_source_can_hold(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][4]["table"].update(dim=-1))
    assert ("sheet.derived[4].table.dim", "unknown-value") in problems(d)
    d = edit(gravewatch, lambda d: d["sheet"]["derived"][0].update(table={}))
    assert ("sheet.derived[0].table", "bad-count") in problems(d)


def test_sheet_20_more_than_800_derived_values(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"].extend(
        {"id": f"d{i}", "label": f"D{i}", "op": "sum", "of": [{"const": i}]} for i in range(800)))
    assert ("sheet.derived", "bad-count") in problems(d)


def test_duplicate_ids_are_refused(ember):
    d = edit(ember, lambda d: d["sheet"]["derived"].append(dict(d["sheet"]["derived"][0])))
    assert ("sheet.derived[6].id", "duplicate-id") in problems(d)


def test_unknown_keys_are_refused_everywhere(ember):
    d = edit(ember, lambda d: (d.update(extra=1), d["sheet"]["live"]["pools"][0].update(colour="red")))
    p = problems(d)
    assert ("extra", "unknown-key") in p
    assert ("sheet.live.pools[0].colour", "unknown-key") in p
    assert codes(edit(ember, lambda d: d["clocks"].update(colour="red"))) == {"unknown-key"}  # CLOCK-3
