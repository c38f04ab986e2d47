"""Tag syntax (DEC-1..3), canonical rewrite (DEC-4) and narration (DEC-12, CLOCK-24)."""

from __future__ import annotations

import pytest

from tagengine._internal.tags import canonical, narration, parse, scan


def tags(text):
    return [(f.tag.name, f.tag.attrs) if f.tag else ("malformed", f.raw) for f in scan(text)]


def test_dec_1_form_and_flags():
    assert tags('[clock: name="Alarm raised" clear]') == [("clock", (("name", "Alarm raised"), ("clear", None)))]


def test_dec_1_names_case_insensitive_and_spacing():
    assert tags('[ CLOCK :name="A"   tick="1" ]')[0][0] == "clock"
    assert tags('[Sheet: who="Mira"]')[0][0] == "sheet"


def test_dec_1_newlines_separate_attributes():
    assert tags('[sheet: who="Mira"\n  op="spend"\n  pool="grit"]') == [
        ("sheet", (("who", "Mira"), ("op", "spend"), ("pool", "grit")))]


def test_dec_1_escapes():
    assert tags(r'[sheet: op="text" to="say \"hi\" \\ bye"]')[0][1][1] == ("to", 'say "hi" \\ bye')


def test_dec_1_values_are_single_line():
    assert tags('[clock: name="Alarm\nraised" tick="1"]')[0][0] == "malformed"


def test_dec_2_unquoted_and_typographic_values():
    assert tags("[clock: name=\u201cAlarm raised\u201d tick=2]") == [
        ("clock", (("name", "Alarm raised"), ("tick", "2")))]
    tag = parse("[clock: name=\u201cA\u201d tick=2]")
    assert canonical(tag.name, tag.attrs, ()) == '[clock: name="A" tick="2"]'


def test_dec_2_anything_else_that_opens_like_a_tag_is_malformed():
    assert tags('[clock: name="Alarm raised tick="1"]') == [("malformed", 'name="Alarm raised tick="1"')]
    assert tags("[sheet: who=Mira op=]")[0][0] == "malformed"


@pytest.mark.parametrize("prose", ["[OOC: a risky roll uses 2d6.]", "(see [the rules](https://x.y/r#1))", "[Mira]",
                                   "[Roll: 2d6 = 3, 5]", "[sheet] and [clock] are tags", "[sheets: x]"])
def test_dec_3_other_brackets_are_prose(prose):
    assert scan(prose) == []


def test_dec_3_unclosed_opener_is_malformed_and_keeps_its_line():
    text = 'Cut off [sheet: who="Mira" op=\nThe next line stays.'
    (f,) = scan(text)
    assert f.tag is None and text[f.start:f.end] == '[sheet: who="Mira" op='
    assert text[f.end:] == "\nThe next line stays."


def test_a_broken_candidate_does_not_hide_a_later_tag():
    text = '[clock: name="x [clock: name="B" size="4"]'
    assert tags(text) == [("malformed", 'name="x'), ("clock", (("name", "B"), ("size", "4")))]


def test_an_unclosed_quote_does_not_swallow_the_reply():
    text = '[clock: name="Alarm tick="1"\n\nMore prose. [clock: name="B" tick="1"]'
    assert [t[0] for t in tags(text)] == ["malformed", "clock"]


def test_dec_4_result_attributes_of_the_model_are_dropped():
    tag = parse('[clock: name="A" result="ok" now="9/9" reason="x" tick="1"]')
    assert tag.attrs == (("name", "A"), ("tick", "1"))


def test_dec_12_narration_hides_tags_and_tag_only_lines():
    text = 'The door gives.\n[clock: name="A" tick="1"]\nMira runs [sheet: who="Mira" op="spend"] on.\n'
    assert narration(text) == "The door gives.\nMira runs  on.\n"


def test_clock_24_narration_of_last_line_tags():
    assert narration('Prose.\n  [clock: name="A" clear]  ') == "Prose."
    assert narration('[clock: name="A" clear]') == ""
    assert narration("no tags [OOC: x]") == "no tags [OOC: x]"


def test_narration_hides_malformed_tags_too():
    assert narration('A [clock: name="x tick=1] B') == "A  B"
