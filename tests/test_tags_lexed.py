"""SC-5: well-formed tags are read with regular expressions built from the grammar's terminals; Lark
judges the rest. Whatever that reading accepts, Lark reads the same Tag."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal.tags import quote
from tagengine._internal.tags.model import MAX_ATTRIBUTES
from tagengine._internal.tags.parse import (
    _expressions,
    _lexed,
    _tag_start,
    broken,
    broken_by_lark,
    judged_by_lark,
    parse,
    tag_of,
    terminals,
    unescape,
)

PIECES = ["[", "]", ":", "=", '"', "\\", "\u201c", "\u201d", "\u201e", " ", "\n", "\t", "\f", "sheet", "clock",
          "who", "Mira", "op", "amount", "2", "-", "_", "!", ".", "x", "raw", "result", "now", "é", "'", ","]
tagish = st.builds(lambda name, body: f"[{name}:{body}]", st.sampled_from(["sheet", "Clock", " sheet ", "SHEET"]),
                   st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
attrs = st.lists(st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True),
                           st.one_of(st.none(), st.text(st.characters(blacklist_characters='"\\[]\n'), max_size=8),
                                     st.from_regex(r'[^\s"\u201c\u201d\u201e\[\]=]{1,6}', fullmatch=True))),
                 max_size=8)


@settings(max_examples=examples(3000), deadline=None)
@given(tagish)
def test_sc_5_what_the_expression_reads_lark_reads_the_same(text):
    fast = _lexed(text)
    if fast is not None:
        assert judged_by_lark(text) == fast


@settings(max_examples=examples(1000), deadline=None)
@given(st.sampled_from(["sheet", "clock"]), attrs, st.sampled_from([" ", "\n", "  \t"]))
def test_sc_5_every_well_formed_tag_is_read_by_the_expression(name, pairs, blank):
    body = blank.join(k if v is None else f"{k}={quote(v)}" for k, v in pairs)
    text = f"[{name}:{blank}{body}{blank}]"
    fast = _lexed(text)
    assert fast is not None and fast == judged_by_lark(text) == parse(text)


def one_expression(text):
    """The reading by one expression of the whole tag, its body's attributes read again (as before PF-73)."""
    head, attr, end, _ = _expressions(terminals())
    plain_attr = re.sub(r"\(\?P<[a-z]+>", "(?:", attr)
    m = re.fullmatch(rf"{head}(?P<body>(?>{plain_attr})*+){end}", text)
    if m is None:
        return None
    pos, stop = m.span("body")
    attrs = []
    while pos < stop:
        a = re.compile(attr).match(text, pos, stop + 2)
        s, q, t = a.group("s"), a.group("q") or a.group("t"), a.group("b")
        attrs.append((a.group("key"), unescape(s[1:-1]) if s is not None else q[1:-1] if q is not None else t))
        pos = a.end()
    return None if len(attrs) > MAX_ATTRIBUTES else tag_of(m.group("name").lower(), attrs)


@settings(max_examples=examples(3000), deadline=None)
@given(st.one_of(tagish, st.builds(lambda name, pairs, blank, tail: f"[{name}:{blank}" + blank.join(
    k if v is None else f"{k}={quote(v)}" for k, v in pairs) + tail, st.sampled_from(["sheet", "clock"]), attrs,
    st.sampled_from([" ", "\n", ","]), st.sampled_from(["]", " ]", "\\]", "", " x", "]]", "'"]))))
def test_pf_73_the_tag_read_piece_by_piece_is_the_one_expressions(text):
    """The head, one attribute after another and the end read the same tags as one expression of the whole tag
    did, and refuse the same texts."""
    assert _lexed(text) == one_expression(text)


@pytest.mark.parametrize("count", [MAX_ATTRIBUTES, MAX_ATTRIBUTES + 1])
def test_pf_73_at_most_max_attributes_are_read_without_lark(count):
    text = "[sheet: " + " ".join(f'k{i}="v"' for i in range(count)) + "]"
    assert (_lexed(text) is not None) is (count <= MAX_ATTRIBUTES)
    assert _lexed(text) == one_expression(text)


def test_sc_5_no_backtracking_on_long_runs():
    """Atomic groups: a long key, or thousands of flags, before a stray character is read once."""
    assert _lexed("[sheet: " + "a" * 200_000 + "!]") is None
    assert _lexed("[sheet: " + "a b " * 50_000 + "!]") is None


# Issue 30: the stream filter's early verdict (`broken`) reads a start of a tag with one regular expression
# too; whatever that expression takes as a whole start, Lark finds nothing wrong with either.
def _starts(text: str) -> list[str]:
    """Each start of `text` made of whole lines, as the stream filter asks about them."""
    return [text[:i] for i, ch in enumerate(text) if ch == "\n"]


@settings(max_examples=examples(3000), deadline=None)
@given(tagish)
def test_a_start_the_expression_takes_lark_takes(text):
    for lines in _starts(text):
        if _tag_start().fullmatch(lines):
            assert not broken_by_lark(lines), lines
        assert broken(lines) == broken_by_lark(lines), lines


@settings(max_examples=examples(500), deadline=None)
@given(st.sampled_from(["sheet", "clock"]), attrs, st.sampled_from(["\n", " \n ", "\n\t"]))
def test_every_start_of_a_well_formed_tag_is_taken_by_the_expression(name, pairs, blank):
    """Keys and values one a line, `=` alone on a line too: each start is read without Lark."""
    body = blank.join(k if v is None else f"{k}{blank}={blank}{quote(v)}" for k, v in pairs)
    for lines in _starts(f"[{name}:{blank}{body}{blank}]"):
        assert _tag_start().fullmatch(lines), lines


def test_too_many_keys_in_a_start_are_left_to_lark():
    lines = "[sheet:\n" + "k\n" * (MAX_ATTRIBUTES + 1)
    assert _tag_start().fullmatch(lines.rstrip("\n")) is None
    assert broken(lines.rstrip("\n")) and broken_by_lark(lines.rstrip("\n"))


# The grammar's STRING reads its runs possessively (issue 30): the same strings as DEC-1's plain form.
DEC_1_STRING = re.compile(r'"(?:[^"\\\n\[\]]|\\["\\])*"')


@settings(max_examples=examples(3000), deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", "a", " ", "\n", "[", "]", "é", "\u201c"]), max_size=12).map("".join))
def test_the_string_terminal_reads_what_dec_1_reads(text):
    string = re.compile(terminals()["STRING"])
    for i in range(len(text) + 1):
        old, new = DEC_1_STRING.match(text, i), string.match(text, i)
        assert (old and old.group()) == (new and new.group())
