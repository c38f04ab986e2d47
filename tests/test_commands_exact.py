"""Commands at their edges, pinned where a mutation pass found them unchecked (issue 29, docs/mutation.md): the JSON
receipt, a chat app's party saves, live text at its length limit."""

from __future__ import annotations

import pytest
from cmdkit import run, sample_state

from conftest import load_sample, sample_dict
from tagengine import Ruleset
from tagengine._internal.commands import apply_reply, check, combat, sheet
from tagengine._internal.commands.edit import edit_mac
from tagengine._internal.commands.party_save import PartyConflict, save_party
from tagengine._internal.commands.pools import clamp_maxima
from tagengine._internal.commands.sheet_edits import MAX_CHANGES, edit_party, edit_sheet
from tagengine._internal.commands.subject import subject
from tagengine._internal.errors import StateError
from tagengine._internal.prompt import reminder
from tagengine._internal.sheet import view_character
from tagengine._internal.sheet.edit_paths import Change, change_of
from tagengine._internal.state import PARTY, GameState

BLADES, GRAVE, FIFTH = (load_sample(n) for n in ("blades-like", "gravewatch", "fifth-like"))
MAC_OF_GRAVEWATCH = "3c241599f38c638c"  # an edit's MAC on the gravewatch sample (ED-8), as this version writes it


def test_dec_4_the_json_receipt_has_its_span_its_attributes_and_only_what_it_says():
    text = ('A [sheet: who="Cutter" op="spend" pool="stress" amount="1"] B [clock: name="x" tick] '
            'C [sheet: who="Cutter" op="spend" pool="stress" amount="1" !]')
    out = apply_reply(BLADES, sample_state("blades-like"), text)
    ok, refused, malformed = (r.to_json() for r in out.receipts)
    assert ok == {"span": [2, ok["span"][1]], "tag": "sheet", "result": "ok", "now": ok["now"],
                  "attrs": {"who": "Cutter", "op": "spend", "pool": "stress", "amount": "1"}}
    assert out.text[ok["span"][0]:ok["span"][1]].endswith(f'now="{ok["now"]}"]')
    assert refused == {"span": refused["span"], "tag": "clock", "attrs": {"name": "x", "tick": None},
                       "result": "refused", "reason": "invalid-amount"}
    assert malformed["detail"].startswith("unexpected '!'") and malformed["reason"] == "malformed"
    assert "record" not in ok and "detail" not in ok
    (check,) = apply_reply(GRAVE, sample_state("gravewatch"), '[check: who="Mira" skill="Ward"]').receipts
    assert check.to_json()["record"] == dict(check.record) and "now" not in check.to_json()


def test_party_36_a_save_of_a_ruleset_without_a_party_sheet_or_of_a_bad_draft_says_what_is_wrong():
    with pytest.raises(StateError) as e:
        save_party(GRAVE, sample_state("gravewatch"), {"fields": {}}, 0)
    assert [(p.path, p.code, p.message) for p in e.value.problems] == [
        ("party", "no-party", "the ruleset has no party sheet")]
    assert e.value.source == "party save"
    st = sample_state("blades-like")
    with pytest.raises(StateError) as e:
        save_party(BLADES, st, {"fields": {"heat": "hot"}, "lists": {"cohorts": [{"name": 5}]}}, st.party_revision)
    assert e.value.source == "party save"
    assert {p.path.split(".")[0] for p in e.value.problems} == {"fields", "lists"}
    assert any(p.path.startswith("fields.heat") for p in e.value.problems)


def test_party_36_a_saved_draft_keeps_its_lists():
    st = sample_state("blades-like")
    rows = [{"name": "The Lamplighters", "type": "gang", "elite": False}]
    saved = save_party(BLADES, st, {"fields": st.party_sheet["fields"], "lists": {"cohorts": rows}},
                       st.party_revision)
    assert saved.party_sheet["lists"]["cohorts"][0]["name"] == "The Lamplighters"


def test_party_37_a_stale_draft_says_which_revision_won():
    st = sample_state("blades-like")
    with pytest.raises(PartyConflict) as e:
        save_party(BLADES, st, {}, st.party_revision - 1)
    assert str(e.value) == f"the party sheet was saved at revision {st.party_revision} after this draft was opened"


