"""Sheet evaluation at its edges (REF, SHEET-19..31, HIDE, WOUND-44..60, UNTR, decisions E-1..E-7), pinned where a
mutation pass found them unchecked (issue 29, docs/mutation.md). Each ruleset here is built for the one edge."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from cmdkit import sample_state

from conftest import edit, load_sample, sample_dict
from tagengine._internal.commands import apply_reply
from tagengine._internal.errors import NotFoundError
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, SheetView, view_card, view_character, view_party
from tagengine._internal.sheet.check_numbers import check_number, fight_number
from tagengine._internal.sheet.form import edit_form
from tagengine._internal.sheet.ops import rounded, step
from tagengine._internal.state import GameState

BASE = {"sheet": {
    "abilities": [{"id": "brawn", "label": "Brawn", "min": 0, "max": 9, "default": 3}],
    "fields": [{"id": "n", "label": "N", "type": "number", "min": -20, "max": 20, "default": 0},
               {"id": "mood", "label": "Mood", "type": "enum", "values": ["calm", "wild"]}],
    "live": {}}}


def rs_of(fn) -> Ruleset:
    return Ruleset.from_dict(edit(BASE, fn))


def ev_of(rs, fields=None, live=None) -> Eval:
    card = GameState.new(rs, ["X"]).cards["X"]
    if fields:
        card = {**card, "fields": {**card.get("fields", {}), **fields}}
    return Eval(rs, card, live)


# -- derived values -------------------------------------------------------------------------------------------
def test_sheet_26_a_step_table_reads_its_default_below_the_first_threshold():
    def derived(d, default=None):
        row = {"id": "s", "label": "S", "op": "stepTable", "from": {"field": "n"}, "table": [[2, 10], [5, 20]]}
        if default is not None:
            row["default"] = default
        d["sheet"]["derived"] = [row]
    rs = rs_of(derived)
    assert [ev_of(rs, {"n": n}).derived("s") for n in (1, 2, 4, 5, 9)] == [0, 10, 10, 20, 20]
    rs = rs_of(lambda d: derived(d, -3))
    assert [ev_of(rs, {"n": n}).derived("s") for n in (1, 2)] == [-3, 10]
    assert step([(2, 10)], 1) == 0 and step([], 7) == 0 and step([(2, 10)], 1, 4) == 4


def test_sheet_25_scale_rounds_half_away_from_zero_by_default():
    assert [rounded(x, None) for x in (0.5, 1.5, -0.5, -1.5, 0.4, -0.4, 0.0)] == [1, 2, -1, -2, 0, 0, 0]
    assert all(type(rounded(x, how)) is int for x in (-2.5, 2.5) for how in (None, "down", "up"))
    rs = rs_of(lambda d: d["sheet"].update(derived=[
        {"id": "h", "label": "H", "op": "scale", "from": {"field": "n"}, "by": 0.5}]))
    assert [ev_of(rs, {"n": n}).derived("h") for n in (-5, -1, 1, 5)] == [-3, -1, 1, 3]
    rs = rs_of(lambda d: d["sheet"].update(derived=[
        {"id": "z", "label": "Z", "op": "scale", "from": {"field": "n"}, "by": 0}]))
    assert ev_of(rs, {"n": 7}).derived("z") == 0


def test_ref_2_two_list_sums_of_one_list_are_each_their_own_column():
    rs = Ruleset.from_dict(edit(sample_dict("ember-roads"), lambda d: (
        d["sheet"]["lists"][0]["columns"].append({"id": "worth", "label": "Worth", "type": "number", "min": 0,
                                                  "max": 99, "default": 0}),
        d["sheet"]["derived"].insert(0, {"id": "worth", "label": "Worth", "op": "sum", "of": [
            {"listSum": {"list": "gear", "column": "worth"}}]}))))
    card = {**GameState.new(rs, ["X"]).cards["X"], "lists": {"gear": [{"item": "Rope", "bulk": 2, "worth": 7}]}}
    ev = Eval(rs, card, None)
    assert (ev.derived("worth"), ev.derived("burden")) == (7, 2)



def test_party_26_a_ruleset_without_a_party_sheet_has_no_party_form():
    with pytest.raises(NotFoundError) as e:
        edit_form(load_sample("gravewatch"), sample_state("gravewatch"), None)
    assert str(e.value) == "unknown party sheet 'party'"

# -- plain tracks, live reads -----------------------------------------------------------------------------------
def tracks(d, **extra):
    d["sheet"]["live"]["tracks"] = [{"id": "t", "label": "T", "min": 2, "max": 8, "default": 5, **extra}]
    d["sheet"]["derived"] = [{"id": f"r_{w}", "label": w, "op": "sum", "of": [{"liveTrack": "t", "read": w}]}
                             for w in ("value", "filled", "remaining")]


def test_track_2_a_plain_track_starts_at_its_default_and_reads_from_its_min():
    rs = rs_of(tracks)
    ev = ev_of(rs)
    assert ev.plain_value(rs.sheet.tracks.get("t")) == 5
    assert [ev.derived(f"r_{w}") for w in ("value", "filled", "remaining")] == [5, 3, 3]
    (t,) = view_character(rs, GameState.new(rs, ["X"]), "X").tracks
    assert (t.value, t.min, t.max, t.default) == (5, 2, 8, 5)


def test_ref_10_a_hidden_plain_track_reads_0_and_says_why_it_is_hidden():
    rs = rs_of(lambda d: tracks(d, hideWhen={"field": "mood", "equals": "calm"}))
    ev = ev_of(rs)  # mood defaults to calm
    assert [ev.derived(f"r_{w}") for w in ("value", "filled", "remaining")] == [0, 0, 0]
    (t,) = view_character(rs, GameState.new(rs, ["X"]), "X").tracks
    assert t.hidden == "mood is 'calm'"
    assert ev_of(rs, {"mood": "wild"}).derived("r_filled") == 3


@pytest.mark.parametrize(("form", "value", "calm", "wild"), [
    ("equals", "calm", "mood is 'calm'", None),
    ("notEquals", "wild", "mood is 'calm', not 'wild'", None),
    ("in", ["calm"], "mood is 'calm', one of ['calm']", None),
    ("in", ["wild", "calm"], "mood is 'calm', one of ['wild', 'calm']", "mood is 'wild', one of ['wild', 'calm']"),
])
def test_hide_1_2_each_form_hides_and_says_why(form, value, calm, wild):
    rs = rs_of(lambda d: d["sheet"]["live"].update(states=[{"id": "s", "label": "S", "values": ["a", "b"],
                                                            "hideWhen": {"field": "mood", form: value}}]))
    new = GameState.new(rs, ["X"])  # mood: calm, its first value
    assert view_character(rs, new, "X").states[0].hidden == calm
    card = {**new.cards["X"], "fields": {**new.cards["X"]["fields"], "mood": "wild"}}
    assert view_character(rs, GameState(cards={"X": card}), "X").states[0].hidden == wild


# -- pools ------------------------------------------------------------------------------------------------------
def test_c_3_a_pool_that_allows_temporary_points_holds_0_until_granted():
    fifth = load_sample("fifth-like")
    st = GameState.new(fifth, ["X"])
    hp = next(p for p in view_character(fifth, st, "X").pools if p.id == "hp")
    assert hp.temp == 0 and hp.now == f"{hp.max}/{hp.max}"
    assert view_character(fifth, st, "X").health.temp == 0


def test_sheet_31_a_row_of_no_uses_is_a_pool_of_0():
    fifth = load_sample("fifth-like")
    card = {**GameState.new(fifth, ["X"]).cards["X"], "lists": {"features": [{"name": "Spent", "uses": 0},
                                                                               {"name": "Once", "uses": 1}]}}
    view = view_card(fifth, card, None, "X")
    assert view.row_pools["features"] == ((0, 0), (1, 1))
    assert view_card(fifth, card, None).name == ""


# -- wound tracks -----------------------------------------------------------------------------------------------
def test_wound_44_a_track_of_numbered_boxes_is_as_long_as_its_own_max():
    for top in (1, 5):
        rs = rs_of(lambda d, m=top: d["sheet"]["live"].update(tracks=[
            {"id": "s", "label": "S", "min": 0, "max": m, "boxes": {}, "kinds": [{"id": "k", "label": "K",
                                                                              "severity": 0}]}]))
        (w,) = view_character(rs, GameState.new(rs, ["X"]), "X").wounds
        assert (w.length, w.penalty) == (top, 0)  # no penalty table: no penalty


def test_wound_27_a_levelled_track_without_extra_levels_marks_as_any():
    rs = rs_of(lambda d: d["sheet"]["live"].update(tracks=[
        {"id": "h", "label": "H", "min": 0, "levels": [{"label": "Hurt", "penalty": -1}],
         "kinds": [{"id": "k", "label": "K", "severity": 0}]}]))
    out = apply_reply(rs, GameState.new(rs, ["X"]), '[sheet: who="X" op="damage" track="h" kind="k"]')
    assert [(r.result, r.now) for r in out.receipts] == [("ok", "1/1 Hurt")]


def extra_levels(rows, *, first=0, lo=0, hi=20, pmax=0):
    """A levelled track whose first level's penalty is `first`, with extra levels from a `scars` list."""
    rs = rs_of(lambda d: (
        d["sheet"].update(lists=[{"id": "scars", "label": "Scars", "columns": [
            {"id": "n", "label": "N", "type": "number", "min": lo, "max": hi, "default": 1},
            {"id": "p", "label": "P", "type": "number", "min": -99, "max": pmax, "default": -1}]}]),
        d["sheet"]["live"].update(tracks=[{"id": "h", "label": "H", "min": 0, "levels": [
            {"label": "One", "penalty": first}, {"label": "Two", "penalty": -2}],
            "kinds": [{"id": "k", "label": "K", "severity": 0}],
            "extra": {"list": "scars", "countColumn": "n", "penaltyColumn": "p"}}])))
    card = {**GameState.new(rs, ["X"]).cards["X"], "lists": {"scars": rows}}
    (w,) = view_card(rs, card, None).wounds
    return [(lv.label, lv.penalty) for lv in w.levels]


