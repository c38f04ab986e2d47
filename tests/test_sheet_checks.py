"""Check numbers: untrained rules (UNTR), caps (CAP), wound penalties (PEN) and adjust (ADJ)."""

from __future__ import annotations

import json

from cmdkit import sample_state

from conftest import edit, load_sample, sample_dict
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, view_character
from tagengine._internal.sheet.check_numbers import check_number
from tagengine._internal.state import GameState, LiveValues, WoundMarks

EMBER = load_sample("ember-roads")
GRAVE = load_sample("gravewatch")
FIFTH = load_sample("fifth-like")


def card(rs, **parts):
    c = GameState.new(rs, ["X"]).cards["X"]
    for k, v in parts.items():
        c = {**c, k: {**c.get(k, {}), **v}}
    return c


def num(rs, kind, cid, c=None, live=None, with_ability=None):
    return check_number(Eval(rs, c or card(rs), live), kind, cid, with_ability)


def test_untr_1_first_level_is_untrained_and_rolls_normally():
    n = num(EMBER, "skill", "wayfind")
    assert (n.trained, n.rule, n.total) == (False, "normal", 2)


def test_untr_3_own_rule_over_section_rule():
    assert num(EMBER, "skill", "dig").rule == "refuse"  # own "refuse" beats the section's {by: -1}
    haul = num(EMBER, "skill", "haul")  # in labour, no rule of its own: SHEET-5, the section's rule applies
    assert (haul.rule, haul.untrained, haul.total) == ("by", -1, 1)


def test_untr_5_6_by_is_part_of_the_sheet_number_before_the_cap():
    d = edit(sample_dict("gravewatch"), lambda d: d["sheet"]["skills"][0].update(untrained={"by": -2}))
    rs = Ruleset.from_dict(d)
    n = num(rs, "skill", "soothe", live=LiveValues(pools={"resolve": 1}))
    assert (n.base, n.untrained, n.cap, n.sheet) == (2, -2, 1, 0)  # 2 - 2 = 0, then capped at 1 -> 0
    n = num(rs, "skill", "soothe", card(rs, abilities={"nerve": 5}), LiveValues(pools={"resolve": 2}))
    assert n.sheet == 2  # 5 - 2 = 3, capped at 2


def test_untr_7_harder_raises_the_target_within_range():
    n = num(EMBER, "skill", "listen")
    assert (n.rule, n.target, n.total) == ("harder", 5, 2)
    d = edit(sample_dict("ember-roads"), lambda d: d["resolution"]["pool"].update(target={"value": 6, "min": 2,
                                                                                         "max": 6}))
    assert num(Ruleset.from_dict(d), "skill", "listen").target == 6


def test_untr_9_13_refuse_has_no_number():
    n = num(EMBER, "skill", "dig")
    assert n.total is None and n.sheet is None


def test_untr_16_trained_character_rolls_normally():
    c = card(EMBER, skills={"dig": "trained", "listen": "expert"})
    assert num(EMBER, "skill", "dig", c).total == 3 and num(EMBER, "skill", "listen", c).target == 4


def test_cap_1_2_soothe_capped_by_remaining_resolve():
    c = card(GRAVE, abilities={"nerve": 3}, skills={"soothe": "sworn"})
    for resolve, want in ((5, 4), (2, 2), (0, 0)):
        n = num(GRAVE, "skill", "soothe", c, LiveValues(pools={"resolve": resolve}))
        assert (n.sheet, n.total) == (want, want)


def test_cap_3_with_is_computed_before_the_cap_then_capped():
    c = card(GRAVE, abilities={"nerve": 1, "sinew": 5}, skills={"soothe": "sworn"})
    n = num(GRAVE, "skill", "soothe", c, LiveValues(pools={"resolve": 3}), with_ability="sinew")
    assert (n.base, n.bonus, n.sheet) == (5, 1, 3)


def test_pen_1_3_dice_removed_never_below_pool_min():
    c = card(GRAVE, abilities={"sinew": 3})
    for marks, want in (((), 3), (("knock", "knock"), 2), (("tear", "tear", "knock"), 1),
                        (("tear",) * 4, 1)):
        n = num(GRAVE, "ability", "sinew", c, LiveValues(marks={"harm": WoundMarks(marks)}))
        assert n.total == want, marks
    assert num(GRAVE, "ability", "sinew", c, LiveValues(marks={"harm": WoundMarks(("tear",) * 4)})).penalty == -99


def test_pen_3_pool_min_zero_can_roll_no_dice():
    d = edit(sample_dict("gravewatch"), lambda d: d["resolution"]["pool"].update(min=0))
    rs = Ruleset.from_dict(d)
    assert num(rs, "ability", "sinew", live=LiveValues(marks={"harm": WoundMarks(("tear",) * 4)})).total == 0


def test_pen_2_without_penalty_from_rolls_as_before():
    d = edit(sample_dict("gravewatch"), lambda d: d["resolution"].pop("penaltyFrom"))
    rs = Ruleset.from_dict(d)
    n = num(rs, "ability", "sinew", live=LiveValues(marks={"harm": WoundMarks(("tear",) * 3)}))
    assert (n.penalty, n.total) == (0, 2)