def test_u_40_live_text_at_its_length_limit_is_kept_and_read_back():
    fifth_text = next(t for t in FIFTH.file.sheet.live.text)
    exact = "x" * fifth_text.maxLength
    a, res = run(FIFTH, sample_state("fifth-like"), f'[sheet: who="Vess" op="text" text="{fifth_text.label}" '
                                                    f'to="{exact}"]')
    assert res == [("ok", exact)] and a.state.live_of("Vess").text[fifth_text.id] == exact
    _, res = run(FIFTH, sample_state("fifth-like"), f'[sheet: who="Vess" op="text" text="{fifth_text.label}" '
                                                    f'to="{exact}x"]')
    assert res == [("refused", "invalid-value")]


def test_c_3_restore_keeps_temporary_points_and_grants_only_the_larger():
    st = sample_state("fifth-like")  # Vess: Hit points 21/23 +5 temp
    a, res = run(FIFTH, st, '[sheet: who="Vess" op="restore" pool="Hit points" amount="1"]')
    assert res == [("ok", "22/23 +5 temp")] and a.state.live_of("Vess").temp == {"hp": 5}
    a, res = run(FIFTH, st, '[sheet: who="Vess" op="restore" pool="Hit points" amount="3" temp]')
    assert res == [("ok", "21/23 +5 temp")] and a.state.live_of("Vess").pools["hp"] == 21
    a, res = run(FIFTH, a.state, '[sheet: who="Vess" op="restore" pool="Hit points" amount="8" temp]')
    assert res == [("ok", "21/23 +8 temp")] and a.state.live_of("Vess").temp == {"hp": 8}
    for bad, why in (('temp="yes"', "invalid-value"), ('list="Features"', "unknown-attribute")):
        a, res = run(FIFTH, st, f'[sheet: who="Vess" op="restore" pool="Hit points" {bad}]')
        assert res == [("refused", why)] and a.state is st


def test_cb_5_a_heal_of_0_heals_nothing_and_a_heal_of_temporary_points_keeps_the_larger_grant():
    st = sample_state("fifth-like")
    assert run(FIFTH, st, '[sheet: who="Vess" op="heal" amount="0"]')[1] == [("ok", "21 of 23 left +5 temp")]
    a, res = run(FIFTH, st, '[sheet: who="Vess" op="heal" amount="3" temp]')
    assert res == [("ok", "21 of 23 left +5 temp")] and a.state.live_of("Vess").pools["hp"] == 21
    a, res = run(FIFTH, a.state, '[sheet: who="Vess" op="heal" amount="9" temp]')
    assert res == [("ok", "21 of 23 left +9 temp")]


def test_sheet_31_spending_0_of_a_row_is_allowed():
    st = sample_state("fifth-like")
    assert run(FIFTH, st, '[sheet: who="Vess" op="spend" row="Second wind" amount="0"]')[1] == [("ok", "1/2")]
    assert run(FIFTH, st, '[sheet: who="Vess" op="restore" row="Second wind" amount="0"]')[1] == [("ok", "1/2")]


def test_party_19_advance_refusals_name_their_reason_and_keep_the_state():
    """DEC-15: `by` a word, `by` on a text field, a text past its length or with brackets: each refused for its own
    reason, the party sheet and its revision unchanged (the same state)."""
    s = sample_state("blades-like")
    for tag, reason in [('field="heat" by="lots"', "invalid-amount"), ('field="heat" to="lots"', "invalid-value"),
                        ('field="upgrades" by="1"', "invalid-value"),
                        (f'field="upgrades" to="{"x" * 401}"', "invalid-value"),
                        ('field="upgrades" to="a {{macro}}"', "invalid-value")]:
        a, res = run(BLADES, s, f'[sheet: sheet="party" op="advance" {tag}]')
        assert (res, a.state) == ([("refused", reason)], s), tag
        assert a.state is s
    a, res = run(BLADES, s, f'[sheet: sheet="party" op="advance" field="upgrades" to="{"x" * 400}"]')
    assert res == [("ok", "x" * 400)] and a.state.party_revision == s.party_revision + 1


def test_clock_15_a_clear_with_a_value_is_refused_and_the_clock_kept():
    """DEC-1: `clear` is a bare flag word; `clear="yes"` is refused, not taken as a clear."""
    s = sample_state("blades-like")
    (clock,) = s.clocks
    a, res = run(BLADES, s, f'[clock: name="{clock.name}" clear="yes"]')
    assert res == [("refused", "invalid-value")] and a.state is s
    a, res = run(BLADES, s, f'[clock: name="{clock.name}" clear]')
    assert res == [("ok", "cleared")] and a.state.clocks == ()


