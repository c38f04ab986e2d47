"""Hits on the health track (issue 29): WOUND-32..39, ADJ-8, ADJ-9, and docs/decisions.md CB-1..CB-7.

Every expected mark is worked out here from the spec's rules and the sample rulesets; the receipts read the
health as its remaining levels (WOUND-39, CB-6)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import edit, examples, problems, sample_dict
from tagengine._internal.commands import apply_reply
from tagengine._internal.prompt import reminder
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet import view_character
from tagengine._internal.state import Dice, GameState, LiveValues, WoundMarks

GRAVE_DICT = sample_dict("gravewatch")  # health: Harm (Scuffed, Winded, Bleeding, Down); blunt->knock, edged->tear
GRAVE = Ruleset.from_dict(GRAVE_DICT)
FIFTH = Ruleset.from_dict(sample_dict("fifth-like"))  # combat: health is the Hit points pool (allowTemp)


def ruleset(fn) -> Ruleset:
    return Ruleset.from_dict(edit(GRAVE_DICT, fn))


def strain_health(d, damage="per-point", marks=1):
    """Health on Gravewatch's Strain: numbered boxes (2 + Sinew), filled by box, refusing when full."""
    d["combat"] = {"health": {"track": "strain"}, "damage": damage,
                   "damageKinds": {"marks": marks, "map": {"stress": "strain"}}}


PER_POINT = ruleset(strain_health)
PER_BLOW = ruleset(lambda d: strain_health(d, "per-blow"))


def fresh(rs, marks=None, track="harm", **live):
    """X with a default card (Sinew 2: 4 strain boxes, 4 harm levels), and `marks` on `track`."""
    st = GameState.new(rs, ["X"])
    if marks is not None:
        live = {**live, "marks": {track: WoundMarks(tuple(marks[0]), marks[1])}}
    return st.with_live("X", LiveValues(**live)) if live else st


def run(rs, st, text):
    a = apply_reply(rs, st, text)
    return a, [(r.result, r.now if r.result == "ok" else r.reason) for r in a.receipts]


def marks_of(a, track="harm"):
    return a.state.live_of("X").marks.get(track, WoundMarks())


def hit(t="edged", amount=None, who="X"):
    return f'[sheet: who="{who}" op="hit" type="{t}"' + (f' amount="{amount}"' if amount is not None else "") + "]"


HEAL = '[sheet: who="X" op="heal"]'


# -- WOUND-32, WOUND-33: a landed hit marks the health track ---------------------------------------------------
def test_wound_32_a_hit_marks_the_track_combat_health_names():
    a, res = run(GRAVE, fresh(GRAVE), hit("edged"))
    assert marks_of(a) == WoundMarks(("tear",)) and res == [("ok", "3 of 4 left, at Scuffed")]
    assert marks_of(a, "strain") == WoundMarks()  # the other wound track is not health
    a, res = run(PER_BLOW, fresh(PER_BLOW), hit("stress"))
    assert marks_of(a, "strain") == WoundMarks(("strain",)) and marks_of(a) == WoundMarks()


def test_wound_33_marks_boxes_of_the_kind_the_map_gives_the_type():
    a, _ = run(GRAVE, fresh(GRAVE), hit("blunt") + hit("Edged") + hit(" BLUNT "))  # DEC-8 names
    assert marks_of(a).marks == ("tear", "knock", "knock")
    two = ruleset(lambda d: d["combat"]["damageKinds"].update(marks=2))
    a, res = run(two, fresh(two), hit("blunt", amount=9))  # a hit marks `marks` boxes, whatever its points
    assert marks_of(a).marks == ("knock", "knock") and res == [("ok", "2 of 4 left, at Winded")]


def test_cb_2_the_kind_without_a_map_entry():
    a, res = run(GRAVE, fresh(GRAVE), hit("fire") + '[sheet: who="X" op="hit"]')
    assert res == [("refused", "unknown-damage-type"), ("refused", "missing-attribute")]
    assert a.state is not None and marks_of(a) == WoundMarks()
    typed = ruleset(lambda d: d["combat"].update(damageTypes=["fire"]))  # declared, but the map gives no kind
    assert run(typed, fresh(typed), hit("fire"))[1] == [("refused", "unknown-damage-type")]
    unmapped = ruleset(lambda d: d["combat"].pop("damageKinds"))  # no map at all: the lightest kind
    a, _ = run(unmapped, fresh(unmapped), hit("anything") + '[sheet: who="X" op="hit"]')
    assert marks_of(a).marks == ("knock", "knock")
    a, _ = run(PER_BLOW, fresh(PER_BLOW), '[sheet: who="X" op="hit"]')  # one kind: no type needed
    assert marks_of(a, "strain").marks == ("strain",)


