"""Wound tracks during play: WOUND-15..31, 44..60 and DEC-16 (spec 10.3: the rules are exact)."""

from __future__ import annotations

from cmdkit import run, sample_state, with_live

from conftest import load_sample
from tagengine._internal.state import GameState, WoundMarks

GRAVE = load_sample("gravewatch")


def bram(marks=(), overflow=0):
    s = sample_state("gravewatch")  # Bram: harm with 4 levels, no scars
    return with_live(GRAVE, s, bram={"marks": {"harm": {"marks": list(marks), "overflow": overflow}}})


def harm_of(applied, who="Bram"):
    return applied.state.live_of(who).marks.get("harm", WoundMarks())


def dmg(kind, amount=1, who="Bram"):
    k = f' kind="{kind}"' if kind else ""
    return f'[sheet: who="{who}" op="damage" track="harm"{k} amount="{amount}"]'


def test_wound_27_mark_and_dec_11_now():
    a, res = run(GRAVE, bram(), dmg("knock"))
    assert res == [("ok", "1/4 Scuffed")] and harm_of(a).marks == ("knock",)


def test_wound_15_17_new_mark_inserted_by_severity():
    a, res = run(GRAVE, bram(["knock", "knock"]), dmg("tear"))
    assert harm_of(a).marks == ("tear", "knock", "knock") and res == [("ok", "3/4 Bleeding")]


def test_wound_18_penalty_lowest_marked_level():
    from tagengine._internal.sheet import view_character

    a, _ = run(GRAVE, bram(), dmg("knock") + dmg("knock") + dmg("knock"))
    assert next(w for w in view_character(GRAVE, a.state, "Bram").wounds if w.id == "harm").penalty == -3


def test_wound_16_19_20_amount_one_at_a_time_and_full_track_raises_lightest():
    a, _res = run(GRAVE, bram(["tear", "knock"]), dmg("knock", 4))
    # two fit; the third raises the lightest knock to tear; the fourth raises the next knock.
    assert harm_of(a).marks == ("tear", "tear", "tear", "knock")
    a, _ = run(GRAVE, bram(["tear", "knock"]), dmg("knock", 2) + dmg("knock", 1) + dmg("knock", 1))
    assert harm_of(a).marks == ("tear", "tear", "tear", "knock")  # same as one command (WOUND-19)


def test_wound_20_raise_is_one_step_whatever_the_new_kind():
    a, _ = run(GRAVE, bram(["knock"] * 4), dmg("tear"))
    assert harm_of(a).marks == ("tear", "knock", "knock", "knock")


def test_wound_21_22_past_highest_severity_is_overflow_and_saved():
    a, res = run(GRAVE, bram(["tear"] * 4), dmg("knock", 2))
    assert harm_of(a) == WoundMarks(("tear",) * 4, 2) and res == [("ok", "4/4 Down +2 overflow")]
    again = GameState.loads(GRAVE, a.state.dumps())
    assert again.live_of("Bram").marks["harm"].overflow == 2


def test_wound_23_24_heal_clears_overflow_first():
    a, res = run(GRAVE, bram(["tear"] * 4, 2), dmg(None, -3))
    assert harm_of(a) == WoundMarks(("tear",) * 3, 0) and res == [("ok", "3/4 Bleeding")]


def test_wound_25_heal_naming_a_kind_clears_only_that_kind():
    a, _ = run(GRAVE, bram(["tear", "knock", "knock"], 1), dmg("knock", -5))
    assert harm_of(a) == WoundMarks(("tear",), 1)


def test_wound_26_heal_without_kind_clears_lightest_first():
    a, _ = run(GRAVE, bram(["tear", "knock"]), dmg(None, -1))
    assert harm_of(a).marks == ("tear",)
    a, _ = run(GRAVE, bram(["tear", "knock"]), dmg("burn", -1))  # not one of the track's kinds
    assert harm_of(a).marks == ("tear",)