def test_wound_38_a_temporary_grant_of_0_grants_nothing():
    """C-3, CB-5: a heal with `temp` keeps the larger of the temporary points held and the grant: with none held,
    a grant of 0 leaves 0 (not 1)."""
    s = GameState.new(FIFTH, ["X"])
    a, res = run(FIFTH, s, '[sheet: who="X" op="heal" temp amount="0"]')
    assert res[0][0] == "ok" and a.state.live_of("X").temp.get("hp", 0) == 0
    a, res = run(FIFTH, s, '[sheet: who="X" op="heal" temp amount="2"]')
    assert a.state.live_of("X").temp["hp"] == 2


def test_ed_8_an_edit_receipt_with_what_no_edit_has_is_refused_for_that():
    """An `[edit:]` receipt: an attribute no edit has, or neither `who` nor `sheet`, each refused for its reason;
    an escape in `changes` that is not UTF-8, under a MAC that holds, is `invalid-edit`."""
    s = sample_state("gravewatch")
    assert run(GRAVE, s, '[edit: by="player" who="Mira" changes="a=1" mac="0" colour="red"]')[1] == [
        ("refused", "unknown-attribute")]
    assert run(GRAVE, s, '[edit: by="player" changes="a=1" mac="0"]')[1] == [("refused", "missing-attribute")]
    assert run(GRAVE, s, '[edit: by="player" who="Mira" sheet="party" changes="a=1" mac="0"]')[1] == [
        ("refused", "one-action")]
    attrs = (("by", "player"), ("who", "Mira"), ("changes", "pools.resolve=%FF"))
    tag = "[edit: " + " ".join(f'{k}="{v}"' for k, v in attrs) + f' mac="{edit_mac(s, attrs)}"]'
    a, res = run(GRAVE, s, tag)
    assert res == [("refused", "invalid-edit")] and a.state is s


def _ember_with_hidden_weariness() -> Ruleset:
    data = sample_dict("ember-roads")
    (track,) = data["sheet"]["live"]["tracks"]
    track["hideWhen"] = {"field": "calling", "equals": "scout"}  # Mira is a scout
    return Ruleset.from_dict(data)


@pytest.mark.parametrize(("name", "tag", "reason"), [
    ("fifth-like", '[sheet: who="Vess" op="damage" pool="hp" amount="1" box="1"]', "unknown-attribute"),
    ("fifth-like", '[sheet: who="Vess" op="damage" pool="mana" amount="1"]', "unknown-pool"),
    ("ember-roads", '[sheet: who="Mira" op="track" track="luck" by="1"]', "unknown-track"),
    ("ember-roads", '[sheet: who="Mira" op="track" track="weariness" to="x"]', "invalid-value"),
    ("hidden", '[sheet: who="Mira" op="track" track="weariness" by="1"]', "hidden"),
])
def test_dec_14_a_refused_command_answers_its_reason_and_keeps_the_very_state(name, tag, reason):
    """A refusal changes nothing: the state after it is the state before (not a copy, not None), so the tags after
    it in the reply act on that state."""
    rs = _ember_with_hidden_weariness() if name == "hidden" else load_sample(name)
    s = GameState.loads(rs, sample_state("ember-roads" if name == "hidden" else name).dumps())
    a, res = run(rs, s, tag)
    assert res == [("refused", reason)] and a.state is s


def test_c_3_damage_takes_temporary_points_first_and_the_receipt_says_what_is_left():
    s = sample_state("fifth-like")  # Vess: hp 21, 5 temporary
    top = next(p.max for p in view_character(FIFTH, s, "Vess").pools if p.id == "hp")
    a, res = run(FIFTH, s, '[sheet: who="Vess" op="damage" pool="hp" amount="3"]')
    assert res == [("ok", f"21/{top} +2 temp")]
    assert a.state.live_of("Vess").temp == {"hp": 2} and a.state.live_of("Vess").pools["hp"] == 21
    a, res = run(FIFTH, a.state, '[sheet: who="Vess" op="damage" pool="hp" amount="4"]')
    assert res == [("ok", f"19/{top}")] and a.state.live_of("Vess").temp == {}


