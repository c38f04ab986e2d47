"""The party sheet: pools (PARTY-8, PARTY-20), fromMembers (PARTY-29..31), summary rules (PARTY-13..15)."""

from __future__ import annotations

import json

from conftest import SAMPLES, load_sample
from tagengine._internal.sheet import view_party
from tagengine._internal.sheet.show import party_summary
from tagengine._internal.state import GameState

BLADES = load_sample("blades-like")


def state():
    return GameState.loads(BLADES, (SAMPLES / "states" / "blades-like.json").read_text())


def test_party_8_pool_max_reads_a_party_field():
    s = state()
    coin = next(p for p in view_party(BLADES, s).pools if p.id == "coin")
    assert (coin.cur, coin.max) == (3, 8)
    doc = s.to_json()
    doc["gamePartySheet"]["fields"]["vault"] = 2
    s2 = GameState.loads(BLADES, json.dumps(doc))
    coin = next(p for p in view_party(BLADES, s2).pools if p.id == "coin")
    assert (coin.cur, coin.max) == (2, 2)  # PARTY-20: the same current/maximum arithmetic as characters


def test_party_20_start_empty():
    s = GameState.new(BLADES, ["Cutter"])
    coin = next(p for p in view_party(BLADES, s).pools if p.id == "coin")
    assert (coin.cur, coin.max) == (0, 8)


def test_party_29_31_from_members_count_and_sum_at_each_read():
    s = state()
    sheet = view_party(BLADES, s)
    assert sheet.fields["size"] == 2 and sheet.fields["stashes"] == 10
    doc = s.to_json()
    del doc["gameCharacterCards"]["Lurk"]
    del doc["rulesetLive"]["lurk"]
    left = GameState.loads(BLADES, json.dumps(doc))
    sheet = view_party(BLADES, left)
    assert sheet.fields["size"] == 1 and sheet.fields["stashes"] == 6  # a character who leaves changes them at once


def test_party_13_15_summary_fields_and_pools_always():
    sheet = view_party(BLADES, state())
    fields, pools = party_summary(BLADES, sheet)
    assert fields == ["heat", "tier", "size", "upgrades"] and pools == ["coin", "moorings"]


def test_party_14_without_summary_all_visible_fields():
    from conftest import edit, sample_dict
    from tagengine._internal.ruleset import Ruleset

    rs = Ruleset.from_dict(edit(sample_dict("blades-like"), lambda d: d["party"].pop("summary")))
    s = GameState.new(rs, ["Cutter"])
    fields, pools = party_summary(rs, view_party(rs, s))
    assert fields == ["heat", "vault", "upgrades", "tier", "size", "stashes", "lair"]
    assert pools == ["coin"]  # moorings are hidden unless the lair is a barge (PARTY-10)
