"""Issue 17, "Nothing lost, nothing hangs": bounded work, ASCII numbers, text that can be saved, strict
`GameState.new` and `Chat.from_json` (docs/decisions.md H-1..H-5)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from cmdkit import run, sample_state, with_live
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, examples, load_sample
from tagengine._internal.chat import Chat
from tagengine._internal.commands import apply_reply
from tagengine._internal.commands.numbers import parse_int
from tagengine._internal.errors import StateError
from tagengine._internal.sheet import marking
from tagengine._internal.state import COUNT_MAX, GameState, WoundMarks
from tagengine._internal.text import writable

GRAVE = load_sample("gravewatch")
EMBER = load_sample("ember-roads")
BLADES = load_sample("blades-like")
FIFTH = load_sample("fifth-like")
SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
PACKAGE = str(Path(marking.__file__).resolve().parent.parent)


# -- a work budget instead of a clock -------------------------------------------------------------------
class TooMuchWork(BaseException):
    """A BaseException, so `apply_reply`'s guard (which catches Exception) lets it through."""


@contextmanager
def budget(lines: int):
    """Fail as soon as tagengine's own code has run more than `lines` lines: a deterministic stand-in for
    a time limit. Work that grows with a tag's number blows any fixed budget at once."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count > lines:
                raise TooMuchWork(f"more than {lines} lines run")
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(PACKAGE) else None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(old)


def bram(marks=(), overflow=0):
    s = sample_state("gravewatch")  # Bram: harm with 4 levels (knock < tear), no scars
    return with_live(GRAVE, s, bram={"marks": {"harm": {"marks": list(marks), "overflow": overflow}}})


def dmg(kind, amount, who="Bram"):
    k = f' kind="{kind}"' if kind else ""
    return f'[sheet: who="{who}" op="damage" track="harm"{k} amount="{amount}"]'


# -- 1. bounded work --------------------------------------------------------------------------------
def test_h1_damage_of_nine_digits_costs_what_a_small_one_does():
    """[WOUND-19] [WOUND-20] [WOUND-21]: 999999999 marks fill the track, raise every mark to the top and
    leave the rest as overflow, without one step per point."""
    state = bram()
    with budget(20_000):
        a, res = run(GRAVE, state, dmg("knock", 999_999_999))
    assert res == [("ok", "4/4 Down +999999991 overflow")]
    assert a.state.live_of("Bram").marks["harm"] == WoundMarks(("tear",) * 4, 999_999_991)


def test_h1_heal_of_nine_digits_is_bounded():
    """[WOUND-24]: a heal clears overflow arithmetically, then the lightest marks."""
    state = bram(["tear", "knock"], overflow=COUNT_MAX - 1)
    with budget(20_000):
        a, res = run(GRAVE, state, dmg(None, -999_999_999))
    assert res == [("ok", "1/4 Scuffed")]
    assert a.state.live_of("Bram").marks["harm"] == WoundMarks(("tear",), 0)


def test_h1_overflow_saturates_at_count_max():
    """H-1: overflow stops at COUNT_MAX, the largest number a tag can spell, however often it is hit."""
    state = bram(["tear"] * 4, overflow=COUNT_MAX - 5)
    with budget(20_000):
        a, res = run(GRAVE, state, dmg("tear", 999_999_999) + dmg("tear", 1))
    assert [r for r, _ in res] == ["ok", "ok"]
    assert a.state.live_of("Bram").marks["harm"].overflow == COUNT_MAX


def test_h1_rest_heal_by_huge_amount_is_bounded():
    model = marking.TrackShape(4, {"knock": 0, "tear": 1})
    with budget(2_000):
        assert marking.heal(model, ("tear", "knock"), 10**30, 10**40) == ((), 0)
        assert marking.reduce_to(model, ("tear", "knock"), 10**30, 1) == (("tear",), 0)


# The wound algebra as it was: one step per point. The closed forms must agree with it everywhere.
def ref_insert(t, marks, kind):
    sev = t.severity[kind]
    at = next((i for i, m in enumerate(marks) if m is not None and t.severity[m] < sev), len(marks))
    marks.insert(at, kind)


def ref_mark(t, marks, overflow, kind, amount, box=None):
    if t.indexed or t.refuse_when_full:
        free = t.length - sum(1 for m in marks if m is not None)
        if amount > free:
            raise marking.TrackFull
    if t.indexed:
        slots = [*marks, *([None] * (t.length - len(marks)))]
        start = (box or 1) - 1
        for _ in range(amount):
            i = next((j for j in range(start, t.length) if slots[j] is None), None)
            if i is None:
                raise marking.TrackFull
            slots[i] = kind
        while slots and slots[-1] is None:
            slots.pop()
        return tuple(slots), overflow
    out = [m for m in marks if m is not None]
    for _ in range(amount):
        if len(out) < t.length:
            ref_insert(t, out, kind)
            continue
        scale = t.scale
        lightest = min(range(len(out)), key=lambda i: (t.severity[out[i]], -i)) if out else None
        if lightest is None or scale.index(out[lightest]) == len(scale) - 1:
            overflow += 1
            continue
        raised = scale[scale.index(out[lightest]) + 1]
        del out[lightest]
        ref_insert(t, out, raised)
    return tuple(out), overflow


def ref_heal(t, marks, overflow, count, kind=None):
    if kind is not None and kind not in t.severity:
        kind = None
    slots = list(marks)
    for _ in range(count):
        if kind is None and overflow > 0:
            overflow -= 1
            continue
        candidates = [i for i, m in enumerate(slots) if m is not None and (kind is None or m == kind)]
        if not candidates:
            break
        lightest = min(t.severity[slots[i]] for i in candidates)
        i = max(i for i in candidates if t.severity[slots[i]] == lightest)
        if t.indexed:
            slots[i] = None
        else:
            del slots[i]
    while slots and slots[-1] is None:
        slots.pop()
    return tuple(slots), overflow


@st.composite
def tracks_and_marks(draw):
    """A track as the ruleset allows it (distinct severities, WOUND-7) and marks as `fit_marks` leaves them."""
    kinds = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True))
    sevs = draw(st.lists(st.integers(-50, 50), min_size=len(kinds), max_size=len(kinds), unique=True))
    indexed = draw(st.booleans())
    t = marking.TrackShape(draw(st.integers(0, 9)), dict(zip(kinds, sevs, strict=True)), indexed,
                      indexed or draw(st.booleans()))
    raw = draw(st.lists(st.one_of(st.none(), st.sampled_from(kinds)) if indexed else st.sampled_from(kinds),
                        max_size=12))
    marks, overflow = marking.fit_marks(t, raw, draw(st.integers(0, 6)))
    return t, marks, overflow, kinds


def outcome(fn, *args):
    try:
        return fn(*args)
    except marking.TrackFull:
        return "full"


@SETTINGS
@given(tracks_and_marks(), st.data())
def test_h1_closed_form_mark_equals_one_at_a_time(tm, data):
    """[WOUND-15..21] [WOUND-48..53]: the closed form gives what one mark at a time gives."""
    t, marks, overflow, kinds = tm
    kind = data.draw(st.sampled_from(kinds))
    amount = data.draw(st.integers(-3, 60))
    box = data.draw(st.one_of(st.none(), st.integers(1, max(1, t.length))))
    assert outcome(marking.mark, t, marks, overflow, kind, amount, box) == \
        outcome(ref_mark, t, marks, overflow, kind, amount, box)


@SETTINGS
@given(tracks_and_marks(), st.data())
def test_h1_closed_form_heal_equals_one_at_a_time(tm, data):
    """[WOUND-24..26] [WOUND-50]: the closed form clears what one point at a time clears."""
    t, marks, overflow, kinds = tm
    kind = data.draw(st.one_of(st.none(), st.sampled_from([*kinds, "zzz"])))
    count = data.draw(st.integers(-3, 30))
    assert marking.heal(t, marks, overflow, count, kind) == ref_heal(t, marks, overflow, count, kind)


def test_h1_state_reader_caps_overflow_with_a_warning():
    """H-1: an overflow beyond COUNT_MAX loads as COUNT_MAX, with an out-of-range warning at its path."""
    s = bram(["knock"], overflow=10**15)
    assert s.live_of("Bram").marks["harm"] == WoundMarks(("knock",), COUNT_MAX)
    w = [(p.path, p.code, p.value) for p in s.warnings]
    assert ("rulesetLive.bram.marks.harm.overflow", "out-of-range", 10**15) in w


def test_h1_state_reader_caps_counts_without_a_fixed_max():
    """H-1: pools, temporary points, plain tracks with a computed max and row pools are capped too."""
    doc = json.loads((SAMPLES / "states" / "fifth-like.json").read_text())
    live = doc["rulesetLive"]["vess"]
    live["pools"]["hp"] = 10**15
    live["temp"]["hp"] = 10**12
    live["rows"]["features"] = [10**10, 1]
    s = GameState.loads(FIFTH, json.dumps(doc))
    v = s.live_of("Vess")
    assert v.pools["hp"] == COUNT_MAX and v.temp["hp"] == COUNT_MAX and v.rows["features"] == (COUNT_MAX, 1)
    w = {(p.path, p.code) for p in s.warnings}
    assert {("rulesetLive.vess.pools.hp", "out-of-range"), ("rulesetLive.vess.temp.hp", "out-of-range"),
            ("rulesetLive.vess.rows.features[0]", "out-of-range")} <= w
    doc["rulesetLive"]["vess"] = {"tracks": {"exhaustion": 10**15}}  # exhaustion has a fixed max: it wins
    s = GameState.loads(FIFTH, json.dumps(doc))
    assert s.live_of("Vess").tracks["exhaustion"] <= 10 and s.warnings


def test_h1_numbers_in_tags_stop_at_nine_digits():
    """G-6: at most nine digits, so COUNT_MAX is the largest number a tag can spell."""
    assert parse_int(str(COUNT_MAX)) == COUNT_MAX and parse_int(f"-{COUNT_MAX}") == -COUNT_MAX
    assert parse_int(str(COUNT_MAX + 1)) is None and parse_int("0000000001") is None


# -- 2. numbers are ASCII -------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["３", "٣", "۳", "२", "+３", "1٣", "𝟑"])
def test_h2_dec_9_only_ascii_digits(value):
    """[DEC-9]: `\\d` reads fullwidth and Arabic-Indic digits; a number in a tag is ASCII only."""
    assert parse_int(value) is None


def test_h2_dec_9_non_ascii_amount_is_invalid_amount():
    _, res = run(GRAVE, bram(), dmg("knock", "３"))
    assert res == [("refused", "invalid-amount")]


@pytest.mark.parametrize(("value", "number"), [(" 2 ", 2), ("\t-3", -3), ("+4 ", 4), ("2", 2), ("-0", 0)])
def test_h2_surrounding_white_space_is_trimmed(value, number):
    """H-2: white space around a number is trimmed, as around a name (DEC-8)."""
    assert parse_int(value) == number


@pytest.mark.parametrize("value", ["+ 2", "2 0", "2.0", "1e3", "", " ", "--1", "0x10", "2_000"])
def test_h2_nothing_else_is_a_number(value):
    assert parse_int(value) is None


# -- 3. what cannot be written is never accepted ---------------------------------------------------------
BAD = "A\udcfe"  # what a reply with the byte 0xFE decodes to under surrogateescape


def blades_state():
    return sample_state("blades-like")


@pytest.mark.parametrize(("rs", "state", "tag"), [
    (EMBER, lambda: sample_state("ember-roads"), f'[clock: name="{BAD}" size="4"]'),
    (EMBER, lambda: sample_state("ember-roads"), f'[sheet: who="Mira" op="text" text="heading" to="{BAD}"]'),
    (BLADES, blades_state, f'[sheet: sheet="party" op="advance" field="upgrades" to="{BAD}"]'),
    (GRAVE, lambda: sample_state("gravewatch"), '[sheet: who="Mi\ud800ra" op="spend" pool="resolve"]'),
    (GRAVE, lambda: sample_state("gravewatch"), '[sheet: who="Bram" op="damage" track="harm" kind="knock" '
                                                'amount="1" note="\udcff"]'),
])
def test_h3_tag_value_that_is_not_utf8_is_refused_bad_text(rs, state, tag):
    """H-3: one check in the dispatcher, before any handler reads a value."""
    before = state()
    a, res = run(rs, before, f"prose \udcfe kept {tag} more prose")
    assert res == [("refused", "bad-text")]
    assert a.state == before
    assert a.text.startswith("prose \udcfe kept ") and a.text.endswith(" more prose")  # prose keeps its bytes


def test_h3_cli_apply_refuses_and_the_state_saves(tmp_path: Path):
    """The issue's reproduction: a reply with the byte 0xFE in a clock name; saving used to raise."""
    import io

    from tagengine._internal.cli import run as cli

    reply = tmp_path / "reply.txt"
    reply.write_bytes(b'x \xff [clock: name="A\xfe" size="4"]\n')
    out, err = io.StringIO(), io.StringIO()
    code = cli(["apply", str(SAMPLES / "rulesets" / "ember-roads.json"), str(SAMPLES / "states" / "ember-roads.json"),
                str(reply), "--state-out", str(tmp_path / "next.json")], out, err)
    assert code == 0
    assert out.getvalue() == 'x \udcff [clock: name="A\udcfe" size="4" result="refused" reason="bad-text"]\n'
    assert json.loads((tmp_path / "next.json").read_text(encoding="utf-8"))["rulesetClocks"] == \
        json.loads((SAMPLES / "states" / "ember-roads.json").read_text())["rulesetClocks"]


