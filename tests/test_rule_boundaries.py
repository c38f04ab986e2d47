"""The import checks at the exact edges the spec states: both sides of every number, each allowed type accepted and
one refused, neither/one/both of two attributes that exclude each other. Each test is cited for its rule, and
`./dev mutate --rules RULE` (tests/rule_mutate.py) proves it fails when that rule's check is broken: a check
tested only far from its edge (17 levels, never 0) passes a limit moved by one."""

from __future__ import annotations

import pytest
from cmdkit import run

from conftest import edit, problems
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.state import GameState


def harm(d):
    return d["sheet"]["live"]["tracks"][0]


def strain(d):
    return d["sheet"]["live"]["tracks"][1]


def derived(d, **entry):
    d["sheet"]["derived"].append({"id": "zz", "label": "Zz", **entry})


def test_wound_6_a_wound_track_with_no_kinds_is_refused(gravewatch):
    """The lower edge: one kind is the least (the upper edge, seven, is test_wound_6_one_to_six_kinds)."""
    assert ("sheet.live.tracks[0].kinds", "bad-count") in problems(edit(gravewatch, lambda d: harm(d).update(kinds=[])))
    one = [{"id": "knock", "label": "K", "severity": 0}]
    d = edit(gravewatch, lambda d: (harm(d).update(kinds=one), d["sheet"]["rests"][0]["steps"][0].pop("kind", None),
                                    d["combat"]["damageKinds"].update(map={"blunt": "knock", "edged": "knock"})))
    assert not [p for p in problems(d) if p[0] == "sheet.live.tracks[0].kinds"]


@pytest.mark.parametrize("max_", [3, 5])
def test_wound_13_a_max_above_or_below_the_levels_is_refused(gravewatch, max_):
    """Four levels: a max of 3 is as wrong as one of 5."""
    assert ("sheet.live.tracks[0].max", "wound-max-mismatch") in problems(
        edit(gravewatch, lambda d: harm(d).update(max=max_)))


def test_wound_54_an_indexed_track_that_escalates_is_refused(gravewatch):
    """`onFull` has two values; an indexed track may declare only "refuse", never "escalate"."""
    assert ("sheet.live.tracks[1].onFull", "indexed-must-refuse") in problems(
        edit(gravewatch, lambda d: strain(d).update(onFull="escalate")))


@pytest.mark.parametrize(("key", "value"), [("fill", "severity"), ("onFull", "refuse"),
                                            ("extra", {"list": "features", "countColumn": "uses",
                                                       "penaltyColumn": "uses"})])
def test_wound_1_wound_track_keys_on_a_plain_track_are_refused(fifth, key, value):
    """A plain track (no kinds) is a number on a scale: each wound-only key is refused on it, not ignored."""
    assert (f"sheet.live.tracks[0].{key}", "key-not-allowed") in problems(
        edit(fifth, lambda d: d["sheet"]["live"]["tracks"][0].update({key: value})))


@pytest.mark.parametrize(("default", "refused"), [(-1, True), (0, False), (6, False), (7, True)])
def test_track_3_a_default_inside_min_to_max(fifth, default, refused):
    """Exhaustion runs 0..6: both ends are a default it may start at; one past either is refused."""
    found = problems(edit(fifth, lambda d: d["sheet"]["live"]["tracks"][0].update(default=default)))
    assert (("sheet.live.tracks[0].default", "bad-default") in found) is refused


def test_state_2_a_states_values_are_distinct(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["states"][0].update(
        values=["lit", "lit", "out"], valueLabels={}))
    assert ("sheet.live.states[0].values", "duplicate-value") in problems(d)


@pytest.mark.parametrize("where", ["values", "valueLabels"])
def test_state_5_a_state_value_or_label_with_a_double_quote_is_refused(gravewatch, where):
    """The sheet command quotes a state's value; a label is shown where a value is, so neither holds a quote."""
    def change(d):
        st = d["sheet"]["live"]["states"][0]
        if where == "values":
            st.update(values=['l"it', "shuttered", "out"], valueLabels={}, default="out")
        else:
            st["valueLabels"]["lit"] = 'L"it'
    found = problems(edit(gravewatch, change))
    assert any(code == "unsafe-text" and where in path for path, code in found)