# -- WOUND-34, WOUND-36: down ---------------------------------------------------------------------------------
def test_wound_34_a_full_track_puts_the_character_down():
    a, res = run(GRAVE, fresh(GRAVE, (["tear", "tear", "knock"], 0)), hit("blunt"))
    assert res == [("ok", "down: 0 of 4 left, at Down")]
    view = view_character(GRAVE, a.state, "X").health
    assert view is not None and view.down == "Harm is full" and view.left == 0
    assert "- Harm (health): down: 0 of 4 left, at Down;" in reminder(GRAVE, a.state)
    a, res = run(GRAVE, a.state, hit("blunt"))  # WOUND-20 still holds on the full track; still down
    assert marks_of(a).marks == ("tear", "tear", "tear", "knock") and res == [("ok", "down: 0 of 4 left, at Down")]
    a, res = run(GRAVE, fresh(GRAVE, (["tear", "knock"], 0)), hit("blunt"))
    assert res == [("ok", "1 of 4 left, at Bleeding")] and view_character(GRAVE, a.state, "X").health.down is None


def test_wound_36_a_hit_no_box_can_take_puts_the_character_down_and_is_not_refused():
    st = fresh(PER_POINT, ([None, None, "strain", "strain"], 0), track="strain")  # boxes 1, 2 free
    a, res = run(PER_POINT, st, hit("stress", amount=3))  # box 3, and every box above it, is taken
    assert res == [("ok", "down: 2 of 4 boxes left +1 overflow")]
    assert marks_of(a, "strain") == WoundMarks((None, None, "strain", "strain"), 1)  # WOUND-49: nothing moved
    assert view_character(PER_POINT, a.state, "X").health.down == "Strain overflowed"
    a, res = run(PER_POINT, fresh(PER_POINT), hit("stress", amount=5))  # a 5-point hit on 4 boxes
    assert res == [("ok", "down: 4 of 4 boxes left +1 overflow")]
    # the damage op on the same track still refuses a mark with no free box (WOUND-52, WOUND-53)
    refused = '[sheet: who="X" op="damage" track="strain" kind="strain" box="3"]'
    assert run(PER_POINT, st, refused)[1] == [("refused", "track-full")]
    # a levelled track that refuses when full: the marks that fit are placed, the rest is overflow
    harm_refuses = ruleset(lambda d: (d["sheet"]["live"]["tracks"][0].update(onFull="refuse"),
                                      d["combat"]["damageKinds"].update(marks=2)))
    a, res = run(harm_refuses, fresh(harm_refuses, (["tear", "tear", "knock"], 0)), hit("edged"))
    assert marks_of(a) == WoundMarks(("tear", "tear", "tear", "knock"), 1)
    assert res == [("ok", "down: 0 of 4 left, at Down +1 overflow")]


# -- WOUND-35: per-point and per-blow on a track that fills by box ---------------------------------------------
def test_wound_35_per_point_damage_names_the_box_it_hits():
    a, res = run(PER_POINT, fresh(PER_POINT), hit("stress", amount=3))
    assert marks_of(a, "strain").marks == (None, None, "strain") and res == [("ok", "3 of 4 boxes left")]
    a, _ = run(PER_POINT, a.state, hit("stress", amount=3))  # box 3 taken: the next free box above (WOUND-48)
    assert marks_of(a, "strain").marks == (None, None, "strain", "strain")
    a, _ = run(PER_POINT, a.state, hit("stress", amount=1))
    assert marks_of(a, "strain").marks == ("strain", None, "strain", "strain")


def test_wound_35_per_blow_damage_targets_the_first_box():
    a, res = run(PER_BLOW, fresh(PER_BLOW), hit("stress", amount=3))
    assert marks_of(a, "strain").marks == ("strain",) and res == [("ok", "3 of 4 boxes left")]
    a, _ = run(PER_BLOW, a.state, hit("stress", amount=4))  # box 1 taken: the next free box above
    assert marks_of(a, "strain").marks == ("strain", "strain")
    assert run(PER_BLOW, fresh(PER_BLOW, (["strain"] * 4, 0), track="strain"), hit("stress"))[1] == [
        ("ok", "down: 0 of 4 boxes left +1 overflow")]


