"""The dice card (`commands/check.card`, what `tagengine roll` and the checks endpoint print; decisions CK-10, ADJ-11,
PEN-6, UNTR-10): one golden file of cards, for checks that exercise each of its lines, with the state's own dice.

Regenerate after an intended change with `UPDATE_GOLDEN=1` and read the diff."""

from __future__ import annotations

import os

import pytest
from cmdkit import sample_state, with_live

from conftest import GOLDEN, edit, load_sample, sample_dict
from tagengine._internal.commands.check import card, roll_tag
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.state import Dice, GameState
from tagengine._internal.tags import parse

GRAVE, EMBER, FIFTH = (load_sample(n) for n in ("gravewatch", "ember-roads", "fifth-like"))
NO_DICE = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: (
    d["resolution"]["pool"].update(min=0),
    d["sheet"]["skills"].append({"id": "pray", "label": "Pray", "ability": "lore", "untrained": {"by": -4}}))))

NO_POOL = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["resolution"].pop("pool")))  # PEN-3's floor: 1


def grave(**live):
    return with_live(GRAVE, sample_state("gravewatch"), **live)


CASES = [  # (name, ruleset, state, tag)
    ("pool-trained-wounded", GRAVE, lambda: sample_state("gravewatch"), '[check: who="Mira" skill="Ward"]'),
    ("pool-capped-adjusted", GRAVE, lambda: grave(mira={"states": {"lantern": "out"}}),
     '[check: who="Mira" skill="Soothe" with="Nerve"]'),
    ("pool-no-pool-block", NO_POOL, lambda: GameState.loads(NO_POOL, sample_state("gravewatch").dumps()),
     '[check: who="Mira" skill="Ward"]'),
    ("pool-ability", GRAVE, lambda: sample_state("gravewatch"), '[check: who="Bram" ability="Sinew"]'),
    ("pool-one-die", GRAVE, lambda: sample_state("gravewatch"), '[check: who="Bram" ability="Lore"]'),
    ("pool-untrained-by", NO_DICE, lambda: GameState.new(NO_DICE, ["Tam"]), '[check: who="Tam" skill="Pray"]'),
    ("pool-difficulty", EMBER, lambda: sample_state("ember-roads"),
     '[check: who="Tobin" skill="Listen" difficulty="3"]'),
    ("pool-harder-untrained", EMBER, lambda: sample_state("ember-roads"),
     '[check: who="Mira" skill="Listen" difficulty="3"]'),
    ("pool-untrained-section-by", EMBER, lambda: sample_state("ember-roads"), '[check: who="Tobin" skill="Haul"]'),
    ("pool-refused-untrained", EMBER, lambda: sample_state("ember-roads"), '[check: who="Mira" skill="Dig"]'),
    ("refused-unknown", EMBER, lambda: sample_state("ember-roads"), '[check: who="Mira" skill="Juggle"]'),
    ("refused-no-one", EMBER, lambda: sample_state("ember-roads"), '[check: who="Nobody" skill="Dig"]'),
    ("sum-dc", FIFTH, lambda: sample_state("fifth-like"), '[check: who="Vess" skill="Arcana" dc="15"]'),
    ("sum-no-dc", FIFTH, lambda: sample_state("fifth-like"), '[check: who="Vess" save="Dexterity save"]'),
    ("sum-fight-no-ability", FIFTH, lambda: sample_state("fifth-like"), '[check: who="Vess" fight="initiative"]'),
]


@pytest.mark.parametrize(("name", "rs", "state", "tag"), CASES, ids=[c[0] for c in CASES])
def test_ck_10_the_dice_card_says_what_made_the_number_and_what_the_dice_did(name, rs, state, tag):
    st = state().with_dice(Dice("cards", 0))
    done = roll_tag(rs, st, parse(tag))
    text = "\n".join(card(rs, done)) + "\n"
    path = GOLDEN / "cards" / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