@pytest.mark.parametrize(("type_", "extra"), [("longtext", {}), ("number", {}), ("boolean", {}),
                                              ("enum", {"values": ["a", "b"]})])
def test_sheet_13_suggestions_go_only_on_a_text_field(ember, type_, extra):
    """Suggestions are words for a `text` field; every other type refuses them (the text field `roads` has
    them in the sample, accepted)."""
    def change(d):
        d["sheet"]["fields"].append({"id": "zz", "label": "Zz", "type": type_, "suggestions": ["a"], **extra})
    assert ("sheet.fields[5].suggestions", "key-not-allowed") in problems(edit(ember, change))
    assert problems(ember) == []


@pytest.mark.parametrize(("n", "refused"), [(0, True), (1, False), (40, False), (41, True)])
def test_sheet_13_one_to_forty_suggestions(ember, n, refused):
    found = problems(edit(ember, lambda d: d["sheet"]["fields"][2].update(suggestions=[f"w{i}" for i in range(n)])))
    assert (("sheet.fields[2].suggestions", "bad-count") in found) is refused


def test_sheet_16_pick_without_suggestions_is_refused(ember):
    assert ("sheet.fields[2].pick", "pick-needs-suggestions") in problems(
        edit(ember, lambda d: d["sheet"]["fields"][2].pop("suggestions")))


@pytest.mark.parametrize(("n", "refused"), [(0, True), (1, False), (24, False), (25, True)])
def test_sheet_29_one_to_twenty_four_columns(gravewatch, n, refused):
    cols = [{"id": f"c{i}", "label": f"C{i}", "type": "number"} for i in range(n)]
    found = problems(edit(gravewatch, lambda d: d["sheet"]["lists"].append({"id": "zz", "label": "Zz",
                                                                            "columns": cols})))
    assert (("sheet.lists[1].columns", "bad-count") in found) is refused


def test_sheet_31_a_row_pools_max_is_a_number_column(fifth):
    assert ("sheet.lists[0].pools.maxColumn", "not-numeric") in problems(
        edit(fifth, lambda d: d["sheet"]["lists"][0]["pools"].update(maxColumn="name")))


@pytest.mark.parametrize(("sides", "refused"), [(1, True), (2, False)])
def test_sheet_33_a_die_has_at_least_two_sides(fifth, sides, refused):
    found = problems(edit(fifth, lambda d: d["sheet"]["lists"][0]["columns"][3]["roll"].update(sides=sides)))
    assert (("sheet.lists[0].columns[3].roll.sides", "out-of-range") in found) is refused


@pytest.mark.parametrize(("values", "refused"), [(["d6", "2d8"], False), (["small", "big"], True)])
def test_sheet_33_sides_from_an_enum_column_whose_values_read_as_dice(fifth, values, refused):
    found = problems(edit(fifth, lambda d: d["sheet"]["lists"][0]["columns"][2].update(values=values)))
    assert (("sheet.lists[0].columns[3].roll.sides.column", "bad-sides") in found) is refused


def test_hide_2_in_needs_at_least_one_value(gravewatch):
    found = problems(edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][0].update(
        hideWhen={"field": "watch", "in": []})))
    assert ("sheet.live.pools[0].hideWhen.in", "bad-count") in found


@pytest.mark.parametrize(("form", "value", "refused"), [("notEquals", 20, False), ("notEquals", 21, True),
                                                         ("notEquals", 1, False), ("notEquals", 0, True),
                                                         ("in", 21, True), ("equals", 21, False)])
def test_hide_3_a_value_the_field_can_never_hold_is_refused(fifth, form, value, refused):
    """`level` runs 1..20: `notEquals`/`in` a value outside that could never match; `equals` is read without
    the bounds (HIDE-4)."""
    hw = {"field": "level", form: [value] if form == "in" else value}
    found = problems(edit(fifth, lambda d: d["sheet"]["derived"][0].update(hideWhen=hw)))
    assert any(code == "impossible-value" for _, code in found) is refused