def test_cb_3_per_point_needs_a_health_track_that_fills_by_box():
    assert ("combat.damage", "per-point-needs-boxes") in problems(edit(GRAVE_DICT, lambda d: d["combat"].update(
        damage="per-point")))
    fifth = edit(sample_dict("fifth-like"), lambda d: d["combat"].update(damage="per-point"))
    assert ("combat.damage", "per-point-needs-boxes") in problems(fifth)
    assert problems(edit(GRAVE_DICT, strain_health)) == []
    assert problems(edit(GRAVE_DICT, lambda d: d["combat"].update(damage="per-blow"))) == []


# -- WOUND-37, WOUND-38: heals ---------------------------------------------------------------------------------
def test_wound_37_a_heal_clears_one_mark_the_lightest_of_any_kind():
    st = fresh(GRAVE, (["tear", "knock", "knock"], 0))
    a, res = run(GRAVE, st, HEAL)
    assert marks_of(a).marks == ("tear", "knock") and res == [("ok", "2 of 4 left, at Winded")]
    a, _ = run(GRAVE, st, '[sheet: who="X" op="heal" amount="3"]')  # one mark per heal, whatever its amount (CB-5)
    assert marks_of(a).marks == ("tear", "knock")
    a, _ = run(GRAVE, fresh(GRAVE, (["tear"], 0)), HEAL)  # of any kind: the tear goes too
    assert marks_of(a) == WoundMarks()
    assert run(GRAVE, st, '[sheet: who="X" op="heal" kind="tear"]')[1] == [("refused", "unknown-attribute")]
    a, res = run(GRAVE, fresh(GRAVE, (["tear"] * 4, 2)), HEAL)  # overflow first (WOUND-24)
    assert marks_of(a) == WoundMarks(("tear",) * 4, 1) and res == [("ok", "down: 0 of 4 left, at Down +1 overflow")]
    indexed = fresh(PER_POINT, (["strain", None, "strain"], 0), track="strain")
    a, _ = run(PER_POINT, indexed, HEAL)  # WOUND-50: the highest of the lightest marks, nothing moves
    assert marks_of(a, "strain").marks == ("strain",)
    a, res = run(GRAVE, fresh(GRAVE), HEAL)  # nothing to clear: still ok
    assert res == [("ok", "4 of 4 left")] and marks_of(a) == WoundMarks()


def test_wound_38_temporary_points_are_refused_on_a_health_track():
    st = fresh(GRAVE, (["knock"], 0))
    a, res = run(GRAVE, st, '[sheet: who="X" op="heal" amount="5" temp]')
    assert res == [("refused", "invalid-value")] and a.state is st
    a, res = run(FIFTH, fresh(FIFTH), '[sheet: who="X" op="heal" amount="5" temp]')  # a pool with allowTemp
    assert res == [("ok", f"{hp_max(FIFTH)} of {hp_max(FIFTH)} left +5 temp")]
    assert run(FIFTH, fresh(FIFTH), '[sheet: who="X" op="heal" temp="yes"]')[1] == [("refused", "invalid-value")]


# -- WOUND-39: the track read as its remaining levels -----------------------------------------------------------
def test_wound_39_the_health_track_reads_as_its_remaining_levels():
    st = fresh(GRAVE, (["tear", "knock"], 0))
    view = view_character(GRAVE, st, "X").health
    assert (view.left, view.of, view.at, view.now) == (2, 4, "Winded", "2 of 4 left, at Winded")
    assert "- Harm (health): 2 of 4 left, at Winded; costs 1 die fewer on every roll" in reminder(GRAVE, st)
    assert run(GRAVE, st, hit("blunt"))[1] == [("ok", "1 of 4 left, at Bleeding")]
    boxed = view_character(PER_POINT, fresh(PER_POINT, ([None, "strain"], 0), track="strain"), "X").health
    assert (boxed.left, boxed.of, boxed.now) == (3, 4, "3 of 4 boxes left")


# -- a pool as health ------------------------------------------------------------------------------------------
def hp_max(rs):
    return view_character(rs, fresh(rs), "X").health.of


