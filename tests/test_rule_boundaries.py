"""The import checks at the exact edges the spec states: both sides of every number, each allowed type accepted and
one refused, neither/one/both of two attributes that exclude each other. Each test is cited for its rule, and
`./dev mutate --rules RULE` (tests/rule_mutate.py) proves it fails when that rule's check is broken: a check
tested only far from its edge (17 levels, never 0) passes a limit moved by one."""

from __future__ import annotations

import pytest

from conftest import edit, problems


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
