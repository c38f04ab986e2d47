"""Issue 27, item 3: an edit is part of the game. The `[edit:]` receipt the engine writes at the start of the next
reply, its MAC (a forged or copied receipt is refused), the chat's pending edits (regenerate and swipes keep
them, going back leaves them out), and a replay of the chat alone giving the same state (decisions ED-6..ED-10).
"""

from __future__ import annotations

import io
import json
import re

from cmdkit import sample_state
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, examples, load_sample, sample_dict
from tagengine import Chat, GameState, Ruleset, apply_reply, narration
from tagengine._internal.batch import replay_line
from tagengine._internal.cli import run
from tagengine._internal.commands.edit import (
    PlayerEdit,
    decode_changes,
    edit_mac,
    edit_receipts,
    encode_changes,
    opening_of,
)
from tagengine._internal.commands.reasons import COMMAND_LIMIT
from tagengine._internal.commands.sheet_edits import edit_party, edit_sheet
from tagengine._internal.prompt import reminder
from tagengine._internal.sheet.edit_paths import Change, change_of
from tagengine._internal.sheet.form import edit_form

GRAVE, BLADES, FIFTH = load_sample("gravewatch"), load_sample("blades-like"), load_sample("fifth-like")
# filter_too_much: a drawn edit that changes nothing writes no receipt and is assumed away; with the dev profile's
# few examples that can be most of a short run
SETTINGS = settings(max_examples=examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
MAC = re.compile(r' mac="([0-9a-f]+)"')


def receipt(rs, state, who, changes):
    edited = edit_party(rs, state, changes) if who is None else edit_sheet(rs, state, who, changes)
    assert edited.ok, edited.problems
    made = edit_receipts(rs, state, [PlayerEdit(who, edited.changes)])
    assert made.state.to_json() == edited.state.to_json()
    return made


def test_a_receipt_makes_the_edit_and_reads_back_as_written():
    """DEC-5: the receipt applies as written, to the same text and state, as often as it is applied."""
    s = sample_state("gravewatch")
    made = receipt(GRAVE, s, "Mira", {"fields.oath": 'Hold "the" [gate] {{char}} & 100%', "marks.strain.3": "strain"})
    assert made.text.startswith('[edit: by="player" who="Mira" changes="fields.oath=Hold %22the%22 %5Bgate%5D ')
    out = apply_reply(GRAVE, s, made.text + "The gate holds.")
    assert out.text == made.text + "The gate holds." and out.state.to_json() == made.state.to_json()
    assert [(r.name, r.result, r.now) for r in out.receipts] == [("edit", "ok", "2 changes")]
    assert out.state.cards["Mira"]["fields"]["oath"] == 'Hold "the" [gate] {{char}} & 100%'
    assert narration(out.text) == "The gate holds."  # the player reads the story, not the receipt


def test_every_value_survives_the_receipt():
    values = ["", " padded ", "a\nb\r\nc\ttab", "100% & more = less", "[x] {y} \"q\" \\ back", "\u2028\u202e",
              "日本語の誓い", "emoji \U0001f600"]
    for v in values:
        changes = [Change("set", "fields.notes", v), change_of("add:lists.gear"), change_of("delete:lists.gear.0")]
        assert decode_changes(encode_changes(changes)) == [Change("set", "fields.notes", v),
                                                           Change("add", "lists.gear", None),
                                                           Change("delete", "lists.gear.0", None)]
    assert "日本語の誓い" in encode_changes([Change("set", "fields.oath", "日本語の誓い")])  # readable where it can be
    assert "%E2%80%AE" in encode_changes([Change("set", "fields.oath", "\u202e")])  # a bidi override is not


def test_ids_with_separators_and_dots_survive_the_receipt():
    """ED-1: an id may hold a dot, `=` or `&`; the longest id that fits is the one named."""
    rs = Ruleset.from_dict({"sheet": {"fields": [{"id": "a=b&c", "label": "Odd", "type": "text"},
                                                 {"id": "x", "label": "X", "type": "number"},
                                                 {"id": "x.y", "label": "XY", "type": "number"}]}})
    s = GameState.new(rs, ["Ana"])
    made = receipt(rs, s, "Ana", {"fields.a=b&c": "p=q&r", "fields.x.y": 2, "fields.x": 1})
    out = apply_reply(rs, s, made.text)
    assert out.receipts[0].result == "ok" and out.state.cards["Ana"]["fields"] == {"a=b&c": "p=q&r", "x": 1, "x.y": 2}


def test_an_imitated_receipt_is_refused_unverified():
    """The model sees receipts in the history and may write one: without the key it cannot make its MAC."""
    s = sample_state("gravewatch")
    forged = '[edit: by="player" who="Mira" changes="pools.resolve=5" mac="0123456789abcdef"]'
    out = apply_reply(GRAVE, s, forged)
    assert [(r.result, r.reason) for r in out.receipts] == [("refused", "unverified-edit")]
    assert out.state is s
    again = apply_reply(GRAVE, s, out.text)  # the refusal replays as written (DEC-5)
    assert again.text == out.text and again.state is s


def test_an_altered_or_copied_receipt_is_refused():
    s = sample_state("gravewatch")
    made = receipt(GRAVE, s, "Mira", {"pools.resolve": 5})
    for altered in (made.text.replace("resolve=5", "resolve=4"), made.text.replace('who="Mira"', 'who="Bram"'),
                    made.text.replace('by="player"', 'by="player" ')):  # white space between attributes is nothing
        out = apply_reply(GRAVE, s, altered)
        assert out.receipts[0].reason == ("unverified-edit" if "Bram" in altered or "=4" in altered else None)
    first = apply_reply(GRAVE, s, made.text + "Later.")
    copied = apply_reply(GRAVE, first.state, "Mira rests. " + made.text)  # the same receipt, one reply later
    assert copied.receipts[0].reason == "unverified-edit" and copied.state is first.state
    twice = apply_reply(GRAVE, s, made.text + made.text)  # copied after itself: the state it names is gone
    assert [r.result for r in twice.receipts] == ["ok", "refused"]


def test_the_mac_is_keyed_by_the_dice_seed_and_bound_to_the_state():
    s = sample_state("gravewatch")
    attrs = (("by", "player"), ("who", "Mira"), ("changes", "pools.resolve=5"))
    other_seed = s.with_dice(type(s.dice)("another-seed", 0))
    assert edit_mac(s, attrs) != edit_mac(other_seed, attrs)  # another game
    moved = apply_reply(GRAVE, s, '[sheet: who="Mira" op="spend" pool="resolve" amount="1"]').state
    assert edit_mac(s, attrs) != edit_mac(moved, attrs)  # another point of this game
    revised = s.with_party_sheet(s.party_sheet, s.party_revision + 5)
    assert edit_mac(s, attrs) == edit_mac(revised, attrs)  # the party's revision is chat metadata (ED-8)
    assert "seed" not in reminder(GRAVE, s) and s.dice.seed not in reminder(GRAVE, s)  # the model never sees it


def test_a_receipt_whose_changes_no_longer_fit_is_refused_invalid():
    """ED-9: the ruleset changed under a chat (a scar's name now holds 20 characters): the MAC holds, the edit no
    longer fits."""
    s = sample_state("gravewatch")
    made = receipt(GRAVE, s, "Mira", {"lists.scars.0.name": "Bitten by the gate hound"})
    data = sample_dict("gravewatch")
    data["sheet"]["lists"][0]["columns"][0]["maxLength"] = 20
    short = Ruleset.from_dict(data)
    out = apply_reply(short, GameState.loads(short, s.dumps()), made.text)
    assert [(r.result, r.reason) for r in out.receipts] == [("refused", "invalid-edit")]


def test_edit_receipts_are_not_commands_of_the_reply():
    """DEC-6 counts the model's commands; a reply opening with many edit receipts keeps all 40 of them."""
    s = sample_state("gravewatch")
    text, state = "", s
    for n in range(COMMAND_LIMIT + 5):
        made = receipt(GRAVE, state, "Mira", {"pools.resolve": n % 6})
        text, state = text + made.text, made.state
    spends = '[sheet: who="Bram" op="spend" pool="resolve" amount="0"]' * COMMAND_LIMIT
    out = apply_reply(GRAVE, s, text + spends)
    assert {r.result for r in out.receipts} == {"ok"} and len(out.receipts) == 2 * COMMAND_LIMIT + 5


def test_the_edit_kind_is_not_taught():
    s = sample_state("gravewatch")
    assert "[edit:" not in reminder(GRAVE, s)


def test_opening_of_a_reply_is_its_leading_edit_receipts():
    s = sample_state("gravewatch")
    made = receipt(GRAVE, s, "Mira", {"pools.resolve": 2})
    assert opening_of(made.text + "Story [edit: x] more") == made.text
    assert opening_of("Story first.\n" + made.text) == ""
    assert opening_of('[sheet: who="Mira" op="spend" pool="resolve"]' + made.text) == ""


def test_edit_receipts_drop_an_edit_that_no_longer_applies():
    s = sample_state("gravewatch")
    kept = PlayerEdit("Mira", (Change("set", "pools.resolve", 2),))
    stale = PlayerEdit("Mira", (Change("set", "lists.scars.5.name", "x"),))
    made = edit_receipts(GRAVE, s, [kept, stale])
    assert made.dropped == (stale,) and made.text.count("[edit:") == 1


# -- the chat holds its edits ----------------------------------------------------------------------------
def mira_chat():
    chat = Chat(GRAVE, sample_state("gravewatch"))
    chat.user("We reach the gate.")
    chat.receive("The gate is shut.")
    return chat


def test_an_edit_applies_at_once_and_the_next_reply_opens_with_it():
    chat = mira_chat()
    e = chat.edit("mira", {"fields.oath": "Open the gate", "marks.strain.1": "strain"})
    assert e.ok and chat.state.cards["Mira"]["fields"]["oath"] == "Open the gate"  # the next prompt sees it
    assert "Open the gate" not in json.dumps(chat.history())  # not in the chat yet
    chat.user("I push.")
    out = chat.receive("It opens.")
    assert out.text.startswith('[edit: by="player" who="Mira" changes="fields.oath=Open the gate&marks.strain.1=')
    assert out.text.endswith("\nIt opens.") and chat.edits == ()
    rebuilt = Chat.from_history(GRAVE, sample_state("gravewatch"), chat.history())
    assert rebuilt.state.to_json() == chat.state.to_json()  # the chat alone gives the state


def test_regenerate_and_swipes_of_the_next_reply_keep_the_edit():
    chat = mira_chat()
    chat.edit("Mira", {"pools.resolve": 0})
    chat.receive("First take.")
    chat.regenerate("Second take.")
    assert chat.history()[-1]["content"].startswith("[edit:") and chat.state.live_of("Mira").pools["resolve"] == 0
    chat.select_swipe(0)
    assert chat.state.live_of("Mira").pools["resolve"] == 0


def test_going_back_past_the_reply_an_edit_was_made_after_leaves_it_out():
    chat = mira_chat()
    chat.edit("Mira", {"pools.resolve": 0})
    chat.delete_message(-1)  # the reply the edit was made after
    assert chat.state.live_of("Mira").pools["resolve"] == 1  # as it was: the edit is gone with its point
    chat.receive("A new reply.")
    assert not chat.history()[-1]["content"].startswith("[edit:")


def test_pending_edits_survive_a_saved_chat():
    chat = mira_chat()
    chat.edit("Mira", {"fields.oath": "Kept"})
    doc = json.loads(json.dumps(chat.to_json()))
    again = Chat.from_json(GRAVE, doc)
    assert again.state.to_json() == chat.state.to_json() and again.edits == chat.edits
    assert again.receive("On.").text == chat.receive("On.").text


def test_party_36_party_37_a_party_save_in_a_chat_is_a_receipt_too():
    chat = Chat(BLADES, sample_state("blades-like"))
    opened = chat.state.party_revision
    chat.save_party({"fields": {**chat.state.party_sheet["fields"], "heat": 7},
                     "lists": chat.state.party_sheet["lists"]}, opened)
    assert chat.state.party_revision == opened + 1
    out = chat.receive("The crew lies low.")
    assert out.text.startswith('[edit: by="player" sheet="party" changes="fields.heat=7"')
    rebuilt = Chat.from_history(BLADES, sample_state("blades-like"), chat.history())
    assert rebuilt.state.to_json() == chat.state.to_json() and rebuilt.state.party_sheet["fields"]["heat"] == 7
    stale = chat.edit_party({"fields.heat": 1}, opened_at=opened)
    assert [p.code for p in stale.problems] == ["stale-revision"]


def test_replay_of_the_transcript_gives_the_chats_state():
    """`tagengine replay` (a server that lost its data folder replays the same way): the receipts make the edits."""
    start = sample_state("fifth-like")
    chat = Chat(FIFTH, start)
    chat.edit("Vess", [change_of("roll:lists.features.0.power"), change_of("add:lists.features"),
                       Change("set", "lists.features.2.name", "Rage"), Change("set", "conditions.prone", "on")])
    chat.user("Go on.")
    chat.receive('Vess winces. [sheet: who="Vess" op="spend" pool="hp" amount="3"]')
    line = json.dumps({"id": "c1", "start": start.to_json(), "messages": chat.history()})
    out = replay_line(FIFTH, line, 1)
    assert out["state"] == chat.state.to_json() and out["receipts"] == {"ok": 2}
    path = SAMPLES.parent / "tests" / "fixtures"
    assert path.exists()
    rs_path = str(SAMPLES / "rulesets" / "fifth-like.json")
    buf_in = io.StringIO(line + "\n")  # the command line too
    out_text = io.StringIO()
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = f"{d}/in.jsonl"
        with open(src, "w") as f:
            f.write(buf_in.getvalue())
        assert run(["replay", rs_path, src, "-o", f"{d}/out.jsonl"], out_text, io.StringIO()) == 0
        with open(f"{d}/out.jsonl") as f:
            assert json.loads(f.readline())["state"] == chat.state.to_json()


# -- properties ---------------------------------------------------------------------------------------
GAMES = {n: (load_sample(n), sample_state(n)) for n in ("gravewatch", "fifth-like", "blades-like", "ember-roads")}
ROW_OPS = ("add", "delete", "move", "roll")


def form_inputs(rs, state, who):
    """Every input of the sheet's form and its game-sheet controls: what a player can change."""
    form = edit_form(rs, state, who)
    found = [i for sec in form.sections for i in sec.inputs]
    found += [c for sec in form.sections for t in sec.tables for r in t.rows for c in r.cells]
    found += [i for group in (form.play.pools, form.play.tracks, form.play.states, form.play.conditions,
                              form.play.notes, form.play.uses) for i in group]
    boxes = [b for w in form.play.wounds for b in w.boxes]
    tables = [t for sec in form.sections for t in sec.tables]
    return [i for i in found if not i.read_only], boxes, tables, [k[0] for w in form.play.wounds for k in w.kinds]


@st.composite
def a_change(draw, rs, state, who):
    """A change to something the sheet has, with a value that is often allowed and sometimes not."""
    found, boxes, tables, kinds = form_inputs(rs, state, who)
    pick = draw(st.integers(0, 9))
    if pick == 0 and tables:
        t = draw(st.sampled_from(tables))
        op = draw(st.sampled_from(ROW_OPS))
        row = draw(st.integers(0, len(t.rows)))
        rolled = [c.id for c in t.columns if c.roll] or ["x"]
        path = {"add": t.path, "roll": f"{t.path}.{row}.{draw(st.sampled_from(rolled))}"}.get(op, f"{t.path}.{row}")
        return Change(op, path, str(draw(st.integers(0, 2))) if op == "move" else None)
    if pick == 1 and boxes:
        return Change("set", draw(st.sampled_from(boxes)).path, draw(st.sampled_from([*kinds, "", "nope"])))
    i = draw(st.sampled_from(found))
    lo, hi = i.min if i.min is not None else -2, i.max if i.max is not None else 12
    if i.choices:
        good = st.sampled_from([v for v, _ in i.choices])
    elif i.type in ("boolean", "condition"):
        good = st.booleans()
    elif i.type in ("text", "longtext", "note", "dice"):
        good = st.one_of(st.text(max_size=12), st.sampled_from(["<script>", "1d8", "a\nb", "[x]", "{{u}}", "%&="]))
    else:
        good = st.integers(lo, hi)
    bad = st.one_of(st.integers(hi + 1, hi + 3), st.integers(lo - 3, lo - 1), st.text(max_size=4), st.just("x" * 5000))
    return Change("set", i.path, draw(st.one_of(good, good, good, good, good, bad)))


def draw_edit(data, rs, state, most=4):
    names = [*state.characters, *([None] if rs.party is not None else [])]
    who = data.draw(st.sampled_from(names))
    return who, data.draw(st.lists(a_change(rs, state, who), min_size=1, max_size=most))


@SETTINGS
@given(game=st.sampled_from(sorted(GAMES)), data=st.data())
def test_an_edit_never_breaks_the_states_invariants(game, data):
    """Whatever is typed: an edit that goes through stores only what the ruleset allows (the state reads back
    with no warning, equal), and one that does not changes nothing."""
    rs, state = GAMES[game]
    for _ in range(data.draw(st.integers(1, 4))):
        who, changes = draw_edit(data, rs, state)
        edited = edit_party(rs, state, changes) if who is None else edit_sheet(rs, state, who, changes)
        event(f"edit {'made' if edited.ok else 'refused'}")
        if not edited.ok:
            assert edited.state is state and all(p.code and p.message for p in edited.problems)
            continue
        again = GameState.loads(rs, edited.state.dumps())
        assert again.warnings == () and again.to_json() == edited.state.to_json()
        state = edited.state


REPLIES = st.sampled_from([
    "On.", '[sheet: who="Mira" op="spend" pool="resolve" amount="1"]', '[sheet: who="Vess" op="damage" pool="hp" '
    'amount="2"]', '[sheet: op="damage" track="harm" kind="tear" who="Mira"]', '[check: who="Mira" skill="brawl"]',
    '[sheet: sheet="party" op="advance" field="heat" by="1"]'])


@SETTINGS
@given(game=st.sampled_from(sorted(GAMES)), data=st.data())
def test_the_chat_alone_replays_to_the_same_state(game, data):
    """Edits between replies, then the history alone (Chat.from_history, `tagengine replay`): the same state."""
    rs, start = GAMES[game]
    chat = Chat(rs, start)
    for _ in range(data.draw(st.integers(1, 4))):
        for _ in range(data.draw(st.integers(0, 2))):
            who, changes = draw_edit(data, rs, chat.state)
            edited = chat.edit_party(changes) if who is None else chat.edit(who, changes)
            event(f"edit {'made' if edited.ok else 'refused'}")
        chat.receive(data.draw(REPLIES))
        if data.draw(st.booleans()):
            chat.regenerate(data.draw(REPLIES))
    want = without_revision(chat.state.to_json())  # the chat moves the revision on by itself (M-3)
    rebuilt = Chat.from_history(rs, start, chat.history())
    assert without_revision(rebuilt.state.to_json()) == want
    out = replay_line(rs, json.dumps({"id": 1, "start": start.to_json(), "messages": chat.history()}), 1)
    assert without_revision(out["state"]) == want


def without_revision(doc):
    return {k: v for k, v in doc.items() if k != "gamePartySheetRevision"}


@SETTINGS
@given(game=st.sampled_from(sorted(GAMES)), data=st.data())
def test_a_forged_or_copied_receipt_is_refused(game, data):
    """Any receipt changed in one character of its attributes, or applied anywhere but where it was made."""
    rs, state = GAMES[game]
    who, changes = draw_edit(data, rs, state, most=2)
    edited = edit_party(rs, state, changes) if who is None else edit_sheet(rs, state, who, changes)
    assume(edited.ok and edited.changes)
    text = edit_receipts(rs, state, [PlayerEdit(who, edited.changes)]).text
    assume(text)  # an edit that changes nothing writes no receipt
    head = text.index(" mac=")
    i = data.draw(st.integers(len("[edit: "), head - 1))
    assume(text[i] not in ' ="')  # a separator: the tag would not parse as the same attributes
    forged = text[:i] + ("x" if text[i] != "x" else "y") + text[i + 1:]
    out = apply_reply(rs, state, forged)
    assert out.receipts[0].result == "refused" and out.state is state
    mac = MAC.search(text).group(1)
    guessed = text.replace(mac, data.draw(st.text("0123456789abcdef", min_size=16, max_size=16)))
    if guessed != text:
        assert apply_reply(rs, state, guessed).receipts[0].reason == "unverified-edit"
    later = apply_reply(rs, state, text).state
    assert apply_reply(rs, later, text).receipts[0].result == "refused"