def test_cb_1_a_hit_takes_points_from_a_health_pool_temporary_points_first():
    top = hp_max(FIFTH)
    a, res = run(FIFTH, fresh(FIFTH, temp={"hp": 3}), hit("slashing", 5))
    assert res == [("ok", f"{top - 2} of {top} left")] and a.state.live_of("X").pools["hp"] == top - 2
    a, res = run(FIFTH, a.state, hit("fire", 999))
    assert res == [("ok", f"down: 0 of {top} left")]
    assert view_character(FIFTH, a.state, "X").health.down == "Hit points is 0"
    assert f"- Pools: Hit points 0/{top}, down;" in reminder(FIFTH, a.state)  # CB-4: the reminder tells the GM
    a, res = run(FIFTH, a.state, '[sheet: who="X" op="heal" amount="4"]')
    assert res == [("ok", f"4 of {top} left")]
    a, res = run(FIFTH, a.state, f'[sheet: who="X" op="heal" amount="{top * 2}"]')  # up to its maximum
    assert res == [("ok", f"{top} of {top} left")]
    assert run(FIFTH, a.state, hit("psychic", 1))[1] == [("refused", "unknown-damage-type")]  # not declared
    assert run(FIFTH, a.state, '[sheet: who="X" op="hit" amount="2"]')[1] == [("ok", f"{top - 2} of {top} left")]


def test_cb_4_a_health_pool_is_down_at_0_only_and_holds_no_temporary_points_it_does_not_allow():
    resolve = ruleset(lambda d: d.update(combat={"health": {"pool": "resolve"}}))  # no allowTemp
    st = fresh(resolve, pools={"resolve": 1})
    h = view_character(resolve, st, "X").health
    assert (h.left, h.temp, h.down, h.now) == (1, 0, None, "1 of 4 left")
    assert run(resolve, st, hit("edged"))[1] == [("ok", "down: 0 of 4 left")]


def test_cb_1_refusals():
    st = fresh(GRAVE)
    cases = {
        hit("edged", 0): "invalid-amount",  # a landed hit does damage
        hit("edged", -1): "invalid-amount",  # a heal is op="heal"
        hit("edged", "lots"): "invalid-amount",
        '[sheet: who="X" op="heal" amount="-2"]': "invalid-amount",
        '[sheet: who="X" op="hit" type="edged" track="harm"]': "unknown-attribute",
        '[sheet: who="X" op="hit" type="edged" box="2"]': "unknown-attribute",
        '[sheet: who="Nobody" op="hit" type="edged"]': "unknown-character",
        '[sheet: sheet="party" op="hit" type="edged"]': "unknown-sheet",
    }
    for tag, reason in cases.items():
        a, res = run(GRAVE, st, tag)
        assert res == [("refused", reason)] and a.state is st, tag
    none = Ruleset.from_dict(edit(GRAVE_DICT, lambda d: d.pop("combat")))  # DEC-13: no health, no fight ops
    assert run(none, fresh(none), hit("edged") + HEAL)[1] == [("refused", "unsupported-op")] * 2
    hidden = ruleset(lambda d: d.update(combat={"health": {"pool": "oil"}}))  # a wound track is never hidden (HIDE-7)
    a, res = run(hidden, fresh(hidden), hit("edged") + HEAL)  # oil shows only on the night watch; X keeps dusk
    assert res == [("refused", "hidden")] * 2 and view_character(hidden, a.state, "X").health is None


def test_cb_1_who_party_hits_every_character():
    st = GameState.new(GRAVE, ["Mira", "Bram"])
    _, res = run(GRAVE, st, '[sheet: who="party" op="hit" type="edged"]')
    assert res == [("ok", "Mira 3 of 4 left, at Scuffed; Bram 3 of 4 left, at Scuffed")]


# -- the teaching: only to a ruleset that declares `combat` (CB-1, CB-7) -------------------------------------
def test_cb_1_the_hit_is_taught_only_to_rulesets_with_combat():
    taught = reminder(GRAVE, fresh(GRAVE))
    assert ('- Hits in a fight: [sheet: who="X" op="hit" type="blunt"] marks 1 Harm box of its type\'s kind '
            '(blunt: knock, edged: tear); [sheet: who="X" op="heal"] clears the lightest mark. Harm full: down.\n'
            in taught)
    assert 'In a fight, add fight="attack", "save", "contest" or "initiative".' in taught
    assert ('op="hit" type="stress" amount="3"] marks Strain box 3, or the next free box above (stress: strain); '
            '[sheet: who="X" op="heal"] clears the lightest mark. Strain full or a hit no box can take: down.'
            in reminder(PER_POINT, fresh(PER_POINT)))
    assert ('[sheet: who="X" op="hit" type="slashing" amount="3"] takes 3 Hit points (types: slashing, piercing, '
            'bludgeoning, fire); [sheet: who="X" op="heal" amount="3"] heals. At 0 Hit points: down.'
            in reminder(FIFTH, fresh(FIFTH)))
    plain = Ruleset.from_dict(edit(GRAVE_DICT, lambda d: d.pop("combat")))
    text = reminder(plain, fresh(plain))
    assert 'op="hit"' not in text and "fight=" not in text and "(health)" not in text