TEMPLATES = [
    (EMBER, '[clock: name="{v}" size="4"]'),
    (EMBER, '[clock: name="{v}" tick="1"]'),
    (EMBER, '[sheet: who="Mira" op="text" text="heading" to="{v}"]'),
    (EMBER, '[sheet: who="{v}" op="condition" condition="soaked" to="on"]'),
    (BLADES, '[sheet: sheet="party" op="advance" field="upgrades" to="{v}"]'),
    (BLADES, '[clock: name="{v}" size="4"]'),
]
values = st.text(alphabet=st.sampled_from(["a", "B", " ", "é", "\udcfe", "\ud800", "\udfff", "\udc80", "😀", "x"]),
                 min_size=1, max_size=8)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(range(len(TEMPLATES))), values), min_size=1, max_size=6),
       st.sampled_from(["ember-roads", "blades-like"]))
def test_h3_every_state_from_such_replies_can_be_saved(picks, sample):
    """H-3: whatever the reply holds, the state it produces dumps and encodes to UTF-8."""
    rs = EMBER if sample == "ember-roads" else BLADES
    reply = " ".join(t.format(v=v) for i, v in picks for r, t in [TEMPLATES[i]] if r is rs)
    a = apply_reply(rs, sample_state(sample), reply or "nothing")
    a.state.dumps().encode("utf-8")
    for r in a.receipts:
        if r.result == "ok":
            assert all(v is None or writable(v) for _, v in r.attrs)  # what was applied was clean text