@pytest.mark.parametrize(("n", "refused"), [(800, False), (801, True)])
def test_sheet_20_at_most_800_derived_values(ember, n, refused):
    def change(d):
        more = n - len(d["sheet"]["derived"])
        d["sheet"]["derived"].extend({"id": f"d{i}", "label": f"D{i}", "op": "sum", "of": [{"const": i}]}
                                     for i in range(more))
        d["manifest"]["capabilityApi"]["minor"] = 729
    assert (("sheet.derived", "bad-count") in problems(edit(ember, change))) is refused


@pytest.mark.parametrize(("n", "refused"), [(0, True), (1, False), (64, False), (65, True)])
def test_sheet_23_a_sum_reads_one_to_64_values(gravewatch, n, refused):
    found = problems(edit(gravewatch, lambda d: derived(d, op="sum", of=[{"const": 1}] * n)))
    assert (("sheet.derived[5].of", "bad-count") in found) is refused


@pytest.mark.parametrize(("op", "key", "value"), [("sum", "by", 2), ("sum", "table", [[0, 1]]),
                                                  ("scale", "of", [{"const": 1}]), ("max", "round", "down")])
def test_sheet_23_an_operand_the_op_does_not_take_is_refused(gravewatch, op, key, value):
    entry = {"op": op, "of": [{"const": 1}]} if op != "scale" else {"op": op, "from": {"const": 1}, "by": 2}
    found = problems(edit(gravewatch, lambda d: derived(d, **entry, **{key: value})))
    assert (f"sheet.derived[5].{key}", "key-not-allowed") in found


@pytest.mark.parametrize(("penalty", "refused"), [(0, False), (1, True)])
def test_wound_45_a_box_penalty_is_at_most_zero(gravewatch, penalty, refused):
    found = problems(edit(gravewatch, lambda d: strain(d)["boxes"]["penalty"].update(table=[[0, -1], [1, penalty]])))
    assert (("sheet.live.tracks[1].boxes.penalty.table[1]", "bad-penalty") in found) is refused


@pytest.mark.parametrize(("n", "refused"), [(40, False), (41, True)])
def test_enum_3_an_enum_table_has_at_most_40_rows(gravewatch, n, refused):
    values = [f"v{i}" for i in range(n)]
    def change(d):
        d["sheet"]["fields"].append({"id": "zf", "label": "Zf", "type": "enum", "values": values})
        derived(d, op="enumTable", **{"from": {"field": "zf"}}, table={v: 1 for v in values})
    assert (("sheet.derived[5].table", "bad-count") in problems(edit(gravewatch, change))) is refused


def step(d, i=1):
    """fifth-like's long rest, step i (1: the shared hit-dice step)."""
    return d["sheet"]["rests"][1]["steps"][i]


@pytest.mark.parametrize(("by", "refused"), [(-21, True), (-20, False), (20, False), (21, True)])
def test_untr_5_by_is_minus_20_to_20(ember, by, refused):
    found = problems(edit(ember, lambda d: d["sheet"]["skills"][0].update(untrained={"by": by})))
    assert (("sheet.skills[0].untrained.by", "out-of-range") in found) is refused


@pytest.mark.parametrize("kind", ["skills", "saves"])
def test_sheet_8_a_skill_or_save_names_a_declared_ability(fifth, kind):
    found = problems(edit(fifth, lambda d: d["sheet"][kind][0].update(ability="luck")))
    assert (f"sheet.{kind}[0].ability", "unknown-ref") in found


@pytest.mark.parametrize(("low", "refused"), [(-1, True), (0, False)])
def test_pen_3_the_pool_floor_is_0_or_more(blades, low, refused):
    found = problems(edit(blades, lambda d: d["resolution"]["pool"].update(min=low)))
    assert (("resolution.pool.min", "out-of-range") in found) is refused


def test_pen_3_pool_settings_belong_to_a_dice_pool(fifth):
    found = problems(edit(fifth, lambda d: d["resolution"].update(pool={"min": 1})))
    assert ("resolution.pool", "key-not-allowed") in found


