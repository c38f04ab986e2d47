"""Issue 13: the `[check:]` tag. Every expected number is worked out here from the spec and the sample
rulesets, and every expected die from the documented hash (docs/state-format.md), reimplemented below."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as hst

from conftest import edit, examples, load_sample, problems, sample_dict
from tagengine._internal.commands import apply_reply
from tagengine._internal.prompt import reminder
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.state import Dice, GameState, LiveValues, WoundMarks

EMBER = load_sample("ember-roads")
GRAVE = load_sample("gravewatch")
FIFTH = load_sample("fifth-like")
SEED = "test-seed"


def faces(count: int, sides: int, start: int = 0, seed: str = SEED) -> list[int]:
    """The documented dice: die n is the first 8 bytes of SHA-256(f"{seed}:{n}"), big-endian, mod sides, + 1."""
    out = []
    for n in range(start, start + count):
        x = int.from_bytes(hashlib.sha256(f"{seed}:{n}".encode()).digest()[:8], "big")
        assert x < (1 << 64) - (1 << 64) % sides  # a rejected draw (1 in 3e18) would need the retry rule
        out.append(x % sides + 1)
    return out


def state(rs, live=None, seed=SEED, **parts):
    """One character, X, with a default card changed by `parts`, and dice at roll 0."""
    card = GameState.new(rs, ["X"]).cards["X"]
    for k, v in parts.items():
        card = {**card, k: v if k == "lists" else {**card.get(k, {}), **v}}
    return GameState(cards={"X": card}, live={"x": live} if live else {}, dice=Dice(seed, 0))


def one(rs, st, tag):
    out = apply_reply(rs, st, tag)
    (r,) = out.receipts
    return r, dict(r.record), out


def pool_record(n_dice, target, extra=()):
    rolled = faces(n_dice, 6)
    hits = sum(1 for f in rolled if f >= target)
    return {"dice": str(n_dice), "rolled": ",".join(map(str, rolled)), "target": str(target),
            "successes": str(hits), **dict(extra), "outcome": "success" if hits else "failure"}


# -- untrained ------------------------------------------------------------------------------------------------
def test_untr_9_refused_check_is_rewritten_untrained_and_rolls_nothing():
    st = state(EMBER)  # Dig: untrained, its own rule "refuse" (UNTR-3 example)
    out = apply_reply(EMBER, st, 'She digs. [check: who="X" skill="Dig"] Then [check: who="X" ability="Wits"]')
    assert out.text.startswith('She digs. [check: who="X" skill="Dig" result="refused" reason="untrained"] Then')
    # Wits 2 (the default score), no adjust on Wits: 2 dice, and they are dice 0 and 1: the refusal used none
    assert dict(out.receipts[1].record) == pool_record(2, 4)
    assert out.state.dice == Dice(SEED, 2)


def test_untr_10_the_gm_is_taught_that_a_refused_check_was_not_attempted():
    st = state(EMBER)
    assert 'A check refused reason="untrained" could not be attempted' in reminder(EMBER, st)
    assert "could not be attempted" not in reminder(GRAVE, state(GRAVE))  # no "refuse" rule in Gravewatch


def test_untr_12_a_refused_check_keeps_neither_outcome():
    """U-6, docs/decisions.md CK-7: a refused check has no outcome at all, neither success nor failure."""
    r, rec, out = one(EMBER, state(EMBER), '[check: who="X" skill="Dig"]')
    assert (r.result, r.reason, rec) == ("refused", "untrained", {})
    assert "outcome" not in out.text and out.state == state(EMBER)


def test_untr_16_trained_in_a_refuse_skill_rolls():
    st = state(EMBER, abilities={"brawn": 3}, skills={"dig": "trained"})
    _, rec, _ = one(EMBER, st, '[check: who="X" skill="Dig"]')
    assert rec == pool_record(3 + 1, 4)  # Brawn 3 + trained 1; no gear, steady stance: no adjust


def test_untr_5_by_removes_dice_and_untr_7_harder_raises_the_target():
    st = state(EMBER, abilities={"brawn": 3, "nerve": 3})
    assert one(EMBER, st, '[check: who="X" skill="Haul"]')[1] == pool_record(3 - 1, 4)  # labour: by -1
    assert one(EMBER, st, '[check: who="X" skill="Listen"]')[1] == pool_record(3, 4 + 1)  # harder: 4 -> 5
    # difficulty= sets the target; harder still raises it one step, within the range 2..6
    assert one(EMBER, st, '[check: who="X" skill="Listen" difficulty="3"]')[1] == pool_record(3, 4)
    assert one(EMBER, st, '[check: who="X" skill="Listen" difficulty="6"]')[1] == pool_record(3, 6)
    assert one(EMBER, st, '[check: who="X" skill="Wayfind" difficulty="2"]')[1]["target"] == "2"


# -- caps -------------------------------------------------------------------------------------------------------
def test_cap_3_with_rolls_the_skill_with_another_ability_then_caps_again():
    st = state(GRAVE, LiveValues(pools={"resolve": 3}), abilities={"nerve": 1, "sinew": 5}, skills={"soothe": "sworn"})
    # Soothe with its own Nerve: 1 + sworn 1 = 2 dice, under the cap of 3 (remaining Resolve, CAP-1)
    assert one(GRAVE, st, '[check: who="X" skill="Soothe"]')[1] == pool_record(2, 4)
    # with Sinew: 5 + 1 = 6 before the cap, then capped at 3
    assert one(GRAVE, st, '[check: who="X" skill="Soothe" with="Sinew"]')[1] == pool_record(3, 4)


# -- wound penalty ----------------------------------------------------------------------------------------------
def test_pen_3_6_penalty_removes_dice_and_the_receipt_states_it():
    # Harm levels: Scuffed 0, Winded -1, Bleeding -3, Down -99. Two marks: Winded, -1 die.
    st = state(GRAVE, LiveValues(marks={"harm": WoundMarks(("knock", "knock"))}), abilities={"sinew": 3})
    assert one(GRAVE, st, '[check: who="X" ability="Sinew"]')[1] == pool_record(3 - 1, 4, [("penalty", "-1")])
    # Four marks: Down, -99: never below pool.min 1
    st = state(GRAVE, LiveValues(marks={"harm": WoundMarks(("tear",) * 4)}), abilities={"sinew": 3})
    assert one(GRAVE, st, '[check: who="X" ability="Sinew"]')[1] == pool_record(1, 4, [("penalty", "-99")])


def test_pen_3_pool_min_zero_fails_without_a_roll():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["resolution"]["pool"].update(min=0)))
    st = state(rs, LiveValues(marks={"harm": WoundMarks(("tear",) * 4)}))
    _, rec, out = one(rs, st, '[check: who="X" ability="Sinew"]')
    assert rec == {"dice": "0", "rolled": "", "target": "4", "successes": "0", "penalty": "-99", "outcome": "failure"}
    assert out.state.dice == Dice(SEED, 0)  # no die was rolled


def test_pen_4_dice_sum_penalty_is_folded_into_the_total():
    rs = Ruleset.from_dict(edit(sample_dict("fifth-like"), lambda d: (
        d["sheet"]["live"]["tracks"].append({"id": "harm", "label": "Harm", "levels": [
            {"label": "Hurt", "penalty": -2}, {"label": "Down", "penalty": -5}],
            "kinds": [{"id": "cut", "label": "C", "severity": 0}]}),
        d["resolution"].update(penaltyFrom="harm"))))
    st = state(rs, LiveValues(marks={"harm": WoundMarks(("cut",))}), abilities={"dex": 14})
    # Dexterity 14: modifier +2; Stealth untrained: +0; Hurt: -2. Total +0, one d20 against dc 10.
    (d20,) = faces(1, 20)
    _, rec, _ = one(rs, st, '[check: who="X" skill="Stealth" dc="10"]')
    assert rec == {"roll": str(d20), "total": "+0", "sum": str(d20), "penalty": "-2",
                   "outcome": "success" if d20 >= 10 else "failure"}


def test_dice_sum_without_dc_leaves_the_outcome_to_the_gm():
    st = state(FIFTH, abilities={"int": 17}, skills={"arcana": "proficient"}, fields={"level": 1})
    (d20,) = faces(1, 20)
    # Intelligence 17: +3; proficient at level 1: +2
    assert one(FIFTH, st, '[check: who="X" skill="Arcana"]')[1] == {"roll": str(d20), "total": "+5",
                                                                      "sum": str(d20 + 5)}


# -- sheet adjust -----------------------------------------------------------------------------------------------
def test_adj_11_the_receipt_reports_what_the_sheet_added():
    # Ember Roads: every 3 points of packed bulk is one less on Brawn rolls (ADJ-3): bulk 6 -> -2
    st = state(EMBER, LiveValues(states={"stance": "steady"}), abilities={"brawn": 4},
               lists={"gear": [{"item": "Tent", "bulk": 6}]})
    assert one(EMBER, st, '[check: who="X" ability="Brawn"]')[1] == pool_record(4 - 2, 4, [("adjust", "-2")])
    assert one(EMBER, st, '[check: who="X" ability="Wits"]')[1] == pool_record(2, 4)  # not a Brawn check
    # ...and as a line on the dice card
    from tagengine._internal.commands.check import card, roll_tag
    from tagengine._internal.tags import Tag

    done = roll_tag(EMBER, st, Tag("check", (("who", "X"), ("ability", "Brawn"))))
    assert "  sheet adjust: -2 (resolution.adjust, ADJ-11)" in card(EMBER, done)


def test_adj_4_a_skill_rolled_with_an_ability_gets_that_abilitys_entries():
    st = state(EMBER, abilities={"brawn": 4, "wits": 4}, lists={"gear": [{"item": "Tent", "bulk": 6}]})
    assert one(EMBER, st, '[check: who="X" skill="Wayfind"]')[1] == pool_record(4, 4)  # Wits: nothing
    assert one(EMBER, st, '[check: who="X" skill="Wayfind" with="Brawn"]')[1] == pool_record(2, 4, [("adjust", "-2")])


# -- the tag itself (docs/decisions.md CK-1..CK-9) ------------------------------------------------------------------
def test_refusals_name_what_is_wrong():
    st = state(GRAVE)
    cases = {
        '[check: who="X" skill="Swim"]': "unknown-skill",
        '[check: who="X" ability="Luck"]': "unknown-ability",
        '[check: who="X" save="Poison"]': "unknown-save",
        '[check: who="X" skill="Ward" with="Luck"]': "unknown-ability",
        '[check: who="Nobody" skill="Ward"]': "unknown-character",
        '[check: who="party" skill="Ward"]': "invalid-value",
        '[check: who="X"]': "missing-attribute",
        '[check: who="X" skill="Ward" ability="Nerve"]': "one-action",
        '[check: who="X" ability="Nerve" with="Sinew"]': "unknown-attribute",
        '[check: who="X" skill="Ward" colour="red"]': "unknown-attribute",
        '[check: who="X" skill="Ward" dc="15"]': "no-difficulty",  # a dice-pool ruleset
        '[check: who="X" skill="Ward" difficulty="3"]': "no-difficulty",  # Gravewatch's target cannot move
    }
    for tag, reason in cases.items():
        r, rec, out = one(GRAVE, st, tag)
        assert (r.result, r.reason, rec) == ("refused", reason, {}), tag
        assert out.state.dice == st.dice
    ember = state(EMBER)
    assert one(EMBER, ember, '[check: who="X" skill="Haul" difficulty="7"]')[0].reason == "invalid-value"
    assert one(EMBER, ember, '[check: who="X" skill="Haul" difficulty="hard"]')[0].reason == "invalid-amount"
    assert one(FIFTH, state(FIFTH), '[check: who="X" skill="Stealth" difficulty="3"]')[0].reason == "no-difficulty"
    assert one(FIFTH, state(FIFTH), '[check: who="X" skill="Stealth" dc="x"]')[0].reason == "invalid-amount"


def test_dec_4_the_models_own_roll_record_is_dropped():
    st = state(GRAVE, abilities={"nerve": 3})
    out = apply_reply(GRAVE, st, '[check: who="X" ability="Nerve" rolled="6,6,6" outcome="success" result="ok"]')
    want = pool_record(3, 4)
    assert out.text == ('[check: who="X" ability="Nerve" result="ok" '
                        + " ".join(f'{k}="{v}"' for k, v in want.items()) + "]")


def test_who_may_be_left_out_with_one_character_and_names_match_labels():
    st = state(GRAVE, abilities={"lore": 3})
    assert one(GRAVE, st, '[check: ability="lore"]')[1] == pool_record(3, 4)


def test_dec_5_applying_the_output_again_gives_the_same_text_and_dice():
    st = state(GRAVE, abilities={"nerve": 3})
    out = apply_reply(GRAVE, st, 'A [check: ability="Nerve"] b [check: skill="Ward"] c')
    again = apply_reply(GRAVE, st, out.text)
    assert (again.text, again.state) == (out.text, out.state)


def test_dice_run_on_across_replies():
    """Two replies in turn roll the same dice as one reply with both checks: die n is (seed, n)."""
    st = state(GRAVE, abilities={"nerve": 3, "lore": 2})
    both = apply_reply(GRAVE, st, '[check: ability="Nerve"][check: ability="Lore"]')
    first = apply_reply(GRAVE, st, '[check: ability="Nerve"]')
    second = apply_reply(GRAVE, first.state, '[check: ability="Lore"]')
    assert both.receipts[1].record == second.receipts[0].record
    assert dict(second.receipts[0].record)["rolled"] == ",".join(map(str, faces(2, 6, start=3)))
    assert both.state.dice == second.state.dice == Dice(SEED, 5)


def test_ck_13_a_pool_of_more_than_100_dice_is_refused_not_rolled():
    """Work bounded by the text (issue 17): a sheet whose ability reads 5,000 asks for 5,000 dice."""
    doc = sample_dict("gravewatch")
    for a in doc["sheet"]["abilities"]:
        a["max"] = 10_000
    rs = Ruleset.from_dict(doc)
    st = state(rs, abilities={"sinew": 5000})
    r, rec, out = one(rs, st, '[check: who="X" ability="Sinew"]')
    assert (r.result, r.reason, rec) == ("refused", "too-many-dice", {})
    assert out.state.dice == Dice(SEED, 0)
    st = state(rs, abilities={"sinew": 100})
    r, rec, _ = one(rs, st, '[check: who="X" ability="Sinew"]')
    assert r.result == "ok" and rec["dice"] == "100"


def test_ck_14_a_ruleset_declares_its_die_and_the_import_checks_it_fits():
    # resolution.die: a d10 pool and a d12 sum roll those dice (default d6 / d20, CK-3).
    pool = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["resolution"].update(die=10)))
    st = state(pool, abilities={"sinew": 3})
    rolled = faces(3, 10)
    hits = sum(1 for f in rolled if f >= 4)
    assert one(pool, st, '[check: who="X" ability="Sinew"]')[1] == {
        "dice": "3", "rolled": ",".join(map(str, rolled)), "target": "4", "successes": str(hits),
        "outcome": "success" if hits else "failure"}
    summed = Ruleset.from_dict(edit(sample_dict("fifth-like"), lambda d: d["resolution"].update(die=12)))
    r, rec, _ = one(summed, state(summed), '[check: who="X" ability="Strength"]')
    assert r.result == "ok" and rec["roll"] == str(faces(1, 12)[0])
    assert "d12 + the number" in reminder(summed, state(summed))
    assert "d10 each" in reminder(pool, state(pool))
    # A die of 1 side, or a target range that leaves the faces of the die, is refused at import.
    assert ("resolution.die", "out-of-range") in problems(edit(sample_dict("fifth-like"),
                                                               lambda d: d["resolution"].update(die=1)))
    assert ("resolution.pool.target", "target-off-die") in problems(edit(sample_dict("ember-roads"),
                                                                         lambda d: d["resolution"].update(die=4)))
    assert problems(edit(sample_dict("gravewatch"), lambda d: d["resolution"].update(die=6))) == []


# -- the roll from plain arguments (`tagengine roll`, CL-5) ------------------------------------------------------
def test_roll_check_rolls_a_named_check_without_a_tag():
    from tagengine._internal.commands.check import roll_check

    st = state(GRAVE, abilities={"lore": 3})
    done = roll_check(GRAVE, st, "x", "ability", "Lore")  # names match without case (DEC-8)
    assert (done.result.result, done.who, dict(done.result.record)) == ("ok", "X", pool_record(3, 4))
    assert done.state.dice == Dice(SEED, 3) and st.dice == Dice(SEED, 0)  # the state given is unchanged
    fifth = state(FIFTH, abilities={"int": 17}, skills={"arcana": "proficient"}, fields={"level": 1})
    (d20,) = faces(1, 20)
    done = roll_check(FIFTH, fifth, None, "skill", "arcana", dc="30")  # who left out: the one character
    assert dict(done.result.record) == {"roll": str(d20), "total": "+5", "sum": str(d20 + 5), "outcome": "failure"}
    assert (done.dc, done.outcome, done.faces) == (30, "failure", (d20,))
    refusals = [("skill", "Swim", None, "unknown-skill"), ("skill", "Ward", "Luck", "unknown-ability"),
                ("ability", "Nerve", "Sinew", "unknown-attribute"), ("luck", "Ward", None, "unknown-attribute")]
    for kind, name, swap, reason in refusals:
        done = roll_check(GRAVE, st, "X", kind, name, swap=swap)
        assert (done.result.result, done.result.reason, done.state) == ("refused", reason, st), (kind, name)


def test_kind_named_is_a_skill_else_a_save_else_an_ability():
    from tagengine._internal.commands.check import kind_named

    assert [kind_named(FIFTH, n) for n in ("Stealth", "wisdom save", "Wisdom", "Juggling")] == \
        ["skill", "save", "ability", "skill"]


def test_bare_flags_in_a_check_tag_keep_their_place_among_the_refusals():
    """An attribute written as a bare flag: `with` or the kind without its name is `missing-attribute`, `dc` or
    `difficulty` without its number `invalid-amount`, each where its value is read, after what comes before it."""
    st = state(GRAVE)
    cases = {
        '[check: who="X" skill="Ward" with]': "missing-attribute",
        '[check: who="Nobody" skill="Ward" with]': "unknown-character",
        '[check: who="party" skill="Ward" with]': "invalid-value",
        '[check: who="X" skill="Swim" with]': "unknown-skill",
        '[check: who="Nobody" skill]': "unknown-character",
        '[check: who="X" skill]': "missing-attribute",
        '[check: who="X" skill="Ward" dc]': "no-difficulty",
    }
    for tag, reason in cases.items():
        assert one(GRAVE, st, tag)[0].reason == reason, tag
    assert one(FIFTH, state(FIFTH), '[check: who="X" skill="Stealth" dc]')[0].reason == "invalid-amount"
    assert one(EMBER, state(EMBER), '[check: who="X" skill="Haul" difficulty]')[0].reason == "invalid-amount"
    assert one(FIFTH, state(FIFTH), '[check: who="X" skill="Stealth" difficulty]')[0].reason == "no-difficulty"


NAMES = {"skill": ["Ward", "Stealth", "Dig", "Haul", "Swim", ""], "save": ["Dread", "Wisdom save", "Endure", "Luck"],
         "ability": ["Nerve", "Wisdom", "Brawn", "Luck"]}


@settings(max_examples=examples(300), deadline=None)
@given(ruleset=hst.sampled_from(["gravewatch", "ember-roads", "fifth-like"]),
       who=hst.sampled_from([None, "X", "x", "Nobody", "party", ""]),
       kind=hst.sampled_from(["skill", "save", "ability"]), data=hst.data(),
       swap=hst.sampled_from([None, "Wits", "Brawn", "Wisdom", "Luck", ""]),
       dc=hst.sampled_from([None, "15", "-3", "x", ""]),
       difficulty=hst.sampled_from([None, "3", "5", "7", "hard", ""]))
def test_roll_check_is_the_roll_the_same_check_tag_makes(ruleset, who, kind, data, swap, dc, difficulty):
    """One engine path: for any attributes a check tag can spell with values, `roll_check` rolls exactly as
    the tag does (result, record, dice, number, outcome)."""
    from tagengine._internal.commands.check import roll_check, roll_tag
    from tagengine._internal.tags import Tag

    rs = {"gravewatch": GRAVE, "ember-roads": EMBER, "fifth-like": FIFTH}[ruleset]
    name = data.draw(hst.sampled_from(NAMES[kind]))
    start = state(rs, abilities={"wits": 3}, seed=data.draw(hst.sampled_from(["a", "b"])))
    attrs = [(k, v) for k, v in (("who", who), (kind, name), ("with", swap), ("dc", dc), ("difficulty", difficulty))
             if v is not None]
    assert roll_check(rs, start, who, kind, name, swap=swap, dc=dc, difficulty=difficulty) == \
        roll_tag(rs, start, Tag("check", tuple(attrs)))