def test_wound_56_57_extra_levels_count_from_0_to_16_and_go_after_the_last_as_good():
    assert extra_levels([{"n": 0, "p": -1}]) == [("One", 0), ("Two", -2)]  # a row of no levels adds none
    assert len(extra_levels([{"n": 20, "p": -1}])) == 2 + 16  # at most 16 a row
    assert extra_levels([{"n": 1, "p": 0}], first=-1) == [("0", 0), ("One", -1), ("Two", -2)]  # better than all
    assert extra_levels([{"n": 1, "p": 3}], pmax=5) == [("One", 0), ("One", 0), ("Two", -2)]  # never above 0


# -- checks -----------------------------------------------------------------------------------------------------
def test_untr_1_a_training_id_the_ladder_lacks_reads_as_its_first_level():
    grave = load_sample("gravewatch")
    card = {**GameState.new(grave, ["X"]).cards["X"], "skills": {"ward": "grand master"}}
    c = check_number(Eval(grave, card, None), "skill", "ward")
    assert (c.training, c.trained, c.bonus) == ("none", False, 0)


def test_sheet_3_an_ability_check_carries_its_section():
    rs = Ruleset.from_dict(edit(BASE, lambda d: (d["sheet"].update(sections=[{"id": "body", "label": "Body"}]),
                                                 d["sheet"]["abilities"][0].update(section="body"))))
    assert view_character(rs, GameState.new(rs, ["X"]), "X").abilities[0].section == "body"
    assert view_character(load_sample("gravewatch"), sample_state("gravewatch"), "Mira").abilities[0].section is None