def test_pen_1_penalty_from_names_a_track_the_sheet_declares(gravewatch):
    found = problems(edit(gravewatch, lambda d: d["resolution"].update(penaltyFrom="nope")))
    assert ("resolution.penaltyFrom", "unknown-ref") in found


def test_rest_1_a_rest_lists_at_least_one_step(fifth):
    found = problems(edit(fifth, lambda d: d["sheet"]["rests"][0].update(steps=[])))
    assert ("sheet.rests[0].steps", "bad-count") in found


@pytest.mark.parametrize("targets", [{}, {"pool": "hp", "track": "exhaustion"}])
def test_rest_2_a_step_names_exactly_one_target(fifth, targets):
    """Neither target and two targets are both refused."""
    found = problems(edit(fifth, lambda d: d["sheet"]["rests"][1]["steps"].__setitem__(0, {**targets, "to": "max"})))
    assert ("sheet.rests[1].steps[0]", "one-target") in found


@pytest.mark.parametrize(("amount", "refused"), [({}, True), ({"to": "max"}, False),
                                                 ({"by": {"const": 1}}, False),
                                                 ({"to": "max", "by": {"const": 1}}, True)])
def test_rest_3_a_step_has_to_or_by_never_both_or_neither(fifth, amount, refused):
    found = problems(edit(fifth, lambda d: d["sheet"]["rests"][1]["steps"].__setitem__(0, {"pool": "hp", **amount})))
    assert (("sheet.rests[1].steps[0]", "to-or-by") in found) is refused


@pytest.mark.parametrize(("fraction", "refused"), [(0, True), (0.01, False), (1, False), (1.01, True)])
def test_rest_3_a_fraction_of_max_is_above_0_and_at_most_1(fifth, fraction, refused):
    found = problems(edit(fifth, lambda d: step(d)["by"].update(fractionOfMax=fraction)))
    assert (("sheet.rests[1].steps[1].by.fractionOfMax", "out-of-range") in found) is refused


@pytest.mark.parametrize(("to", "refused"), [("max", False), ("min", False), (3, False), ("full", True)])
def test_rest_3_to_is_max_min_or_a_number(fifth, to, refused):
    found = problems(edit(fifth, lambda d: d["sheet"]["rests"][1]["steps"].__setitem__(0, {"pool": "hp", "to": to})))
    assert (("sheet.rests[1].steps[0].to", "bad-to") in found) is refused


def test_rest_6_a_pool_group_step_names_a_group_a_pool_declares(fifth):
    found = problems(edit(fifth, lambda d: step(d).update(poolGroup="nope")))
    assert ("sheet.rests[1].steps[1].poolGroup", "unknown-ref") in found


@pytest.mark.parametrize(("target", "refused"), [({"pool": "hp"}, False), ({"listPools": "features"}, False),
                                                 ({"track": "exhaustion"}, True)])
def test_rest_6_a_fraction_of_max_changes_pools_only(fifth, target, refused):
    def change(d):
        d["sheet"]["rests"][1]["steps"][0] = {**target, "by": {"fractionOfMax": 0.5}}
    found = problems(edit(fifth, change))
    assert (("sheet.rests[1].steps[0].by", "key-not-allowed") in found) is refused


@pytest.mark.parametrize(("target", "refused"), [({"poolGroup": "hit_dice"}, False), ({"pool": "hp"}, True)])
def test_rest_7_shared_goes_only_on_a_pool_group_step(fifth, target, refused):
    def change(d):
        step(d).pop("poolGroup")
        step(d).update(target)
    assert (("sheet.rests[1].steps[1].shared", "key-not-allowed") in problems(edit(fifth, change))) is refused


@pytest.mark.parametrize(("least", "refused"), [(-1, True), (0, False)])
def test_rest_8_the_least_a_step_restores_is_0_or_more(fifth, least, refused):
    found = problems(edit(fifth, lambda d: step(d)["by"].update(min=least)))
    assert (("sheet.rests[1].steps[1].by.min", "out-of-range") in found) is refused


