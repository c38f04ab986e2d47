"""Plain tracks (TRACK), wound tracks (WOUND), penalties (PEN), hideWhen (HIDE), states (STATE)."""

from __future__ import annotations

from conftest import edit, problems


def harm(d):
    return d["sheet"]["live"]["tracks"][0]


def strain(d):
    return d["sheet"]["live"]["tracks"][1]


def test_wound_4_levels_one_to_sixteen(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(levels=[], max=0))
    assert ("sheet.live.tracks[0].levels", "bad-count") in problems(d)
    lv = [{"label": f"L{i}", "penalty": 0} for i in range(17)]
    d = edit(gravewatch, lambda d: harm(d).update(levels=lv, max=17))
    assert ("sheet.live.tracks[0].levels", "bad-count") in problems(d)


def test_wound_5_penalty_at_most_zero(gravewatch):
    d = edit(gravewatch, lambda d: harm(d)["levels"][0].update(penalty=1))
    assert ("sheet.live.tracks[0].levels[0].penalty", "bad-penalty") in problems(d)
    assert problems(edit(gravewatch, lambda d: harm(d)["levels"][3].update(penalty=-99))) == []


def test_wound_6_one_to_six_kinds(gravewatch):
    kinds = [{"id": f"k{i}", "label": "K", "severity": i} for i in range(7)]
    d = edit(gravewatch, lambda d: harm(d).update(kinds=kinds))
    assert ("sheet.live.tracks[0].kinds", "bad-count") in problems(d)


def test_wound_7_severities_distinct(gravewatch):
    d = edit(gravewatch, lambda d: harm(d)["kinds"][1].update(severity=0))
    assert ("sheet.live.tracks[0].kinds", "duplicate-severity") in problems(d)
    assert problems(edit(gravewatch, lambda d: harm(d)["kinds"][1].update(severity=40))) == []


def test_wound_8_kinds_without_levels_or_boxes(gravewatch):
    d = edit(gravewatch, lambda d: (harm(d).pop("levels"), harm(d).pop("extra")))
    assert ("sheet.live.tracks[0]", "nowhere-to-mark") in problems(d)


def test_wound_9_levels_without_kinds(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).pop("kinds"))
    assert ("sheet.live.tracks[0].kinds", "missing-kinds") in problems(d)


def test_wound_10_never_both(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(boxes={}))
    assert ("sheet.live.tracks[0]", "levels-and-boxes") in problems(d)


def test_wound_12_min_is_zero(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(min=1))
    assert ("sheet.live.tracks[0].min", "bad-min") in problems(d)


def test_wound_13_max_equals_levels_refused_not_corrected(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(max=5))
    from tagengine._internal.errors import RulesetError
    from tagengine._internal.ruleset import Ruleset

    try:
        Ruleset.from_dict(d)
        raise AssertionError
    except RulesetError as e:
        (p,) = [p for p in e.problems if p.code == "wound-max-mismatch"]
    assert str(p).startswith("sheet.live.tracks[0].max: wound-max-mismatch: max is 5 but 4 levels")  # DEC-24
    assert p.value == 5


def test_wound_44_boxes_up_to_64_and_never_live(gravewatch):
    d = edit(gravewatch, lambda d: strain(d).update(max=65))
    assert ("sheet.live.tracks[1].max", "out-of-range") in problems(d)
    d = edit(gravewatch, lambda d: strain(d).update(max={"derived": "harm_left"}))
    assert ("sheet.live.tracks[1].max", "live-read") in problems(d)


def test_wound_14_boxed_track_needs_max(gravewatch):
    d = edit(gravewatch, lambda d: strain(d).pop("max"))
    assert ("sheet.live.tracks[1].max", "missing-key") in problems(d)


def test_wound_45_box_penalties_at_most_zero(gravewatch):
    d = edit(gravewatch, lambda d: strain(d)["boxes"]["penalty"].update(table=[[0, -1], [1, 2]]))
    assert ("sheet.live.tracks[1].boxes.penalty.table[1]", "bad-penalty") in problems(d)


def test_wound_54_indexed_declares_on_full_refuse(gravewatch):
    d = edit(gravewatch, lambda d: strain(d).pop("onFull"))
    assert ("sheet.live.tracks[1].onFull", "indexed-must-refuse") in problems(d)


def test_wound_48_indexed_fill_needs_boxes(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(fill="indexed", onFull="refuse"))
    assert ("sheet.live.tracks[0].fill", "indexed-needs-boxes") in problems(d)


