"""Wound-track reads: penalty (WOUND-18), boxes (WOUND-44..47), extra levels (WOUND-55..60)."""

from __future__ import annotations

from conftest import edit, load_sample, sample_dict
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval
from tagengine._internal.state import GameState, LiveValues, WoundMarks

GRAVE = load_sample("gravewatch")


def card(rs, scars=(), **fields):
    c = GameState.new(rs, ["X"]).cards["X"]
    return {**c, "fields": {**c["fields"], **fields}, "lists": {"scars": list(scars)}}


def harm(rs, c, marks, overflow=0):
    track = rs.sheet.tracks.get("harm")
    return Eval(rs, c, LiveValues(marks={"harm": WoundMarks(tuple(marks), overflow)})).wound(track)


def test_wound_18_penalty_of_lowest_marked_level_not_a_sum():
    w = harm(GRAVE, card(GRAVE), ("tear", "knock", "knock"))
    assert w.penalty == -3 and w.lowest == "Bleeding"
    assert harm(GRAVE, card(GRAVE), ()).penalty == 0


def test_dec_11_now_text():
    assert harm(GRAVE, card(GRAVE), ()).now == "0/4"
    assert harm(GRAVE, card(GRAVE), ("tear", "knock")).now == "2/4 Winded"
    assert harm(GRAVE, card(GRAVE), ("tear",) * 4, 2).now == "4/4 Down +2 overflow"


def test_wound_44_box_count_from_the_sheet():
    strain = GRAVE.sheet.tracks.get("strain")
    for sinew, boxes in ((2, 4), (5, 7)):
        c = {**card(GRAVE), "abilities": {"sinew": sinew, "nerve": 2, "lore": 2}}
        assert Eval(GRAVE, c, None).wound(strain).length == boxes


def test_wound_45_46_box_penalty_by_remaining_whatever_box():
    strain = GRAVE.sheet.tracks.get("strain")
    c = card(GRAVE)  # 4 boxes; table by remaining: 0 left -> -1, 1+ left -> 0
    for marks, pen in (((), 0), (("strain", None, "strain"), 0), ((None, "strain", "strain", "strain"), 0),
                       (("strain",) * 4, -1)):
        w = Eval(GRAVE, c, LiveValues(marks={"strain": WoundMarks(marks)})).wound(strain)
        assert w.penalty == pen, marks


def test_wound_45_table_can_cost_with_nothing_marked():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["tracks"][1]["boxes"]["penalty"].update(
        by="filled", table=[[0, -1], [2, 0]]))
    rs = Ruleset.from_dict(d)
    w = Eval(rs, card(rs), None).wound(rs.sheet.tracks.get("strain"))
    assert (w.filled, w.penalty) == (0, -1)


def test_wound_47_boxed_now_is_filled_of_boxes():
    ev = Eval(GRAVE, card(GRAVE), LiveValues(marks={"strain": WoundMarks((None, "strain"))}))
    w = ev.wound(GRAVE.sheet.tracks.get("strain"))
    assert w.now == "1/4"


def test_wound_55_58_scars_insert_levels_after_the_last_as_good():
    scars = [{"name": "Old bite", "levels": 1, "penalty": -1}, {"name": "Burn", "levels": 2, "penalty": -2}]
    w = harm(GRAVE, card(GRAVE, scars), ())
    # WOUND-56: each row in order adds its levels; WOUND-57: after the last level whose penalty is as good
    assert [(lv.label, lv.penalty) for lv in w.levels] == [
        ("Scuffed", 0), ("Winded", -1), ("Winded", -1), ("-2", -2), ("-2", -2), ("Bleeding", -3), ("Down", -99)]
    assert w.length == 7


def test_wound_56_at_most_sixteen_levels_per_row():
    w = harm(GRAVE, card(GRAVE, [{"name": "Huge", "levels": 16, "penalty": 0}]), ())
    assert w.length == 20 and w.levels[1].label == "Scuffed"


def test_wound_59_hidden_list_adds_nothing():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["lists"][0].update(
        hideWhen={"field": "watch", "equals": "dawn"}))
    rs = Ruleset.from_dict(d)
    scars = [{"name": "Old bite", "levels": 2, "penalty": -1}]
    assert harm(rs, card(rs, scars, watch="dawn"), ()).length == 4
    assert harm(rs, card(rs, scars, watch="dusk"), ()).length == 6


def test_wound_60_deleted_row_turns_its_marks_into_overflow():
    scars = [{"name": "Old bite", "levels": 2, "penalty": -1}]
    marks = ("tear",) * 6
    assert harm(GRAVE, card(GRAVE, scars), marks).overflow == 0
    w = harm(GRAVE, card(GRAVE), marks, overflow=1)  # the scar row was deleted
    assert (w.filled, w.overflow, w.penalty) == (4, 3, -99)