def vigil(d):
    return d["sheet"]["rests"][1]["steps"]


def warnings(data):
    return [(w.path, w.code) for w in Ruleset.from_dict(data).warnings]


@pytest.mark.parametrize(("by", "warned"), [(-1, False), (0, True), (2, True)])
def test_wound_43_a_wound_step_that_heals_nothing_or_marks_is_warned(gravewatch, by, warned):
    """A rest never marks a wound track: `by` 0 or more does nothing, so it imports with a warning; -1 heals."""
    found = warnings(edit(gravewatch, lambda d: vigil(d)[2].update(by={"const": by})))
    assert (("sheet.rests[1].steps[2].by", "heal-only") in found) is warned


@pytest.mark.parametrize(("to", "warned"), [("min", False), ("max", True)])
def test_wound_43_a_wound_step_to_max_is_warned(gravewatch, to, warned):
    found = warnings(edit(gravewatch, lambda d: vigil(d)[3].update(to=to)))
    assert (("sheet.rests[1].steps[3].to", "heal-only") in found) is warned


@pytest.mark.parametrize(("to", "refused"), [("default", False), ("out", False), ("dim", True)])
def test_state_16_a_state_step_sets_the_default_or_one_of_its_values(gravewatch, to, refused):
    found = problems(edit(gravewatch, lambda d: vigil(d)[4].update(to=to)))
    assert (("sheet.rests[1].steps[4].to", "unknown-value") in found) is refused


@pytest.mark.parametrize("health", [{}, {"pool": "resolve", "track": "harm"}])
def test_wound_32_health_names_exactly_one_pool_or_track(gravewatch, health):
    found = problems(edit(gravewatch, lambda d: d["combat"].update(health=health)))
    assert ("combat.health", "one-target") in found


def test_wound_32_health_on_a_track_is_a_wound_track(fifth):
    found = problems(edit(fifth, lambda d: d["combat"].update(health={"track": "exhaustion"})))
    assert ("combat.health.track", "not-wound-track") in found


@pytest.mark.parametrize("health", [None, {"pool": "resolve"}])
def test_wound_2_damage_kinds_need_a_wound_track_health(gravewatch, health):
    """Refused with a pool, and with no health at all: neither has marks to give a kind."""
    def change(d):
        if health is None:
            d["combat"].pop("health")
        else:
            d["combat"]["health"] = health
    assert ("combat.damageKinds", "damage-kinds-with-pool") in problems(edit(gravewatch, change))


def test_wound_33_damage_kinds_map_to_kinds_of_the_track(gravewatch):
    found = problems(edit(gravewatch, lambda d: d["combat"]["damageKinds"]["map"].update(fire="burn")))
    assert ("combat.damageKinds.map.fire", "unknown-kind") in found


@pytest.mark.parametrize(("marks", "refused"), [(0, True), (1, False)])
def test_wound_33_a_hit_marks_at_least_one(gravewatch, marks, refused):
    found = problems(edit(gravewatch, lambda d: d["combat"]["damageKinds"].update(marks=marks)))
    assert (("combat.damageKinds.marks", "out-of-range") in found) is refused


@pytest.mark.parametrize(("track", "refused"), [("harm", True), ("strain", False)])
def test_wound_35_per_point_damage_needs_an_indexed_track(gravewatch, track, refused):
    """`harm` has named levels, `strain` numbered boxes filled by index: only the second takes a point per box."""
    def change(d):
        d["combat"].update(health={"track": track}, damage="per-point")
        if track == "strain":
            d["combat"]["damageKinds"]["map"] = {"blunt": "k"}
            strain(d)["kinds"] = [{"id": "k", "label": "K", "severity": 0}]
    found = problems(edit(gravewatch, change))
    assert (("combat.damage", "per-point-needs-boxes") in found) is refused