# -- ADJ-8, ADJ-9: the rolls a fight builds from the sheet --------------------------------------------------
ADJUSTED = Ruleset.from_dict(edit(sample_dict("fifth-like"), lambda d: d.update(resolution={
    "type": "dice-sum", "adjust": [{"value": {"const": -2}, "abilities": ["dex"]}, {"value": {"const": 1}}]})))


def roll(rs, st, tag):
    a = apply_reply(rs, st, tag)
    (r,) = a.receipts
    return r.result, r.reason, dict(r.record), a


def test_adj_8_a_fight_adds_the_modifiers_to_every_roll_it_builds_from_a_sheet():
    st = GameState.new(ADJUSTED, ["X"]).with_dice(Dice("s", 0))
    for tag in ('[check: who="X" skill="Stealth" fight="attack"]', '[check: who="X" save="Dexterity save" '
                'fight="save"]', '[check: who="X" ability="Dexterity" fight="initiative"]',
                '[check: who="X" skill="Stealth" fight="contest"]'):
        result, _, record, _ = roll(ADJUSTED, st, tag)
        assert (result, record["adjust"]) == ("ok", "-1"), tag  # Dexterity's -2 and the +1 for every roll
    result, _, record, _ = roll(ADJUSTED, st, '[check: who="X" skill="Athletics" fight="attack"]')
    assert record["adjust"] == "+1"  # Strength: only the entry for every roll


def test_adj_9_any_other_roll_gets_only_the_entries_for_every_roll():
    st = GameState.new(ADJUSTED, ["X"]).with_dice(Dice("s", 0))
    result, _, record, a = roll(ADJUSTED, st, '[check: who="X" fight="initiative"]')
    assert result == "ok" and record["total"] == "+1" and record["adjust"] == "+1"  # nothing from Dexterity
    assert int(record["sum"]) == int(record["roll"]) + 1 and a.state.dice == Dice("s", 1)
    assert roll(ADJUSTED, st, '[check: who="X" fight="flee"]')[:2] == ("refused", "invalid-value")
    assert roll(ADJUSTED, st, '[check: who="X" fight="save" with="Strength"]')[:2] == ("refused", "unknown-attribute")
    assert roll(ADJUSTED, st, '[check: who="X" dc="10"]')[:2] == ("refused", "missing-attribute")


# -- properties ----------------------------------------------------------------------------------------------
HITS = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 6)), max_size=12)  # 2: a heal, else a type


@settings(max_examples=examples(60), deadline=None)
@given(HITS, st.sampled_from(["grave", "point", "blow"]))
def test_cb_a_hit_never_leaves_more_marks_than_boxes_and_receipts_are_idempotent(hits, which):
    rs = {"grave": GRAVE, "point": PER_POINT, "blow": PER_BLOW}[which]
    track, types = ("harm", ["blunt", "edged"]) if which == "grave" else ("strain", ["stress", "stress"])
    text = " ".join(HEAL if i == 2 else hit(types[i], n) for i, n in hits)
    start = fresh(rs)
    a = apply_reply(rs, start, text)
    w = next(v for v in view_character(rs, a.state, "X").wounds if v.id == track)
    assert w.filled <= w.length and len(a.state.live_of("X").marks.get(track, WoundMarks()).marks) <= w.length
    h = view_character(rs, a.state, "X").health
    assert h.left == w.length - w.filled and (h.down is not None) == (w.filled == w.length or w.overflow > 0)
    assert all(r.result == "ok" for r in a.receipts)  # a hit on its own health is never refused
    again = apply_reply(rs, start, a.text)  # DEC-5: the engine's own output applies to the same text and state
    assert again.text == a.text and again.state == a.state
    assert start == fresh(rs)  # the state given is never changed
