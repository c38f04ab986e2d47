"""The tag layer's verdicts, pinned where a mutation pass found them unchecked (issue 29, docs/mutation.md): the
patterns built afresh from the names, the grammar's own reading of each value form, where a malformed tag is
said to fail, the 64-attribute limit on both paths, and when the stream filter may call a cut line broken."""

from __future__ import annotations

import pytest

from tagengine._internal.tags import Tag, narration, scan
from tagengine._internal.tags.model import MAX_ATTRIBUTES
from tagengine._internal.tags.parse import broken, judged_by_lark, parse
from tagengine._internal.tags.vocabulary import TAG_NAMES, vocabulary


def fresh(names):
    """The patterns built now, not the cached ones: a test that reads them runs the builder (SC-2)."""
    return vocabulary.__wrapped__(names)


@pytest.mark.parametrize("names", [TAG_NAMES, ("sheet", "shout", "clock")], ids=["ours", "shared-prefix"])
def test_sc_2_every_prefix_of_an_opener_in_any_case_may_still_grow(names):
    v = fresh(names)
    for name in names:
        for spelled in (name, name.upper(), name.capitalize(), name[:-1] + name[-1].upper()):
            opener = f"[ {spelled} :"
            for i in range(1, len(opener)):  # the whole opener is no longer partial: it is an opener
                assert v.partial.search("so " + opener[:i]), opener[:i]
            assert v.opener.match(opener) and v.candidate.match(opener + ' a="b"]')
    assert not v.partial.search("so [ sheets")  # a longer word is prose
    assert not v.partial.search("so [ shx") and not v.partial.search("so [sheet:")  # no name; a whole opener
    assert v.partial.search("so [sheet ") and v.partial.search("so [ ")


def test_dec_1_the_grammar_reads_every_value_form():
    """Lark's reading (the path a tag takes when the fast expression cannot read it) of each form of DEC-1/DEC-2."""
    tag = judged_by_lark('[Clock: name=“Alarm raised” size=6 clear note="say \\"hi\\" \\\\ ok" tick = "2"]')
    assert tag == Tag("clock", (("name", "Alarm raised"), ("size", "6"), ("clear", None),
                                ("note", 'say "hi" \\ ok'), ("tick", "2")))
    assert judged_by_lark('[sheet: result="ok" a="b" now="1/2"]') == Tag("sheet", (("a", "b"),))  # DEC-4
    assert judged_by_lark('[check: skill="Ward" rolled="6" outcome="x"]') == Tag("check", (("skill", "Ward"),))


@pytest.mark.parametrize(("text", "why"), [
    ('[clock: name="x" !]', "unexpected '!' at column 18"),
    ('[clock: ="x"]', "unexpected '=' at column 9"),
    ('[clock: a=]', "unexpected ']' at column 11"),
    ('[sheet: who="Mira" op="spend" "grit"]', "unexpected '\"' at column 31"),
])
def test_dec_2_a_malformed_tag_says_where_it_fails(text, why):
    assert judged_by_lark(text) == why
    (found,) = scan("So " + text + " then.")
    assert found.tag is None and found.error == why  # the JSON receipt's `detail`


def attributes(n):
    return " ".join(f"k{i}=v" for i in range(n))


def test_sc_3_the_grammar_takes_64_attributes_and_stops_at_the_65th():
    assert len(judged_by_lark(f"[clock: {attributes(MAX_ATTRIBUTES)}]").attrs) == MAX_ATTRIBUTES
    assert judged_by_lark(f"[clock: {attributes(MAX_ATTRIBUTES + 1)}]") == "more than 64 attributes"
    assert judged_by_lark(f"[clock: flag {attributes(MAX_ATTRIBUTES)}]") == "more than 64 attributes"  # flags count
    assert len(parse(f"[clock: {attributes(MAX_ATTRIBUTES)}]").attrs) == MAX_ATTRIBUTES  # the fast path agrees


def test_sc_4_a_cut_line_is_broken_only_when_no_ending_could_mend_it():
    assert not broken('[clock: name="x"\n') and not broken("[clock:\n") and not broken("[clock: a=“x”\n")
    assert broken('[clock: name="x" !\n') and broken("[clock: =\n")
    assert not broken(f"[clock: {attributes(MAX_ATTRIBUTES)}\n")
    assert broken(f"[clock: {attributes(MAX_ATTRIBUTES + 1)}\n")


def test_dec_12_narration_drops_a_line_of_tags_with_its_line_break_only():
    t = '[clock: name="A" size="4"]'
    assert narration(f"One.\n{t}\nTwo.") == "One.\nTwo."
    assert narration(f"One.\n  {t} {t}  \nTwo.") == "One.\nTwo."
    assert narration(f"One. {t}\nTwo.") == "One. \nTwo."  # prose on the line: the line stays
    assert narration(f"One.\n{t}") == "One."  # a last line of tags takes the line break before it
    assert narration(f"{t}\n\nTwo.") == "\nTwo."  # a blank line that held no tag stays
    assert narration(f"One.\n{t}\n") == "One.\n"


def test_sc_5_the_fast_reading_takes_64_attributes_itself():
    """Lark would read a 64-attribute tag the same, only slower: the expression must not hand it over."""
    from tagengine._internal.tags.parse import _lexed

    text = f"[clock: {attributes(MAX_ATTRIBUTES)}]"
    assert _lexed(text) == judged_by_lark(text) and _lexed(f"[clock: {attributes(MAX_ATTRIBUTES + 1)}]") is None


def test_dec_3_why_a_span_is_malformed_and_what_it_kept():
    from tagengine._internal.tags.scan import CUT, UNCLOSED

    (f,) = scan('So [clock: Xname="a" gone')  # no `]`: the rest of its own line, trailing blanks left out
    assert (f.tag, f.error, f.raw) == (None, UNCLOSED, 'Xname="a" gone')
    (f,) = scan("So [clock: aX  \t\nnext line")
    assert (f.error, f.raw) == (UNCLOSED, "aX") and f.end == len("So [clock: aX")
    (f,) = scan('So [clock: name="a" !\nand later] prose')  # a `]` on a later line, and it does not parse
    assert (f.error, f.raw) == (CUT, 'name="a" !')
    (f,) = scan("So [clock: X !] prose")
    assert f.raw == "X !" and f.error == "unexpected '!' at column 11"
    (f,) = scan('So [clock: raw="X  gone" result="refused" reason="malformed"]')  # DEC-5: an earlier verdict
    assert (f.tag, f.raw, f.error) == (None, "X gone", "refused as malformed before")
    (f,) = scan("So [clock:")
    assert (f.raw, f.error) == ("", UNCLOSED)


def test_dec_4_a_value_is_written_back_with_its_backslashes_and_quotes_escaped():
    from tagengine._internal.tags.model import quote
    from tagengine._internal.tags.render import canonical

    assert quote('a\\b "c"') == '"a\\\\b \\"c\\""'
    assert canonical("clock", (("name", "a\\b"), ("clear", None)), (("result", "ok"),)) == (
        '[clock: name="a\\\\b" clear result="ok"]')
    assert parse(canonical("clock", (("name", 'x\\" y'),), ())).get("name") == 'x\\" y'  # read back the same


def test_dec_12_narration_hides_the_tags_of_the_vocabulary_it_is_given():
    text = 'A [shout: a="b"] B [clock: name="x"] C'
    assert narration(text, fresh(("shout",))) == 'A  B [clock: name="x"] C'
    assert narration(text) == 'A [shout: a="b"] B  C'
    assert narration('\nOne. [clock: name="x"]') == "\nOne. "  # a first blank line held no tag: it stays