@pytest.mark.parametrize(("key", "name"), [("fields", "nope"), ("derived", "nope")])
def test_gm_13_a_summary_names_fields_and_derived_values_the_sheet_declares(gravewatch, key, name):
    found = problems(edit(gravewatch, lambda d: d["gm"]["sheetSummary"][key].append(name)))
    assert (f"gm.sheetSummary.{key}[1]", "unknown-ref") in found


def test_cap_4_a_cap_reads_neither_a_skill_nor_a_save_modifier(fifth):
    for key, target in (("skillMod", "stealth"), ("saveMod", fifth["sheet"]["saves"][0]["id"])):
        found = problems(edit(fifth, lambda d, k=key, t=target: d["sheet"]["skills"][0].update(cap={k: t})))
        assert ("sheet.skills[0].cap", "cap-reads-modifier") in found, key


def test_cap_5_a_derived_value_reads_only_values_above_it(gravewatch):
    """Reading itself is reading a value not above it: refused as a forward read is."""
    found = problems(edit(gravewatch, lambda d: derived(d, op="sum", of=[{"derived": "zz"}])))
    assert ("sheet.derived[5]", "derived-order") in found


def test_cap_6_the_value_just_above_a_caps_derived_value_may_not_read_a_modifier(fifth):
    """A cap reads derived `c`; the value declared right above `c` reads a skill modifier: refused, as any
    value above it would be."""
    def change(d):
        d["sheet"]["derived"] += [{"id": "m", "label": "M", "op": "sum", "of": [{"skillMod": "stealth"}]},
                                  {"id": "c", "label": "C", "op": "sum", "of": [{"const": 3}]}]
        d["sheet"]["skills"][0]["cap"] = {"derived": "c"}
    found = problems(edit(fifth, change))
    n = len(fifth["sheet"]["derived"])
    assert (f"sheet.derived[{n}]", "cap-order") in found


@pytest.mark.parametrize(("sizes", "refused"), [([], True), ([4], False), ([2, 3, 4, 5, 6, 12], False),
                                                ([2, 3, 4, 5, 6, 7, 8], True)])
def test_clock_4_one_to_six_sizes(blades, sizes, refused):
    found = problems(edit(blades, lambda d: d["clocks"].update(sizes=sizes)))
    assert (("clocks.sizes", "bad-count") in found) is refused


@pytest.mark.parametrize(("size", "refused"), [(1, True), (2, False), (12, False), (13, True)])
def test_clock_4_a_clock_has_2_to_12_segments(blades, size, refused):
    found = problems(edit(blades, lambda d: d["clocks"].update(sizes=[size])))
    assert (("clocks.sizes[0]", "out-of-range") in found) is refused


def test_clock_4_sizes_are_distinct(blades):
    assert ("clocks.sizes", "duplicate-value") in problems(edit(blades, lambda d: d["clocks"].update(sizes=[4, 4])))


@pytest.mark.parametrize(("column", "refused"), [("name", False), ("type", False), ("elite", True)])
def test_gm_15_a_name_column_is_a_text_or_enum_column(blades, column, refused):
    found = problems(edit(blades, lambda d: d["party"]["summary"]["lists"][0].update(nameColumn=column)))
    assert (("party.summary.lists[0].nameColumn", "bad-name-column") in found) is refused


@pytest.mark.parametrize(("field", "refused"), [("heat", False), ("upgrades", False), ("notes", False),
                                                ("lair", True), ("flag", True)])
def test_party_11_number_text_and_longtext_fields_advance(blades, field, refused):
    """Each advanceable type accepted, enum and boolean refused."""
    def change(d):
        d["party"]["fields"] += [{"id": "notes", "label": "Notes", "type": "longtext"},
                                 {"id": "flag", "label": "Flag", "type": "boolean"}]
        d["party"]["advancement"]["fields"] = [field]
    found = problems(edit(blades, change))
    assert (("party.advancement.fields[0]", "not-advanceable") in found) is refused


@pytest.mark.parametrize(("entry", "refused"), [({}, True), ({"count": True}, False), ({"sum": "stash"}, False),
                                                ({"count": True, "sum": "stash"}, True), ({"count": False}, True)])
