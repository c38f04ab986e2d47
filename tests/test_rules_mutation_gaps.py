"""Rules a mutation pass broke without a test noticing (issue 29, item 2): each test here fails on the broken code
the issue describes (the smallest plausible change), and each was seen failing on it."""

from __future__ import annotations

from cmdkit import run, sample_state, with_live

from conftest import edit, load_sample, problems, sample_dict
from tagengine._internal.commands import apply_reply
from tagengine._internal.errors import RulesetError
from tagengine._internal.prompt import reminder
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import Eval, view_character
from tagengine._internal.state import GameState, WoundMarks

GRAVE = load_sample("gravewatch")
BLADES = load_sample("blades-like")


# -- caught by no test ------------------------------------------------------------------------------------------
def test_cap_1_a_positive_adjust_never_lifts_a_check_above_its_cap():
    """With the cap left out after the modifiers, a skill capped at 3 with +5 would roll 8."""
    d = {"sheet": {"abilities": [{"id": "a", "label": "A", "min": 0, "max": 30, "default": 4}],
                   "skills": [{"id": "s", "label": "S", "ability": "a", "cap": {"const": 3}}]},
         "resolution": {"type": "dice-sum", "adjust": [{"value": {"const": 5}}]}}
    rs = Ruleset.from_dict(d)
    st = GameState.new(rs, ["X"])
    (skill,) = view_character(rs, st, "X").skills
    assert (skill.sheet, skill.adjust, skill.total) == (3, 5, 3)
    (r,) = apply_reply(rs, st, '[check: who="X" skill="S"]').receipts
    assert dict(r.record)["total"] == "+3"


def test_party_2_party_fields_get_the_sheet_fields_checks():
    """Skipping the field checks on party fields would import a range that cannot hold a value, or an enum with
    nothing to choose."""
    blades = sample_dict("blades-like")
    d = edit(blades, lambda d: d["party"]["fields"][0].update(min=5, max=2, default=5))
    assert ("party.fields[0].min", "bad-range") in problems(d)
    d = edit(blades, lambda d: d["party"]["fields"].append({"id": "mood", "label": "Mood", "type": "enum"}))
    assert ("party.fields[7].values", "missing-key") in problems(d)
    d = edit(blades, lambda d: d["party"]["fields"][2].update(min=1))  # `min` on a text field
    assert ("party.fields[2].min", "key-not-allowed") in problems(d)


def test_party_20_restoring_a_party_pool_stops_at_its_maximum():
    st = apply_reply(BLADES, GameState.new(BLADES, ["Cutter"]), '[sheet: sheet="party" op="restore" pool="coin" '
                                                                'amount="3"]').state
    a, res = run(BLADES, st, '[sheet: sheet="party" op="restore" pool="coin" amount="10"]')
    assert res == [("ok", "8/8")] and a.state.live_of("$party").pools["coin"] == 8


# -- missed by the tests that cite them ----------------------------------------------------------------------------
def test_ref_2_list_sum_adds_every_counted_row():
    ember = load_sample("ember-roads")
    card = GameState.new(ember, ["X"]).cards["X"]
    rows = [{"item": "Rope", "bulk": 2, "packed": True}, {"item": "Tent", "bulk": 3, "packed": True},
            {"item": "Lute", "bulk": 5, "packed": False}, {"item": "Pot", "bulk": 4, "packed": True}]
    assert Eval(ember, {**card, "lists": {"gear": rows}}, None).derived("burden") == 9


def test_wound_52_a_named_level_track_that_refuses_does_not_escalate():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["live"]["tracks"][0].update(
        onFull="refuse")))
    full = with_live(rs, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["tear", "knock", "knock",
                                                                                        "knock"]}}})
    a, res = run(rs, full, '[sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"]')
    assert res == [("refused", "track-full")] and a.state is full  # not raised to ("tear", "tear", ...)
    a, res = run(rs, full, '[sheet: who="Bram" op="damage" track="harm" kind="tear" amount="1"]')
    assert res == [("refused", "track-full")]
    on_grave = with_live(GRAVE, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": [
        "tear", "knock", "knock", "knock"]}}})  # the same marks escalate where the track does not refuse
    a, res = run(GRAVE, on_grave, '[sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"]')
    assert res == [("ok", "4/4 Down")] and a.state.live_of("Bram").marks["harm"].marks == (
        "tear", "tear", "knock", "knock")