def state_doc(sample):
    return json.loads((SAMPLES / "states" / f"{sample}.json").read_text())


def test_h3_state_file_with_lone_surrogates_warns_and_saves():
    """H-3: a JSON `\\ud800` in a text the state keeps is dropped or read as the default, with a warning."""
    doc = state_doc("ember-roads")
    doc["rulesetLive"]["mira"] = {"text": {"heading": "North\ud800"}}
    doc["rulesetClocks"] = [{"name": "Storm\udcfe", "size": 4, "filled": 1}]
    doc["gameCharacterCards"]["Mira"]["fields"]["notes"] = "Left\udfff"
    text = json.dumps(doc)  # ensure_ascii: the file holds the \\ud800 escapes, as a hand edit would
    s = GameState.loads(EMBER, text)
    w = {(p.path, p.code) for p in s.warnings}
    assert {("rulesetLive.mira.text.heading", "bad-text"), ("rulesetClocks[0].name", "bad-text"),
            ("gameCharacterCards.Mira.fields.notes", "bad-text")} <= w
    s.dumps().encode("utf-8")
    assert s.clocks == () and "heading" not in s.live_of("Mira").text


def spoil(doc, picks):
    """`doc` with a lone surrogate appended to the strings (keys included) that `picks` selects."""
    count = 0

    def walk(x):
        nonlocal count
        if isinstance(x, str):
            count += 1
            return x + "\ud800" if count in picks else x
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {walk(k): walk(v) for k, v in x.items()}
        return x

    return walk(doc)


