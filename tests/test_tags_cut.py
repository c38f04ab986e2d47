"""DEC-3 (G-2, SC-1, SC-3): a tag missing its `]` keeps only its own line, even when a `]` comes on a later line.

DEC-1 lets a tag's attributes sit on several lines, so a candidate that reaches a later `]` is kept
whole only when it parses; otherwise it is cut back to its line, like an opener with no `]` at all,
and the prose after it survives in the rewrite and the narration.
"""

from __future__ import annotations

from cmdkit import sample_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.stream import StreamFilter
from tagengine._internal.tags import narration, scan
from tagengine._internal.tags.model import MAX_ATTRIBUTES

RS = load_sample("blades-like")
STATE = sample_state("blades-like")

CUT_OFF = 'Cut off [sheet: who="Lurk" op=\nThe next line stays.\nA wink ;]\nEnd.'


def test_dec_3_a_tag_missing_its_bracket_does_not_swallow_the_lines_up_to_a_later_bracket():
    (f,) = scan(CUT_OFF)
    assert f.tag is None and CUT_OFF[f.start:f.end] == '[sheet: who="Lurk" op='
    assert narration(CUT_OFF) == "Cut off \nThe next line stays.\nA wink ;]\nEnd."
    a = apply_reply(RS, STATE, CUT_OFF)
    assert a.text == ('Cut off [sheet: raw="who=\\"Lurk\\" op=" result="refused" reason="malformed"]\n'
                      "The next line stays.\nA wink ;]\nEnd.")
    assert [r.reason for r in a.receipts] == ["malformed"]


def test_dec_3_the_cut_is_idempotent_and_streams_as_narrated():
    a = apply_reply(RS, STATE, CUT_OFF)
    b = apply_reply(RS, STATE, a.text)
    assert (b.text, b.state) == (a.text, a.state)  # DEC-5
    f = StreamFilter(RS, STATE)
    shown = "".join(f.feed(c) for c in CUT_OFF)
    rest, applied = f.finish()
    assert shown + rest == narration(CUT_OFF) and applied.text == a.text
    assert "The next line stays." in shown  # shown once its `]` proved the tag broken, not only at the end


def test_sc_4_the_lines_after_a_cut_off_tag_stream_before_the_reply_ends():
    text = 'Cut off [sheet: who="Lurk" op=\nThe next line stays.\nAnd this one.\nNo bracket ever comes'
    f = StreamFilter(RS, STATE)
    shown = "".join(f.feed(c) for c in text)
    assert shown.startswith("Cut off \nThe next line stays.\n")  # decided once that line failed to parse
    rest, _ = f.finish()
    assert shown + rest == narration(text)
    held = 'Go [clock: name="A"\n tick="1"\n'  # still a tag, maybe: held
    f = StreamFilter(RS, STATE)
    assert "".join(f.feed(c) for c in held) == "Go "


def test_dec_1_a_well_formed_tag_on_several_lines_still_parses():
    text = 'Bells.\n[clock: name="Bluecoats close in"\n   tick="1"\n]\nRun.'
    (f,) = scan(text)
    assert f.tag is not None and f.tag.attrs == (("name", "Bluecoats close in"), ("tick", "1"))
    assert apply_reply(RS, STATE, text).text == (
        'Bells.\n[clock: name="Bluecoats close in" tick="1" result="ok" now="4/6"]\nRun.')
    assert narration(text) == "Bells.\nRun."


def test_dec_1_a_value_broken_across_lines_keeps_only_its_first_line():
    text = '[clock: name="Alarm\nraised" tick="1"]\nMore.'
    (f,) = scan(text)
    assert f.tag is None and text[f.start:f.end] == '[clock: name="Alarm'
    assert narration(text) == 'raised" tick="1"]\nMore.'


def test_a_candidate_closed_on_its_own_line_is_still_one_malformed_tag():
    text = 'A [clock: name="Alarm raised tick="1"] B'
    (f,) = scan(text)
    assert (f.start, f.end) == (2, len(text) - 2) and f.tag is None


def test_sc_3_a_tag_of_more_than_64_attributes_is_malformed_without_parsing_the_rest():
    many = " ".join(f"k{i}" for i in range(MAX_ATTRIBUTES))
    (ok,) = scan(f"[sheet: {many}]")
    assert ok.tag is not None and len(ok.tag.attrs) == MAX_ATTRIBUTES
    (f,) = scan(f"[sheet: {many} one_more]")
    assert f.tag is None and f.error == f"more than {MAX_ATTRIBUTES} attributes"
    text = "[sheet: who=\n" + "prose line\n" * 100 + "]"  # bare flags would parse: the limit cuts it
    (f,) = scan(text)
    assert text[f.start:f.end] == "[sheet: who=" and narration(text).startswith("prose line\n")


lines = st.lists(st.sampled_from(['[sheet: who="Lurk" op=', '[clock: name="A"', "prose, words.", ";]", "]", "",
                                  ' tick="1"]', '[clock: name="A" tick="1"]', "x [clock:", '"', "op=spend"]),
                 max_size=12).map("\n".join)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines)
def test_cut_tags_keep_idempotence_and_the_text_outside_them(text):
    a = apply_reply(RS, STATE, text)
    b = apply_reply(RS, STATE, a.text)
    assert (b.text, b.state) == (a.text, a.state)
    assert narration(a.text) == narration(text)
    for f in scan(text):
        if f.tag is None and "\n" in text[f.start:f.end]:
            raise AssertionError(f"a malformed tag spans lines: {text[f.start:f.end]!r}")