def test_wound_23_a_heal_of_one_is_a_negative_amount_of_one():
    st = with_live(GRAVE, sample_state("gravewatch"), bram={"marks": {"harm": {"marks": ["tear", "knock"]}}})
    a, res = run(GRAVE, st, '[sheet: who="Bram" op="damage" track="harm" amount="-1"]')
    assert res == [("ok", "1/4 Scuffed")] and a.state.live_of("Bram").marks["harm"] == WoundMarks(("tear",))


def test_gm_14_the_block_always_shows_every_ability():
    """Gravewatch's summary lists no ability; the block shows each, with its number."""
    text = reminder(GRAVE, sample_state("gravewatch"))
    bram = text[text.index("## Bram"):]
    assert bram.split("\n")[1].startswith("- Checks: Sinew 4 dice; Nerve 2 dice; Lore 1 dice; ")
    mira = text[text.index("## Mira"):]
    assert mira.split("\n")[1].startswith("- Checks: Sinew 1 dice (wound -1); Nerve 1 dice (wound -1, sheet -1); "
                                          "Lore 1 dice (wound -1); ")


# -- clauses no test reached ----------------------------------------------------------------------------------
BASE = {"manifest": {"capabilityApi": {"major": 1, "minor": 36}}, "sheet": {
    "sections": [{"id": "body", "label": "Body"}],
    "abilities": [{"id": "a", "label": "A"}],
    "skills": [{"id": "s", "label": "S", "ability": "a"}],
    "saves": [{"id": "v", "label": "V", "ability": "a"}],
    "fields": [{"id": "f", "label": "F", "type": "number"}],
    "lists": [{"id": "l", "label": "L", "columns": [{"id": "n", "label": "N", "type": "number"}]}],
    "live": {"pools": [{"id": "p", "label": "P", "max": {"const": 3}}],
             "tracks": [{"id": "t", "label": "T", "max": 3}]}}}


def needs(mutate) -> list[tuple[str, str]]:
    """(path, version) of each `capability-too-low` problem of BASE changed by `mutate`."""
    try:
        Ruleset.from_dict(edit(BASE, mutate))
    except RulesetError as e:
        return [(p.path, p.message.split("needs Capability API ")[1].split(" ")[0].rstrip(",;.)"))
                for p in e.problems if p.code == "capability-too-low"]
    return []


def test_sheet_6_a_section_on_an_ability_skill_or_save_needs_1_41():
    assert needs(lambda d: None) == []
    for kind in ("abilities", "skills", "saves"):
        assert needs(lambda d, k=kind: d["sheet"][k][0].update(section="body")) == [
            (f"sheet.{kind}[0].section", "1.41")]


def test_ref_16_list_sum_and_live_track_need_1_39():
    derived = {"listSum": {"list": "l", "column": "n"}, "liveTrack": "t", "livePool": "p"}
    for key, ref in derived.items():
        assert needs(lambda d, k=key, r=ref: d["sheet"].update(derived=[{"id": "x", "label": "X", "op": "sum",
                                                                         "of": [{k: r}]}])) == [
            ("sheet.derived[0].of[0]", "1.39")], key


def test_hide_8_in_and_not_equals_need_1_39():
    for form, value in (("in", [1, 2]), ("notEquals", 1)):
        assert needs(lambda d, f=form, v=value: d["sheet"]["live"]["pools"][0].update(
            hideWhen={"field": "f", f: v})) == [("sheet.live.pools[0].hideWhen", "1.39")], form
    assert needs(lambda d: d["sheet"]["live"]["pools"][0].update(hideWhen={"field": "f", "equals": 1})) == []