@SETTINGS
@given(st.sampled_from([("gravewatch", GRAVE), ("ember-roads", EMBER), ("blades-like", BLADES),
                        ("fifth-like", FIFTH)]), st.sets(st.integers(1, 200), min_size=1, max_size=4))
def test_h3_every_state_read_from_a_file_can_be_saved(sample, picks):
    """H-3: a state file with lone surrogates anywhere either fails with StateError or loads as a state that
    dumps and encodes to UTF-8."""
    name, rs = sample
    try:
        s = GameState.loads(rs, json.dumps(spoil(state_doc(name), picks)))
    except StateError:
        return
    s.dumps().encode("utf-8")


def test_h3_character_name_with_lone_surrogate_is_a_state_error():
    doc = state_doc("gravewatch")
    doc["gameCharacterCards"]["Mi\ud800ra"] = doc["gameCharacterCards"].pop("Mira")
    with pytest.raises(StateError) as e:
        GameState.loads(GRAVE, json.dumps(doc))
    assert [(p.code, p.value) for p in e.value.problems] == [("bad-text", "Mi\ud800ra")]
    assert "gameCharacterCards[" in e.value.problems[0].path
    with pytest.raises(StateError):
        GameState.new(GRAVE, ["Bad\udcfe"])


def test_h3_party_save_refuses_lone_surrogates():
    """save_party reads the draft with the state reader: a draft text that cannot be saved is not saved."""
    from tagengine._internal.commands.party_save import save_party

    state = blades_state()
    try:
        new = save_party(BLADES, state, {"fields": {"upgrades": "x\udcfe"}}, state.party_revision)
    except StateError as e:
        assert any(p.code == "bad-text" for p in e.problems)
    else:
        new.dumps().encode("utf-8")


