"""Chat snapshots (CLOCK-26, CLOCK-27, PARTY-25, PARTY-36/37) and the streaming filter."""

from __future__ import annotations

import json

import pytest
from cmdkit import sample_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.chat import Chat
from tagengine._internal.commands.party_save import PartyConflict
from tagengine._internal.state import Clock
from tagengine._internal.stream import StreamFilter
from tagengine._internal.tags import narration
from tagengine._internal.tags.vocabulary import VOCABULARY

BLADES, GRAVE = load_sample("blades-like"), load_sample("gravewatch")


def crew():
    return Chat(BLADES, sample_state("blades-like"))  # coin 3/8, heat 2, clock Bluecoats 3/6, revision 3


def test_clock_26_continue_from_current_regenerate_from_previous():
    chat = crew()
    chat.user("We pull the job.")
    chat.receive('[clock: name="Bluecoats close in" tick="1"] [sheet: sheet="party" op="restore" pool="coin" '
                 'amount="2"]')
    chat.user("Again!")
    chat.receive('[clock: name="Bluecoats close in" tick="1"]')
    assert chat.state.clocks == (Clock("Bluecoats close in", 6, 5),)
    chat.regenerate('[clock: name="Bluecoats close in" tick="-1"]')  # from the snapshot before that reply
    assert chat.state.clocks == (Clock("Bluecoats close in", 6, 3),)
    assert chat.state.live_of("$party").pools == {"coin": 5}


def test_clock_27_selecting_and_deleting_swipes_and_messages_restores_snapshots():
    chat = crew()
    chat.receive('[clock: name="Alarm" size="4"][sheet: who="Cutter" op="damage" pool="stress" amount="2"]')
    chat.receive('[clock: name="Alarm" tick="2"]')
    chat.regenerate('[clock: name="Alarm" tick="4"][sheet: who="Cutter" op="restore" pool="stress" amount="1"]')
    assert chat.state.clocks[-1] == Clock("Alarm", 4, 4)
    chat.select_swipe(0)
    assert chat.state.clocks[-1] == Clock("Alarm", 4, 2) and chat.state.live_of("Cutter").pools["stress"] == 1
    chat.delete_swipe(0)
    assert chat.state.clocks[-1] == Clock("Alarm", 4, 4) and chat.messages[-1].selected == 0
    chat.delete_message(len(chat.messages) - 1)
    assert chat.state.clocks[-1] == Clock("Alarm", 4, 0) and chat.state.live_of("Cutter").pools["stress"] == 1
    chat.delete_message(0)
    assert chat.state.clocks == sample_state("blades-like").clocks  # back to the start


def test_party_25_regenerate_restores_party_values():
    chat = crew()
    chat.receive('[sheet: sheet="party" op="advance" field="heat" by="3"]')
    assert chat.state.party_sheet["fields"]["heat"] == 5 and chat.state.party_revision == 4
    chat.regenerate("Nothing happens.")
    assert chat.state.party_sheet["fields"]["heat"] == 2
    assert chat.state.party_revision == 5  # the revision only ever grows: open drafts become stale


def test_party_36_37_chat_saves_with_revisions():
    chat = crew()
    opened = chat.state.party_revision
    fields = dict(chat.state.party_sheet["fields"])
    chat.receive('[sheet: sheet="party" op="advance" field="tier" by="1"]')  # the story moves on
    with pytest.raises(PartyConflict) as e:
        chat.save_party({"fields": {**fields, "heat": 0}}, opened)
    assert e.value.sheet["fields"]["tier"] == 2  # the newer sheet comes back; the draft is the caller's
    state = chat.save_party({"fields": {**e.value.sheet["fields"], "heat": 0}}, e.value.revision)
    assert state.party_sheet["fields"] == {**e.value.sheet["fields"], "heat": 0}
    assert chat.state.party_revision == e.value.revision + 1


def test_chat_json_round_trip_and_from_history():
    chat = crew()
    chat.user("Go.")
    chat.receive('[clock: name="Alarm" size="6"][sheet: sheet="party" op="spend" pool="coin" amount="1"]')
    chat.regenerate('[clock: name="Alarm" size="4"]')
    doc = json.loads(json.dumps(chat.to_json()))
    assert set(doc["metadata"]) == {"gameCharacterCards", "gamePartySheet", "gamePartySheetRevision"}
    assert set(doc["messages"][1]["swipes"][0]["snapshot"]) >= {"rulesetLive", "rulesetClocks"}
    again = Chat.from_json(BLADES, doc)
    assert again.state == chat.state and again.history() == chat.history()
    again.select_swipe(0)
    assert again.state.clocks[-1] == Clock("Alarm", 6, 0)
    rebuilt = Chat.from_history(BLADES, sample_state("blades-like"), chat.history())
    assert rebuilt.state == chat.state and rebuilt.history() == chat.history()  # exact by DEC-5


REPLY = ('The bells ring.\n[clock: name="Alarm raised" size="6"]\n  Lurk runs [clock: name="Alarm raised"\n tick="1"]'
         ' on.\n\n[sheet: who="Lurk" op="spend" pool="stress" amount="1"]\n[OOC: note] [clock: name="x tick=1]\nEnd'
         ' [sheet: who=')
pieces = st.one_of(st.text(max_size=12), st.sampled_from([
    '[clock: name="A" size="4"]', "[", "]", "\n", "  ", "[sheet:", '[clock: name="A"\n tick="1"]', "[OOC: x]",
    '[sheet: who="Cutter" op="spend" pool="stress"]', "[cl", "ock:", '"', "\u201c"]))