def test_a_check_number_for_an_id_the_sheet_lacks_is_a_zero():
    ev = Eval(load_sample("gravewatch"), GameState.new(load_sample("gravewatch"), ["X"]).cards["X"], None)
    assert check_number(ev, "save", "nope").to_json() == {
        "kind": "save", "id": "nope", "label": "nope", "ability": None, "training": None, "trained": False,
        "base": 0, "bonus": 0, "untrained": 0, "rule": "normal", "cap": None, "sheet": 0, "penalty": 0, "adjust": 0,
        "total": 0, "target": None, "section": None}


def test_adj_9_a_fights_roll_from_no_ability_is_built_from_nothing():
    grave = load_sample("gravewatch")
    ev = Eval(grave, sample_state("gravewatch").cards["Mira"], sample_state("gravewatch").live_of("Mira"))
    assert fight_number(ev, "initiative").to_json() == {
        "kind": "fight", "id": "initiative", "label": "Initiative", "ability": None, "training": None,
        "trained": False, "base": 0, "bonus": 0, "untrained": 0, "rule": "normal", "cap": None, "sheet": 0,
        "penalty": -1, "adjust": 0, "total": 0, "target": None, "section": None}
    ember = load_sample("ember-roads")  # a dice pool whose target can move: the target per die, not harder
    assert fight_number(Eval(ember, GameState.new(ember, ["X"]).cards["X"], None), "attack").target == 4