# -- 4. GameState.new takes names, not a name -----------------------------------------------------------
def test_h4_new_refuses_a_plain_string():
    with pytest.raises(StateError) as e:
        GameState.new(GRAVE, "Mira")
    p = e.value.problems[0]
    assert (p.path, p.code, p.value) == ("characters", "wrong-type", "Mira") and "'Mira'" in p.message
    assert GameState.new(GRAVE, ["Mira"]).characters == ("Mira",)
    assert GameState.new(GRAVE, ("Mira", "Bram")).characters == ("Mira", "Bram")


# -- 5. Chat.from_json: only StateError, with paths ------------------------------------------------------
def chat_doc():
    chat = Chat(BLADES, blades_state())
    chat.user("We hit the vault.")
    chat.receive('Done. [clock: name="Alarm" size="4"] [sheet: sheet="party" op="advance" field="heat" by="2"]')
    chat.regenerate('Quiet. [clock: name="Alarm" size="6"]')
    chat.user("Next.")
    chat.receive('[clock: name="Alarm" tick="1"]')
    return json.loads(json.dumps(chat.to_json()))


def test_h5_chat_round_trip_still_works():
    doc = chat_doc()
    again = Chat.from_json(BLADES, doc)
    assert again.to_json() == doc


@pytest.mark.parametrize(("edit", "path"), [
    (lambda d: d["messages"][3]["swipes"][0].update(text=5), "messages[3].swipes[0].text"),
    (lambda d: d["messages"][1]["swipes"].__setitem__(0, "x"), "messages[1].swipes[0]"),
    (lambda d: d["messages"][1].update(swipes={"a": 1}), "messages[1].swipes"),
    (lambda d: d["messages"][1].update(selected="1"), "messages[1].selected"),
    (lambda d: d["messages"][1].update(selected=-1), "messages[1].selected"),
    (lambda d: d["messages"].__setitem__(0, []), "messages[0]"),
    (lambda d: d["messages"][0].update(role=["user"]), "messages[0].role"),
    (lambda d: d["messages"][0].update(content={"x": 1}), "messages[0].content"),
    (lambda d: d.update(messages="hello"), "messages"),
    (lambda d: d.update(metadata=[]), "metadata"),
    (lambda d: d["metadata"].update(gamePartySheetRevision="3"), "metadata.gamePartySheetRevision"),
    (lambda d: d["metadata"].update(gameCharacterCards=[1]), "metadata.gameCharacterCards"),
    (lambda d: d["messages"][1]["swipes"][1].update(snapshot=[]), "messages[1].swipes[1].snapshot"),
    (lambda d: d["messages"][1]["swipes"][1]["snapshot"].update(rulesetLive=3),
     "messages[1].swipes[1].snapshot.rulesetLive"),
    (lambda d: d.update(start=None), "start"),
    (lambda d: d["start"].update(format="x"), "start.format"),
])
def test_h5_malformed_chat_is_a_state_error_naming_the_path(edit, path):
    doc = chat_doc()
    edit(doc)
    with pytest.raises(StateError) as e:
        Chat.from_json(BLADES, doc)
    assert path in [p.path for p in e.value.problems]


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=False),
                      st.text(max_size=5), st.sampled_from(["user", "assistant", "tagengine.chat/1", "Mira"]))
json_like = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["format", "metadata", "start", "messages", "role", "content", "swipes",
                                     "selected", "text", "snapshot", "gameCharacterCards", "rulesetLive",
                                     "rulesetClocks", "gamePartySheet", "gamePartySheetRevision", "x"]) | st.text(
                                         max_size=3), inner, max_size=5)), max_leaves=20)


@st.composite
def chat_like(draw):
    """A real chat document with one part replaced by arbitrary JSON, or arbitrary JSON outright."""
    if draw(st.integers(0, 4)) == 0:
        return draw(json_like)
    doc = chat_doc()
    node, key = doc, None
    for _ in range(draw(st.integers(1, 6))):
        if key is not None:
            node = node[key]
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            break
        if not isinstance(node[key], dict | list):
            break
    if key is None:
        return draw(json_like)
    node[key] = draw(json_like)
    return doc


@SETTINGS
@given(chat_like())
def test_h5_only_state_error_comes_out_of_from_json(doc):
    try:
        chat = Chat.from_json(BLADES, doc)
    except StateError as e:
        assert e.problems and all(isinstance(p.path, str) and p.path for p in e.problems)
    else:
        json.dumps(chat.to_json(), ensure_ascii=False).encode("utf-8", "surrogateescape")