def test_state_10_an_edit_refused_names_the_value_that_was_typed():
    """A problem carries what was typed, so a form shows it back: a hidden pool (STATE-10), a box past the track."""
    s = sample_state("gravewatch")
    (p,) = edit_sheet(GRAVE, s, "Bram", {"pools.oil": 2}).problems
    assert (p.path, p.code, p.value) == ("pools.oil", "hidden", 2)
    (p,) = edit_sheet(GRAVE, s, "Mira", {"marks.harm.99": "lethal"}).problems
    assert (p.path, p.code, p.message, p.value) == ("marks.harm.99", "out-of-range", "track 'harm' has boxes 1..7",
                                                     "lethal")
    none = edit_party(GRAVE, s, {"fields.x": 1})
    assert none.state is s and [q.code for q in none.problems] == ["no-party"]


def test_sheet_28_a_row_is_added_at_a_place_from_the_first_to_after_the_last():
    s = sample_state("gravewatch")  # Mira has two scars
    for at in ("0", "2"):
        assert edit_sheet(GRAVE, s, "Mira", [change_of("add:lists.scars", at)]).ok
    (p,) = edit_sheet(GRAVE, s, "Mira", [change_of("add:lists.scars", "3")]).problems
    assert (p.path, p.code, p.message) == ("lists.scars", "out-of-range", "3 is outside 0..2")



def test_adj_9_a_fights_roll_named_by_no_skill_is_judged_against_its_dc():
    """CB-7: `[check: fight="initiative" dc="15"]` reads no skill and still meets its dc (a sum below it fails)."""
    s = sample_state("fifth-like")
    a, _ = run(FIFTH, s, '[check: who="Vess" fight="initiative" dc="15"]')
    record = dict(a.receipts[0].record)
    assert record["outcome"] == ("success" if int(record["sum"]) >= 15 else "failure")
    a, _ = run(FIFTH, s, '[check: who="Vess" fight="initiative"]')
    assert "outcome" not in dict(a.receipts[0].record)  # no dc, no verdict


def test_dec_18_a_game_with_no_character_yet_is_taught_with_a_placeholder_name():
    """The reminder of a game whose characters are not made yet is still built, its examples naming `Name`."""
    empty = GameState.new(FIFTH, [])
    assert check.teach(FIFTH, empty)["who"] == "Name"
    assert sheet.teach(FIFTH, empty)["rows"] is not None
    assert '[sheet: who="Name" op="spend" pool="Hit points" amount="1"]' in reminder(FIFTH, empty)


def test_untr_10_a_section_that_refuses_untrained_checks_is_taught():
    """UNTR-10: the GM is taught that a refused check is not attempted when a section (not a skill) says so."""
    data = sample_dict("ember-roads")  # Dig refuses untrained; the Labour section takes a die away
    for k in (*data["sheet"].get("skills", []), *data["sheet"].get("saves", [])):
        if k.get("untrained") == "refuse":
            k.pop("untrained")
    plain = Ruleset.from_dict(data)
    data["sheet"]["sections"][0]["untrained"] = "refuse"
    refusing = Ruleset.from_dict(data)
    assert check.teach(plain, GameState.new(plain, ["X"]))["refuse"] is False
    assert check.teach(refusing, GameState.new(refusing, ["X"]))["refuse"] is True


def test_cb_1_combat_without_a_health_teaches_no_hit():
    data = sample_dict("fifth-like")
    data["combat"] = {"damageTypes": ["fire"]}
    assert combat.taught(Ruleset.from_dict(data)) is None
    assert combat.taught(FIFTH) is not None


def test_ed_8_a_key_escape_that_is_not_utf_8_is_an_invalid_edit():
    s = sample_state("gravewatch")
    attrs = (("by", "player"), ("who", "Mira"), ("changes", "%FF=1"))
    tag = "[edit: " + " ".join(f'{k}="{v}"' for k, v in attrs) + f' mac="{edit_mac(s, attrs)}"]'
    a, res = run(GRAVE, s, tag)
    assert res == [("refused", "invalid-edit")] and a.state is s


def test_ed_8_a_receipt_written_by_this_version_verifies_in_the_next():
    """The MAC is a digest of the state's canonical JSON: a receipt kept in a chat must verify after an upgrade, so
    the canonical form (sorted keys, no spaces) may not change unnoticed. The value below was computed once."""
    s = sample_state("gravewatch")
    attrs = (("by", "player"), ("who", "Mira"), ("changes", "pools.resolve=5"))
    assert edit_mac(s, attrs) == MAC_OF_GRAVEWATCH


def test_sheet_35_temporary_points_are_set_by_hand_apart_from_the_pool():
    s = sample_state("fifth-like")  # Vess: hp 21, 5 temporary
    e = edit_sheet(FIFTH, s, "Vess", {"temp.hp": 3})
    assert e.ok and e.state.live_of("Vess").temp == {"hp": 3} and e.state.live_of("Vess").pools["hp"] == 21