# -- the whole view -------------------------------------------------------------------------------------------------
def test_a_3_a_sheet_view_is_read_only_all_the_way_down():
    view = SheetView("X", {"a": 1}, {}, {"d": 2}, {"l": [{"c": 1}]})
    assert type(view.fields) is MappingProxyType and type(view.derived) is MappingProxyType
    with pytest.raises(TypeError):
        view.lists["l"][0]["c"] = 2
    assert isinstance(view.lists["l"], tuple)


def test_characters_and_the_party_sheet_are_named_by_the_state():
    grave = load_sample("gravewatch")
    with pytest.raises(NotFoundError) as e:
        view_character(grave, sample_state("gravewatch"), "Nobody")
    assert (e.value.what, e.value.name, e.value.known) == ("character", "Nobody", ("Mira", "Bram"))
    blades = load_sample("blades-like")
    assert view_party(blades, GameState.new(blades, ["A"])).name == "Crew"
    assert view_party(grave, sample_state("gravewatch")) is None


# -- values as a card stores them (a chat app's card may hold anything) -------------------------------------------
def raw_card(rs, **parts):
    card = dict(GameState.new(rs, ["X"]).cards["X"])
    for k, v in parts.items():
        card[k] = {**card.get(k, {}), **v}
    return card


def test_hide_5_a_stored_field_of_the_wrong_kind_reads_its_default_and_a_number_its_bounds():
    rs = rs_of(lambda d: d["sheet"]["fields"].extend([
        {"id": "flag", "label": "Flag", "type": "boolean", "default": True},
        {"id": "note", "label": "Note", "type": "text", "default": "none"},
        {"id": "m", "label": "M", "type": "number", "min": 2, "max": 6}]))
    card = raw_card(rs, fields={"n": True, "mood": "gone", "flag": "yes", "note": 7, "m": 1})
    assert Eval(rs, card, None).fields == {"n": 0, "mood": "calm", "flag": True, "note": "none", "m": 2}
    card = raw_card(rs, fields={"n": "3", "mood": "wild", "flag": False, "note": "ok", "m": 9})
    assert Eval(rs, card, None).fields == {"n": 0, "mood": "wild", "flag": False, "note": "ok", "m": 6}
    card = raw_card(rs, fields={"n": -25, "m": 4})
    assert Eval(rs, card, None).fields["n"] == -20 and Eval(rs, card, None).fields["m"] == 4


def test_sheet_7_a_stored_ability_of_the_wrong_kind_reads_its_default_or_its_min():
    rs = rs_of(lambda d: d["sheet"]["abilities"].append({"id": "wits", "label": "Wits", "min": 1, "max": 5}))
    ev = Eval(rs, raw_card(rs, abilities={"brawn": True, "wits": "4"}), None)
    assert (ev.ability_score("brawn"), ev.ability_score("wits")) == (3, 1)
    ev = Eval(rs, raw_card(rs, abilities={"brawn": 12, "wits": 0}), None)
    assert (ev.ability_score("brawn"), ev.ability_score("wits")) == (9, 1)


