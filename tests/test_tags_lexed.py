"""SC-5: well-formed tags are read with one regular expression built from the grammar's terminals; Lark
judges the rest. Whatever the one-expression reading accepts, Lark reads the same Tag."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal.tags.parse import _lexed, judged_by_lark, parse
from tagengine._internal.tags.render import quote

PIECES = ["[", "]", ":", "=", '"', "\\", "\u201c", "\u201d", "\u201e", " ", "\n", "\t", "\f", "sheet", "clock",
          "who", "Mira", "op", "amount", "2", "-", "_", "!", ".", "x", "raw", "result", "now", "é"]
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


def test_sc_5_no_backtracking_on_long_runs():
    """Atomic groups: a long key, or thousands of flags, before a stray character is read once."""
    assert _lexed("[sheet: " + "a" * 200_000 + "!]") is None
    assert _lexed("[sheet: " + "a b " * 50_000 + "!]") is None