def test_wound_29_damage_names_its_track_and_refusals_keep_the_state():
    s = sample_state("gravewatch")
    for tag, reason in [('kind="lethal"', "missing-attribute"), ('track="luck" kind="lethal"', "unknown-track")]:
        a, res = run(GRAVE, s, f'[sheet: who="Mira" op="damage" {tag}]')
        assert res == [("refused", reason)] and a.state is s


def test_sheet_12_an_edit_is_read_in_the_fields_type_and_a_problem_says_what_was_expected():
    """DEC-8: an enum value named by its label (here one unlike its id); a wrong type or value named with what the
    field takes; a dice field left blank is blank."""
    data = sample_dict("ember-roads")
    data["sheet"]["fields"][0]["valueLabels"]["scout"] = "Pathfinder"
    ember = Ruleset.from_dict(data)
    s = sample_state("ember-roads")

    def problems(change, who="Mira", state=s):
        return [(p.path, p.code, p.message) for p in edit_sheet(ember, state, who, change).problems]

    e = edit_sheet(ember, s, "Mira", {"fields.calling": "pathfinder"})
    assert e.ok and e.state.cards["Mira"]["fields"]["calling"] == "scout"
    assert problems({"fields.calling": 3}) == [
        ("fields.calling", "wrong-type", "expected one of the field's values, not int 3")]
    assert problems({"fields.calling": "sailor"}) == [
        ("fields.calling", "unknown-value", "'sailor' is not one of the field's values: drover, scout, tinker")]
    assert problems({"fields.signal": 5}) == [("fields.signal", "wrong-type", "expected text, not int 5")]
    e = edit_sheet(ember, s, "Mira", {"fields.signal": "  "})
    assert e.ok and e.state.cards["Mira"]["fields"]["signal"] == ""
    assert problems({"fields.signal": "1d6"}, "Nobody", GameState.new(ember, [])) == [
        ("who", "unknown-character", "no character is named 'Nobody'; the characters are none")]



def test_sheet_31_a_rows_lowered_maximum_clamps_only_uses_above_it():
    """R-5 (`clamp_maxima`, what a chat app calls after a hand edit of a card): a row's uses are written down to a
    lowered maximum only when they held more: uses spent to 1 of 3 stay 1 when the maximum drops to 2, a full
    row of 3 goes to 2; a new row at its start stays unstored."""
    s = sample_state("fifth-like")  # Vess: Second wind, 1 use left of 2
    raised = edit_sheet(FIFTH, s, "Vess", {"lists.features.1.uses": 3}).state
    assert raised.live_of("Vess").rows == {"features": (0, 1)}
    lowered = edit_sheet(FIFTH, raised, "Vess", {"lists.features.1.uses": 2}).state
    assert clamp_maxima(FIFTH, raised, lowered).live_of("Vess").rows == {"features": (0, 1)}
    full = raised.with_live("Vess", raised.live_of("Vess").but(rows={"features": (0, None)}))  # Second wind: 3 of 3
    lowered = edit_sheet(FIFTH, full, "Vess", {"lists.features.1.uses": 2}).state
    assert clamp_maxima(FIFTH, full, lowered).live_of("Vess").rows == {"features": (0, 2)}
    added = edit_sheet(FIFTH, s, "Vess", [change_of("add:lists.features"), Change("set", "lists.features.2.uses", 0)])
    assert clamp_maxima(FIFTH, s, added.state).live_of("Vess").rows == {"features": (0, 1, None)}


def test_state_4_h_3_text_that_no_state_could_hold_is_refused_saying_why():
    """H-3 and the one-line rule for a text field typed in the editor: each problem says what is wrong."""
    ember, s = load_sample("ember-roads"), sample_state("ember-roads")
    said = {v: [(p.code, p.message) for p in edit_sheet(ember, s, "Mira", {"fields.roads": v}).problems]
            for v in ("a\ud800b", "two\nlines", "tab\there", "bell\x07")}
    assert said == {"a\ud800b": [("bad-text", "is not valid UTF-8 text, so no state could save it")],
                    "two\nlines": [("not-one-line", "is one line of text")],
                    "tab\there": [("bad-text", "must not contain control characters")],
                    "bell\x07": [("bad-text", "must not contain control characters")]}