def test_ref_1_every_reference_reads_the_same_wherever_it_is_read():
    """A pool's max, a cap and an adjust value are read by the evaluation itself, not the compiled derived values:
    each form of reference must read the same there."""
    def change(d):
        d["sheet"]["abilities"][0].update(max=20)
        d["sheet"].update(
            abilityModifier="d20",
            training=[{"id": "no", "label": "No", "bonus": 0}, {"id": "yes", "label": "Yes", "bonus": 2}],
            skills=[{"id": "lift", "label": "Lift", "ability": "brawn"}],
            saves=[{"id": "grit", "label": "Grit", "ability": "brawn"}],
            lists=[{"id": "bag", "label": "Bag", "columns": [
                {"id": "w", "label": "W", "type": "number", "min": 0, "max": 9, "default": 1},
                {"id": "on", "label": "On", "type": "boolean", "default": True}]}])
        d["sheet"]["fields"].append({"id": "key", "label": "Key", "type": "enum", "values": ["brawn"]})
        d["sheet"]["live"].update(
            tracks=[{"id": "t", "label": "T", "min": 1, "max": 9, "default": 4}],
            pools=[{"id": p, "label": p, "max": ref} for p, ref in (
                ("score", {"abilityScore": "brawn"}), ("mod", {"abilityMod": "brawn"}),
                ("from_field", {"abilityModFromField": "key"}), ("skill", {"skillMod": "lift"}),
                ("save", {"saveMod": "grit"}), ("sum", {"listSum": {"list": "bag", "column": "w", "onlyWhen": "on"}}),
                ("zero", {"field": "n"}))])
        d["sheet"]["derived"] = [{"id": "tr", "label": "Tr", "op": "sum", "of": [{"liveTrack": "t"}]}]
    rs = rs_of(change)
    card = raw_card(rs, abilities={"brawn": 14}, saves={"grit": "yes"},
                    lists={"bag": [{"w": 2}, {"w": 3, "on": False}, {"w": 4}]})
    ev = Eval(rs, card, None)
    maxima = {p.id: ev.pool_max(p) for p in rs.sheet.pools}
    assert maxima == {"score": 14, "mod": 2, "from_field": 2, "skill": 2, "save": 4, "sum": 6, "zero": 0}
    assert ev.derived("tr") == 4  # liveTrack without `read` reads the value


def test_pen_3_adj_6_a_dice_pool_floor_is_its_min_or_1_and_never_below_0():
    def pool(d, **res):
        d["sheet"].update(sections=[], skills=[{"id": "s", "label": "S", "ability": "brawn",
                                                  "untrained": {"by": -5}}],
                          training=[{"id": "no", "label": "No", "bonus": 0}])
        d["resolution"] = {"type": "dice-pool", "adjust": [{"value": {"field": "n"}}], **res}
    rs = rs_of(pool)  # no `pool`: the floor is 1
    for n, total in ((0, 3), (-2, 1), (-9, 1)):
        assert check_number(Eval(rs, raw_card(rs, fields={"n": n}), None), "ability", "brawn").total == total
    skill = check_number(Eval(rs, raw_card(rs, fields={"n": 0}), None), "skill", "s")
    assert (skill.sheet, skill.total) == (-2, 0)  # a sheet number below 0 rolls no dice, never fewer than none
    rs = rs_of(lambda d: pool(d, pool={"min": 2}))
    assert check_number(Eval(rs, raw_card(rs, fields={"n": -9}), None), "ability", "brawn").total == 2
    assert check_number(Eval(rs, raw_card(rs, abilities={"brawn": 1}, fields={"n": -9}), None), "ability",
                        "brawn").total == 1  # a sheet number already below the floor is kept


def test_e_1_a_skill_without_an_ability_starts_from_0_and_a_pool_counts_scores_not_modifiers():
    rs = rs_of(lambda d: (d["sheet"].update(abilityModifier="d20", skills=[{"id": "luck", "label": "Luck"}]),
                          d.update(resolution={"type": "dice-pool"})))
    ev = Eval(rs, raw_card(rs, abilities={"brawn": 7}), None)
    assert check_number(ev, "skill", "luck").base == 0 and check_number(ev, "ability", "brawn").base == 7
    assert check_number(ev, "ability", "brawn").target is None  # no `pool.target`: none (CK-4 counts 4)


def test_pool_max_reads_0_when_its_reference_does():
    rs = rs_of(lambda d: d["sheet"]["live"].update(pools=[{"id": "p", "label": "P", "max": {"field": "n"}}]))
    (p,) = view_character(rs, GameState.new(rs, ["X"]), "X").pools
    assert (p.cur, p.max) == (0, 0)