def test_pen_4_dice_sum_penalty_is_a_flat_modifier():
    d = edit(sample_dict("fifth-like"), lambda d: (
        d["sheet"]["live"]["tracks"].append({"id": "harm", "label": "Harm", "levels": [
            {"label": "Hurt", "penalty": -2}, {"label": "Down", "penalty": -5}],
            "kinds": [{"id": "cut", "label": "C", "severity": 0}]}),
        d["resolution"].update(penaltyFrom="harm")))
    rs = Ruleset.from_dict(d)
    n = num(rs, "skill", "stealth", card(rs, abilities={"dex": 14}), LiveValues(marks={"harm": WoundMarks(("cut",))}))
    assert (n.sheet, n.penalty, n.total) == (2, -2, 0)
    n = num(rs, "skill", "stealth", card(rs, abilities={"dex": 14}),
            LiveValues(marks={"harm": WoundMarks(("cut", "cut"))}))
    assert n.total == -3  # no floor under dice-sum


def test_adj_1_3_ember_brawn_burden_and_stance():
    c = card(EMBER, abilities={"brawn": 4})
    c = {**c, "lists": {"gear": [{"item": "Tent", "bulk": 6}]}}  # burdened -2
    n = num(EMBER, "ability", "brawn", c, LiveValues(states={"stance": "steady"}))
    assert (n.adjust, n.total) == (-2, 2)
    n = num(EMBER, "ability", "brawn", c, LiveValues(states={"stance": "reckless"}))
    assert (n.adjust, n.total) == (0, 4)
    n = num(EMBER, "skill", "haul", c, LiveValues(states={"stance": "guarded"}))  # a skill that uses Brawn (ADJ-4)
    assert n.adjust == -3


def test_adj_4_5_filter_by_ability():
    c = {**card(EMBER), "lists": {"gear": [{"item": "Tent", "bulk": 6}]}}
    assert num(EMBER, "ability", "wits", c).adjust == 0
    assert num(EMBER, "skill", "wayfind", c).adjust == 0  # a Wits skill
    assert num(EMBER, "skill", "wayfind", c, with_ability="brawn").adjust == -2  # rolled with Brawn via with=
    d = edit(sample_dict("ember-roads"), lambda d: d["resolution"]["adjust"].append({"value": {"const": 1}}))
    rs = Ruleset.from_dict(d)
    assert num(rs, "ability", "wits", c).adjust == 1  # no `abilities`: every check


def test_adj_6_dice_pool_floor_applies_to_adjust_too():
    c = {**card(EMBER, abilities={"brawn": 2}), "lists": {"gear": [{"item": "x", "bulk": 9}]}}  # -3
    n = num(EMBER, "ability", "brawn", c, LiveValues(states={"stance": "guarded"}))  # -1 more
    assert (n.adjust, n.total) == (-4, 1)


def test_enum_9_gravewatch_lantern_costs_nerve_dice():
    c = card(GRAVE, abilities={"nerve": 3})
    assert num(GRAVE, "ability", "nerve", c, LiveValues(states={"lantern": "shuttered"})).total == 2
    assert num(GRAVE, "ability", "nerve", c, LiveValues(states={"lantern": "out"})).total == 1
    assert num(GRAVE, "ability", "sinew", c, LiveValues(states={"lantern": "out"})).adjust == 0


def test_dice_sum_uses_modifiers_and_training_bonus():
    c = card(FIFTH, abilities={"int": 17}, skills={"arcana": "expertise"}, fields={"level": 9})
    n = num(FIFTH, "skill", "arcana", c)
    assert (n.base, n.bonus, n.total) == (3, 8, 11)


def test_pen_1_a_cards_check_numbers_are_kept_only_while_they_read_no_live_value(monkeypatch):
    """The sheet's check numbers are kept by the card's object when computing them read no live value: with
    gravewatch's wound penalty (PEN-1) they follow the marks of each state; with blades-like's none they are
    computed once for the card, whatever its live values."""
    from tagengine._internal.sheet import sheet_views

    c = card(GRAVE)
    for marks, penalty in (((), 0), (("tear", "knock"), -1), ((), 0)):  # the same card object each time
        view = sheet_views.view_of(Eval(GRAVE, c, LiveValues(marks={"harm": WoundMarks(marks)})), "X", by_card=True)
        assert {n.penalty for n in view.skills} == {penalty}
        assert view.skills == tuple(num(GRAVE, "skill", k.id, c, LiveValues(marks={"harm": WoundMarks(marks)}))
                                    for k in GRAVE.file.sheet.skills)
    blades = load_sample("blades-like")
    c = card(blades)
    first = sheet_views.view_of(Eval(blades, c, LiveValues(pools={"stress": 3})), "X", by_card=True)
    monkeypatch.setattr(sheet_views, "check_number", None)  # computed again, it would raise
    again = sheet_views.view_of(Eval(blades, c, LiveValues(pools={"stress": 5})), "X", by_card=True)
    assert (again.abilities, again.skills, again.saves) == (first.abilities, first.skills, first.saves)
    assert again.pools != first.pools