def test_state_16_a_rest_step_sets_the_value_it_names():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["rests"].append(
        {"id": "dim", "label": "Dim the lantern", "steps": [{"state": "lantern", "to": "shuttered"}]})))
    st = sample_state("gravewatch")  # Bram's lantern is Lit, the default
    a, res = run(rs, st, '[sheet: who="Bram" op="rest" rest="Dim the lantern"]')
    assert res == [("ok", "Lantern Shuttered")] and a.state.live_of("Bram").states["lantern"] == "shuttered"
    back, res = run(rs, a.state, '[sheet: who="Bram" op="rest" rest="End of the vigil"]')  # "to": "default"
    assert "lantern" not in back.state.live_of("Bram").states


def test_wound_44_a_box_count_the_sheet_computes_stops_at_64():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["sheet"]["derived"][2].update(
        of=[{"const": 98}, {"abilityScore": "sinew"}])))  # strain_boxes: 98 + Sinew
    st = GameState.new(rs, ["X"])
    strain = next(w for w in view_character(rs, st, "X").wounds if w.id == "strain")
    assert strain.length == 64
    _, res = run(rs, st, '[sheet: who="X" op="damage" track="strain" kind="strain" box="64"]')
    assert res == [("ok", "1/64")]
    assert run(rs, st, '[sheet: who="X" op="damage" track="strain" kind="strain" box="65"]')[1] == [
        ("refused", "bad-box")]


def test_rest_7_each_pool_gets_up_to_what_it_is_missing():
    fifth = load_sample("fifth-like")
    st = with_live(fifth, sample_state("fifth-like"), vess={"pools": {"hd_d8": 2, "hd_d10": 0}})  # 2/3 and 0/2
    a, _ = run(fifth, st, '[sheet: who="Vess" op="rest" rest="Long rest"]')  # half of 5, rounded down: 2
    pools = {p.id: (p.cur, p.max) for p in view_character(fifth, a.state, "Vess").pools}
    assert pools["hd_d8"] == (3, 3) and pools["hd_d10"] == (1, 2)  # d8 is missing 1: the other 1 goes on


def test_party_12_advancement_text_is_at_most_400_characters():
    blades = sample_dict("blades-like")
    d = edit(blades, lambda d: d["party"]["advancement"].update(text="c" * 401))
    assert ("party.advancement.text", "too-long") in problems(d)
    assert problems(edit(blades, lambda d: d["party"]["advancement"].update(text="c" * 400))) == []


def test_party_29_a_from_members_field_is_a_party_number_field():
    blades = sample_dict("blades-like")
    for field in ("upgrades", "lair", "nothing"):  # text, enum, undeclared
        d = edit(blades, lambda d, f=field: d["party"]["fromMembers"][0].update(field=f))
        assert ("party.fromMembers[0].field", "not-numeric") in problems(d), field


def test_state_4_a_lone_bracket_in_a_value_is_refused():
    ember = sample_dict("ember-roads")
    for value in ("reck[less", "reckless]"):
        d = edit(ember, lambda d, v=value: d["sheet"]["live"]["states"][0].update(
            values=["guarded", v], valueLabels={}, default="guarded"))
        assert ("sheet.live.states[0].values[1]", "unsafe-text") in problems(d), value


def test_clock_16_an_escaped_quote_never_reaches_a_clock_name():
    rs = BLADES
    st = GameState.new(rs, ["Cutter"])
    a, res = run(rs, st, r'[clock: name="Say \"hi\"" size="4"]')
    assert res == [("refused", "bad-name")] and a.state.clocks == ()
    a, res = run(rs, st, r'[clock: name="Say \\hi" size="4"]')  # an escaped backslash is no quote
    assert res == [("ok", "0/4")] and a.state.clocks[0].name == "Say \\hi"