def stream(text, cuts):
    f = StreamFilter(BLADES, sample_state("blades-like"))
    shown, pos = [], 0
    for c in [*cuts, len(text)]:
        shown.append(f.feed(text[pos:c]))
        pos = c
    rest, applied = f.finish()
    return "".join(shown) + rest, shown, applied


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pieces, max_size=25).map("".join), st.data())
def test_any_split_into_chunks_gives_exactly_the_narration(text, data):
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=12)))
    out, shown, _ = stream(text, cuts)
    final = narration(text)
    assert out == final
    so_far = ""
    for chunk in shown:  # what is shown is final at every moment: never a partial tag taken back
        so_far += chunk
        assert final.startswith(so_far)


def test_no_partial_tag_is_ever_shown_and_prose_is_not_held():
    shown = []
    f = StreamFilter(BLADES, sample_state("blades-like"))
    for ch in REPLY:
        shown.append(f.feed(ch))
    rest, applied = f.finish()
    seen = "".join(shown)
    assert "[clock" not in seen and "[sheet" not in seen and "tick=" not in seen
    assert seen + rest == narration(REPLY)
    assert "".join(shown[:REPLY.index("\n") + 1]).startswith("The bells ring")  # shown before the line ends
    assert applied.text.startswith('The bells ring.\n[clock: name="Alarm raised" size="6" result="ok"')


def test_snapshots_restore_wound_marks_and_pools():
    chat = Chat(GRAVE, sample_state("gravewatch"))
    chat.receive('[sheet: who="Bram" op="damage" track="harm" kind="tear" amount="2"]'
                 '[sheet: who="Bram" op="spend" pool="resolve" amount="2"]')
    first = chat.state
    chat.receive('[sheet: who="Bram" op="damage" track="harm" kind="knock" amount="2"]')
    assert chat.state.live_of("Bram").marks["harm"].marks == ("tear", "tear", "knock", "knock")
    chat.regenerate('[sheet: who="Bram" op="damage" track="harm" amount="-1"]')
    assert chat.state.live_of("Bram").marks["harm"].marks == ("tear",)
    chat.select_swipe(0)
    assert chat.state.live_of("Bram").marks["harm"].marks == ("tear", "tear", "knock", "knock")
    chat.delete_message(len(chat.messages) - 1)
    assert chat.state.live_of("Bram") == first.live_of("Bram")
    assert chat.state.live_of("Bram").pools == {"resolve": 3}


# Adversarial splits (issue 17): the filter resumes where it stopped, so a chunk boundary anywhere (one
# character at a time, at every bracket and line break, inside an opener or its blanks) must show the
# same text, and at every step at least what the old whole-text rule showed (nothing more held back;
# more is shown when a cut-off tag's finished lines already fail to parse, SC-4).
hostile = st.one_of(pieces, st.sampled_from([
    "[" + " " * 20, "[ \t", "[ sheet ", "[CLock", "sheet:", "\r", "\u2028", "\x85", " \t", "]]", "[[",
    '[sheet: who="Mira" op=\nShe runs.\n;]', '[clock: name="A"\n', '[clock: name="A\nB" tick="1"]', "x",
    '[sheet: who="Cutter"\n op="spend"\n pool="stress"\n]', '[clock: raw="x" result="refused" reason="malformed"]']))


def held_back_rule(text):
    """The old quadratic rule, kept as the reference: the narration of the longest safe prefix."""
    hold = len(text)
    for m in VOCABULARY.candidate.finditer(text):
        if m.end() == len(text) and not text.endswith("]"):
            hold = m.start()  # an unfinished candidate
            break
    else:
        partial = VOCABULARY.partial.search(text)
        if partial:
            hold = partial.start()
    line_start = text.rfind("\n", 0, hold) + 1
    if narration(text[line_start:hold]).strip():
        return narration(text[:hold])
    return narration(text[:max(0, line_start - 1)])  # hold the line, and the line break before it


def splits(text, how, data):
    if how == "chars":
        return list(range(1, len(text)))
    if how == "brackets":  # before and after every bracket, quote and line break
        return sorted({c for i, ch in enumerate(text) if ch in '[]"\n :' for c in (i, i + 1) if 0 < c < len(text)})
    return sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=40)))


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile, max_size=20).map("".join), st.sampled_from(["chars", "brackets", "random"]), st.data())
def test_adversarial_splits_show_the_narration_and_hold_back_no_more_than_before(text, how, data):
    cuts = splits(text, how, data)
    out, shown, _ = stream(text, cuts)
    assert out == narration(text)
    so_far, final = "", narration(text)
    for c, chunk in zip([*cuts, len(text)], shown, strict=True):
        so_far += chunk
        assert so_far.startswith(held_back_rule(text[:c])), text[:c]  # never more held back than before
        assert final.startswith(so_far)  # and never anything taken back


def test_a_long_run_of_blanks_after_a_bracket_is_held_until_it_is_decided():
    text = "A [" + " " * 40 + 'clock: name="A" tick="1"] B'
    out, _, _ = stream(text, list(range(1, len(text))))
    assert out == narration(text) == "A  B"  # the old filter showed the blanks, then could not take them back


def test_stream_and_text_property():
    f = StreamFilter(BLADES, sample_state("blades-like"))
    assert f.feed("") == "" and f.text == ""
    f.feed("Hello ")
    f.feed("[sheet: who=")
    assert f.text == "Hello [sheet: who="