def test_wound_55_57_extra_needs_levels_and_number_columns(gravewatch):
    d = edit(gravewatch, lambda d: harm(d)["extra"].update(countColumn="name"))
    assert ("sheet.live.tracks[0].extra.countColumn", "not-numeric") in problems(d)
    d = edit(gravewatch, lambda d: harm(d)["extra"].update(list="nope"))
    assert ("sheet.live.tracks[0].extra.list", "unknown-ref") in problems(d)
    d = edit(gravewatch, lambda d: strain(d).update(extra=harm(d)["extra"]))
    assert ("sheet.live.tracks[1].extra", "extra-needs-levels") in problems(d)


def test_hide_7_wound_track_cannot_be_hidden(gravewatch):
    d = edit(gravewatch, lambda d: harm(d).update(hideWhen={"field": "watch", "equals": "dawn"}))
    assert ("sheet.live.tracks[0].hideWhen", "hidden-wound-track") in problems(d)


def test_track_2_3_plain_track_range_and_default(ember):
    t = lambda d: d["sheet"]["live"]["tracks"][0]  # noqa: E731
    assert problems(ember) == []  # weariness has a value-reference max (TRACK-2)
    d = edit(ember, lambda d: t(d).update(max=3, default=5))
    assert ("sheet.live.tracks[0].default", "bad-default") in problems(d)
    d = edit(ember, lambda d: t(d).pop("max"))
    assert ("sheet.live.tracks[0].max", "missing-key") in problems(d)
    d = edit(ember, lambda d: t(d).update(default=1.5))
    assert ("sheet.live.tracks[0].default", "wrong-type") in problems(d)


def test_pen_5_penalty_from_names_a_wound_track(gravewatch, ember):
    d = edit(ember, lambda d: d["resolution"].update(penaltyFrom="weariness"))
    assert ("resolution.penaltyFrom", "not-wound-track") in problems(d)
    d = edit(gravewatch, lambda d: d["resolution"].update(penaltyFrom="nope"))
    assert ("resolution.penaltyFrom", "unknown-ref") in problems(d)


def test_hide_3_equals_names_a_value_the_field_can_hold(fifth):
    d = edit(fifth, lambda d: d["sheet"]["live"]["pools"][1]["hideWhen"].update(equals="never"))
    assert ("sheet.live.pools[1].hideWhen.equals", "impossible-value") in problems(d)


def test_hide_4_not_equals_checks_range_and_length(gravewatch, blades):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][1].update(
        hideWhen={"field": "oath", "notEquals": "x" * 121}))
    assert ("sheet.live.pools[1].hideWhen.notEquals", "impossible-value") in problems(d)
    d = edit(blades, lambda d: d["party"]["pools"][1].update(hideWhen={"field": "heat", "in": [3, 10]}))
    assert ("party.pools[1].hideWhen.in[1]", "impossible-value") in problems(d)


def test_hide_2_exactly_one_form(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][1]["hideWhen"].update(equals="dawn"))
    assert ("sheet.live.pools[1].hideWhen", "invalid") in problems(d)


def test_hide_1_field_must_exist(gravewatch):
    d = edit(gravewatch, lambda d: d["sheet"]["live"]["pools"][1]["hideWhen"].update(field="shift"))
    assert ("sheet.live.pools[1].hideWhen.field", "unknown-ref") in problems(d)


def st(d):
    return d["sheet"]["live"]["states"][0]


def test_state_2_two_to_forty_values(ember):
    assert ("sheet.live.states[0].values", "bad-count") in problems(edit(ember, lambda d: st(d).update(
        values=["a"], valueLabels={}, default="a")))
    many = [f"v{i}" for i in range(41)]
    assert ("sheet.live.states[0].values", "bad-count") in problems(edit(ember, lambda d: st(d).update(
        values=many, valueLabels={}, default="v0")))


def test_state_4_5_values_are_prompt_safe_and_unquoted(ember):
    d = edit(ember, lambda d: st(d).update(values=["guarded", 'st"eady', "reck[less]"], valueLabels={},
                                           default="guarded"))
    p = problems(d)
    assert ("sheet.live.states[0].values[1]", "unsafe-text") in p
    assert ("sheet.live.states[0].values[2]", "unsafe-text") in p


def test_state_6_at_most_twelve(ember):
    d = edit(ember, lambda d: d["sheet"]["live"]["states"].extend(
        {"id": f"s{i}", "label": f"S{i}", "values": ["a", "b"]} for i in range(12)))
    assert ("sheet.live.states", "bad-count") in problems(d)


def test_state_7_default_is_a_value(ember):
    assert ("sheet.live.states[0].default", "unknown-value") in problems(edit(ember, lambda d: st(d).update(
        default="calm")))


def test_state_3_value_labels_name_values(ember):
    d = edit(ember, lambda d: st(d)["valueLabels"].update(calm="Calm"))
    assert ("sheet.live.states[0].valueLabels.calm", "unknown-value") in problems(d)