def test_state_10_a_hidden_live_state_is_not_set_by_hand_and_says_what_it_is():
    data = sample_dict("gravewatch")
    data["sheet"]["live"]["states"][0]["hideWhen"] = {"field": "watch", "equals": "dawn"}  # Bram keeps the dawn watch
    grave = Ruleset.from_dict(data)
    s = GameState.loads(grave, sample_state("gravewatch").dumps())
    (p,) = edit_sheet(grave, s, "Bram", {"states.lantern": "out"}).problems
    assert (p.code, p.value) == ("hidden", "out")
    assert p.message == "the live state is hidden on this sheet (watch is 'dawn'), so it is not set"


def test_h_2_a_number_typed_with_white_space_around_it_is_read_up_to_32_characters():
    """H-2: white space around a number is trimmed, in a value of up to 32 characters (longer is not read: the
    work stays bounded by the text); a range open below reads `..10`."""
    ember, s = load_sample("ember-roads"), sample_state("ember-roads")
    e = edit_sheet(ember, s, "Mira", {"fields.level": " " * 31 + "5"})
    assert e.ok and e.state.cards["Mira"]["fields"]["level"] == 5
    assert [p.code for p in edit_sheet(ember, s, "Mira", {"fields.level": " " * 32 + "5"}).problems] == ["wrong-type"]
    data = sample_dict("ember-roads")
    next(f for f in data["sheet"]["fields"] if f["id"] == "level").pop("min")
    (p,) = edit_sheet(Ruleset.from_dict(data), s, "Mira", {"fields.level": "11"}).problems
    assert (p.code, p.message) == ("out-of-range", "11 is outside ..10")


def test_dec_6_an_edit_of_as_many_changes_as_allowed_is_made():
    s = sample_state("gravewatch")
    e = edit_sheet(GRAVE, s, "Mira", [Change("set", "fields.oath", f"oath {n}") for n in range(MAX_CHANGES)])
    assert e.ok and e.state.cards["Mira"]["fields"]["oath"] == f"oath {MAX_CHANGES - 1}"


def test_party_29_the_party_sheet_reads_its_members():
    """`fromMembers`: the crew's size counts the members, its stashes sum theirs, wherever the party is read."""
    s = sample_state("blades-like")
    ev = subject(BLADES, s, PARTY, party=True).ev
    assert (ev.fields["size"], ev.fields["stashes"]) == (len(s.cards), 10)


def test_dec_2_a_handler_that_raises_refuses_its_tag_and_keeps_the_state(monkeypatch):
    """No exception escapes from a reply: a bug in one command refuses that tag `malformed`, saying so in the
    receipt's detail, and the state and the rest of the reply go on."""
    from tagengine._internal.commands import dispatch

    real = dispatch.run_command

    def broken(rs, state, tag):
        if tag.name == "clock":
            raise ValueError("boom")
        return real(rs, state, tag)

    monkeypatch.setattr(dispatch, "run_command", broken)
    s = sample_state("blades-like")
    out = apply_reply(BLADES, s, '[clock: name="x" size="4"] [sheet: who="Cutter" op="spend" pool="stress"]')
    bad, good = out.receipts
    assert (bad.result, bad.reason, bad.detail) == ("refused", "malformed", "internal error: ValueError: boom")
    assert good.result == "ok" and out.state.clocks == s.clocks


def test_sheet_12_a_value_quoted_in_a_problem_is_cut_past_60_characters():
    ember, s = load_sample("ember-roads"), sample_state("ember-roads")
    (whole,) = edit_sheet(ember, s, "Mira", {"fields.level": "x" * 58}).problems  # its repr: 60 characters
    assert whole.message == f"'{'x' * 58}' is not a whole number"
    (cut,) = edit_sheet(ember, s, "Mira", {"fields.level": "x" * 59}).problems
    assert cut.message == f"'{'x' * 58}… is not a whole number"


def test_sheet_28_a_characters_list_is_edited_in_a_ruleset_with_a_party_sheet():
    """The character's own list, not a party list, when the ruleset has both."""
    data = sample_dict("blades-like")
    data["sheet"]["lists"] = [{"id": "gear", "label": "Gear", "columns": [
        {"id": "name", "label": "Item", "type": "text", "maxLength": 40}]}]
    blades = Ruleset.from_dict(data)
    s = GameState.new(blades, ["Cutter"])
    e = edit_sheet(blades, s, "Cutter", [change_of("add:lists.gear"), Change("set", "lists.gear.0.name", "Rope")])
    assert e.ok and e.state.cards["Cutter"]["lists"]["gear"] == ({"name": "Rope"},)