def test_dec_16_kind_required_known_and_wound_only():
    s = bram()
    _, res = run(GRAVE, s, dmg(None) + dmg("burn") + '[sheet: who="Bram" op="damage" track="strain" kind="strain" '
                 'box="9"][sheet: who="Bram" op="damage" track="harm" kind="knock" box="1"]')
    assert res == [("refused", "missing-kind"), ("refused", "unknown-kind"), ("refused", "bad-box"),
                   ("refused", "bad-box")]
    ember = load_sample("ember-roads")
    _, res = run(ember, sample_state("ember-roads"), '[sheet: who="Mira" op="damage" track="weariness" kind="x"]')
    assert res == [("refused", "not-wound-track")]


def strain(marks):
    s = sample_state("gravewatch")  # Mira: strain has sinew 2 + 2 = 4 boxes
    return with_live(GRAVE, s, mira={"marks": {"strain": {"marks": list(marks)}}})


def sdmg(amount=1, box=None):
    b = f' box="{box}"' if box is not None else ""
    return f'[sheet: who="Mira" op="damage" track="strain" kind="strain" amount="{amount}"{b}]'


def test_wound_28_48_indexed_fill_named_box_or_next_free_above():
    a, res = run(GRAVE, strain([]), sdmg(box=3) + sdmg() + sdmg(box=3))
    assert a.state.live_of("Mira").marks["strain"].marks == ("strain", None, "strain", "strain")
    assert res == [("ok", "1/4"), ("ok", "2/4"), ("ok", "3/4")]


def test_wound_49_marks_never_move():
    a, _ = run(GRAVE, strain([None, "strain"]), sdmg(box=1) + sdmg(-1, None))
    # the heal clears the highest of the lightest (WOUND-50): box 2; box 1 stays where it was placed
    assert a.state.live_of("Mira").marks["strain"].marks == ("strain",)


def test_wound_50_heal_highest_of_the_lightest():
    a, _ = run(GRAVE, strain(["strain", None, "strain"]), sdmg(-1))
    assert a.state.live_of("Mira").marks["strain"].marks == ("strain",)


def test_wound_52_53_refuse_whole_command():
    s = strain([None, "strain"])
    a, res = run(GRAVE, s, sdmg(4))  # four marks, three free boxes: none placed
    assert res == [("refused", "track-full")]
    assert a.state.live_of("Mira").marks["strain"].marks == (None, "strain")
    _, res = run(GRAVE, s, sdmg(1, box=4) + sdmg(1, box=4))  # no free box above box 4
    assert res == [("ok", "2/4"), ("refused", "track-full")]


def test_wound_55_58_marks_use_extra_levels():
    s = sample_state("gravewatch")  # Mira has scars: 7 levels
    _a, res = run(GRAVE, s, '[sheet: who="Mira" op="damage" track="harm" kind="knock" amount="2"]')
    assert res == [("ok", "4/7 -2")]


def test_wound_60_deleted_row_marks_become_overflow():
    s = sample_state("gravewatch")
    full = with_live(GRAVE, s, mira={"marks": {"harm": {"marks": ["tear"] * 7}}})
    doc = full.to_json()
    doc["gameCharacterCards"]["Mira"]["lists"]["scars"] = []  # the player deletes the scars
    short = GameState.loads(GRAVE, __import__("json").dumps(doc))
    _a, res = run(GRAVE, short, dmg(None, -1, who="Mira"))
    assert res == [("ok", "4/4 Down +2 overflow")]  # 3 became overflow; the heal cleared one of them


def test_wound_44_box_count_follows_the_sheet():
    s = sample_state("gravewatch")
    doc = s.to_json()
    doc["gameCharacterCards"]["Mira"]["abilities"]["sinew"] = 4  # 6 boxes
    s = GameState.loads(GRAVE, __import__("json").dumps(doc))
    _, res = run(GRAVE, s, sdmg(5))
    assert res == [("ok", "6/6")]
