"""Rules whose earlier citations checked only half of what they say (PARTY-24, GM-19)."""

from __future__ import annotations

from cmdkit import sample_state

from conftest import load_sample, sample_dict
from tagengine import Ruleset, apply_reply
from tagengine._internal.prompt import reminder, system_prompt


def test_party_24_live_party_pools_use_the_reserved_entry():
    """PARTY-24: the party's live pools are stored under `$party` of `rulesetLive`, apart from every
    character's normalised name."""
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    out = apply_reply(rs, state, '[sheet: sheet="party" op="spend" pool="coin" amount="1"]')
    assert out.receipts[0].result == "ok"
    before, after = state.to_json()["rulesetLive"], out.state.to_json()["rulesetLive"]
    assert before["$party"]["pools"]["coin"] == 3 and after["$party"]["pools"]["coin"] == 2  # now="2/8"
    assert {k: v for k, v in after.items() if k != "$party"} == {k: v for k, v in before.items() if k != "$party"}


def test_gm_19_commands_are_taught_without_sheet_guidance():
    """GM-19: an author who writes no `sheetGuidance` still gets every command taught, with the names the
    ruleset declares."""
    doc = sample_dict("gravewatch")
    doc["gm"].pop("sheetGuidance")
    rs = Ruleset.from_dict(doc)
    state = sample_state("gravewatch")
    assert "## The sheets" not in system_prompt(rs).text
    taught = reminder(rs, state).split("## Commands you can write")[1]
    assert 'op="spend" pool="Resolve"' in taught and 'op="damage" track="Harm"' in taught
    assert 'op="rest" rest="Catch your breath"' in taught