def test_party_30_a_member_field_counts_or_sums_never_neither_or_both(blades, entry, refused):
    found = problems(edit(blades, lambda d: d["party"]["fromMembers"].__setitem__(0, {"field": "size", **entry})))
    assert (("party.fromMembers[0]", "one-source") in found) is refused


@pytest.mark.parametrize(("ref", "refused"), [({"const": 3}, False), ({"field": "vault"}, False),
                                              ({"derived": "x"}, True), ({"livePool": "coin"}, True),
                                              ({"abilityScore": "insight"}, True)])
def test_party_8_9_a_party_value_reads_a_constant_or_a_party_number_field(blades, ref, refused):
    found = problems(edit(blades, lambda d: d["party"]["pools"][0].update(max=ref)))
    assert (any(code == "party-ref" for _, code in found)) is refused


@pytest.mark.parametrize(("ref", "path"), [({"saveMod": "nope"}, "saveMod"), ({"skillMod": "nope"}, "skillMod"),
                                           ({"derived": "nope"}, "derived"), ({"abilityMod": "nope"}, "abilityMod"),
                                           ({"field": "nope"}, "field")])
def test_ref_1_a_reference_names_a_declared_target(fifth, ref, path):
    found = problems(edit(fifth, lambda d: derived(d, op="sum", of=[ref])))
    n = len(fifth["sheet"]["derived"])
    assert (f"sheet.derived[{n}].of[0].{path}", "unknown-ref") in found


def test_ref_7_live_pool_names_a_declared_pool(gravewatch):
    found = problems(edit(gravewatch, lambda d: d["resolution"]["adjust"][0].update(value={"livePool": "nope"})))
    assert ("resolution.adjust[0].value.livePool", "unknown-ref") in found


def test_ref_9_live_track_names_a_declared_track(gravewatch):
    found = problems(edit(gravewatch, lambda d: d["resolution"]["adjust"][0].update(value={"liveTrack": "nope"})))
    assert ("resolution.adjust[0].value.liveTrack", "unknown-ref") in found


@pytest.mark.parametrize("kind", ["abilities", "skills", "saves", "fields", "derived", "lists"])
def test_sheet_2_every_element_names_a_declared_section(fifth, kind):
    found = problems(edit(fifth, lambda d: d["sheet"][kind][0].update(section="nope")))
    assert (f"sheet.{kind}[0].section", "unknown-section") in found


def test_wound_42_a_kind_goes_only_on_a_step_healing_a_wound_track(fifth):
    found = problems(edit(fifth, lambda d: d["sheet"]["rests"][1]["steps"][4].update(kind="k")))
    assert ("sheet.rests[1].steps[4].kind", "key-not-allowed") in found


@pytest.mark.parametrize(("boxes", "refused"), [(0, True), (1, False), (64, False), (65, True)])
def test_wound_44_a_boxed_track_has_1_to_64_boxes(gravewatch, boxes, refused):
    found = problems(edit(gravewatch, lambda d: strain(d).update(max=boxes)))
    assert (("sheet.live.tracks[1].max", "out-of-range") in found) is refused


@pytest.mark.parametrize(("name", "ok"), [("", False), ("   ", False), ("A", True), ("A" * 100, True),
                                          ("A" * 101, False), ("{{x}}", False)])
def test_clock_16_a_clock_name_is_1_to_100_characters_without_macro_braces(blades, name, ok):
    rs = Ruleset.from_dict(blades)
    _, res = run(rs, GameState.new(rs, ["X"]), f'[clock: name="{name}" size="4"]')
    assert res == ([("ok", "0/4")] if ok else [("refused", "bad-name")])


@pytest.mark.parametrize(("column", "code"), [("bulk", None), ("nope", "unknown-ref"), ("item", "not-numeric")])
def test_ref_2_list_sum_names_a_numeric_column_of_its_list(ember, column, code):
    def change(d):
        d["sheet"]["derived"][1]["of"][0]["listSum"]["column"] = column
    found = problems(edit(ember, change))
    path = "sheet.derived[1].of[0].listSum.column"
    assert [c for p, c in found if p == path] == ([code] if code else [])