def calls(monkeypatch, module, name):
    """The calls of `module.name` from now on, each its arguments; the function still runs."""
    made = []
    real = getattr(module, name)

    def spy(*args):
        made.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, spy)
    return made


def test_pf_60_a_cards_part_is_kept_only_while_its_derived_values_read_no_live_value(monkeypatch):
    """What a character's card decides besides its check numbers (`kept_part`: fields, hidden elements, derived
    values, lists) is kept by the card's object, so a state that changes only live values shares it: with
    blades-like's it is not read again; with ember-roads's, whose derived values read a live state, it follows
    each state's live values."""
    from tagengine._internal.sheet import sheet_views

    blades = load_sample("blades-like")
    c = card(blades)
    made = calls(monkeypatch, sheet_views, "part_of")
    first = sheet_views.view_of(Eval(blades, c, LiveValues(pools={"stress": 3})), "X", by_card=True)
    assert len(made) == 1  # worked out once, by the view's own evaluation
    monkeypatch.setattr(sheet_views, "part_of", None)  # read again, it would raise
    again = sheet_views.view_of(Eval(blades, c, LiveValues(pools={"stress": 5})), "X", by_card=True)
    assert (again.fields, again.hidden, again.derived, again.lists) == (first.fields, first.hidden, first.derived,
                                                                       first.lists)
    assert again.fields is first.fields and again.lists is first.lists
    assert again.pools != first.pools
    monkeypatch.undo()
    ember = load_sample("ember-roads")
    c = card(ember)
    made = calls(monkeypatch, sheet_views, "part_of")
    views = {stance: sheet_views.view_of(Eval(ember, c, LiveValues(states={"stance": stance})), "X", by_card=True)
             for stance in ("steady", "reckless")}
    assert len(made) == 2  # once a view: the first view's own evaluation found the live read, no trial beside it
    assert not sheet_views.kept_by_card(ember, c)
    for stance, view in views.items():
        assert view.derived == sheet_views.view_of(Eval(ember, c, LiveValues(states={"stance": stance})), "X").derived
    assert views["steady"].derived != views["reckless"].derived


def test_pf_60_the_reminders_check_lines_follow_a_penalty_while_the_cards_part_is_kept():
    """A block's lines that the card decides are kept only while the card keeps all they read, the check numbers
    among them: with gravewatch's live derived values taken out its card's part is kept, while its wound penalty
    (PEN-1) still moves every check with the marks, so the kept lines are not the ones a state before showed
    (GM-14)."""
    from tagengine._internal.prompt.template_data import character_block, character_entry, inert_block

    def no_live_derived(d):
        d["sheet"]["derived"] = [v for v in d["sheet"]["derived"] if "live" not in json.dumps(v)]
        del d["resolution"]["adjust"]
        d["gm"]["sheetSummary"]["derived"] = []

    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), no_live_derived))
    start = GameState.new(rs, ["X"])
    hurt = start.with_live("X", LiveValues(marks={"harm": WoundMarks(("tear", "knock"))}))
    lines = {}
    for state in (start, hurt, start.with_live("X", LiveValues())):  # the last: new live values, as at the start
        entry = character_entry(rs, state, "X")
        assert entry == inert_block(character_block(rs, state, "X"))
        lines[state is hurt] = dict(entry["lines"])["Checks"]
    assert view_character(rs, hurt, "X").fields is view_character(rs, start, "X").fields  # the card's part is kept
    assert lines == {False: "Sinew 2 dice; Nerve 2 dice; Lore 2 dice",
                     True: "Sinew 1 dice (wound -1); Nerve 1 dice (wound -1); Lore 1 dice (wound -1)"}


def test_pf_60_a_changed_characters_card_lines_are_made_once_while_its_card_keeps_them(monkeypatch):
    """The reminder's block of a character whose live values changed makes only the lines they decide: blades-like's
    card lines (its checks) are made once for the card and kept; gravewatch's, whose derived values read live values,
    are made each time, and nothing is kept for them that no later turn could find (the cache stays as it was)."""
    from tagengine._internal.prompt import template_data

    made = calls(monkeypatch, template_data, "card_lines")
    blades = load_sample("blades-like")
    start = GameState.new(blades, ["X"])
    entries = [template_data.character_entry(blades, start.with_live("X", LiveValues(pools={"stress": n})), "X")
               for n in (1, 2, 3)]
    assert len(made) == 1
    assert [dict(e["lines"])["Pools"] for e in entries] == ["Stress 1/9", "Stress 2/9", "Stress 3/9"]
    assert len({e["lines"][0] for e in entries}) == 1 and entries[0]["lines"][0][0] == "Checks"
    made.clear()
    held = len(template_data._CARD_LINES)
    grave = sample_state("gravewatch")
    for n in range(1, 4):
        template_data.character_entry(GRAVE, grave.with_live("Mira", LiveValues(pools={"resolve": n})), "Mira")
    assert len(made) == 3 and len(template_data._CARD_LINES) == held
