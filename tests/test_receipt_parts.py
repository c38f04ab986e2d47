"""Issue 30: a receipt's text and the receipt itself are built from parts worked out once, and by slot
setters; each equals what the plain way builds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal.commands.dispatch import Receipt, receipt
from tagengine._internal.commands.result import Result, ok, refused
from tagengine._internal.tags import Tag, canonical

attrs = st.lists(st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True),
                           st.none() | st.text(st.characters(blacklist_characters="[]\n"), max_size=8)), max_size=8)


@settings(max_examples=examples(1000), deadline=None)
@given(st.sampled_from(["sheet", "clock"]), attrs,
       st.sampled_from([ok(), ok('3/5 "x" \\ y'), refused("malformed"), Result("partial", "Mira 1/2", "Bram: a"),
                        Result("ok", "7", None, (("dice", "2d6"), ("rolled", "3, 4")))]))
def test_a_receipt_from_its_parts_is_the_canonical_one(name, pairs, result):
    tag = Tag(name, tuple(pairs))
    assert tag.head + result.text + "]" == canonical(tag.name, tag.attrs, result.attrs())


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(["sheet", "clock"]), attrs,
       st.sampled_from(["ok", "refused", "partial"]), st.none() | st.text(max_size=5), st.none() | st.text(max_size=5),
       st.none() | st.text(max_size=5), st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=2))
def test_the_dispatchers_receipt_is_a_receipt(start, end, name, pairs, result, now, reason, detail, record):
    fields = (start, end, name, tuple(pairs), result, now, reason, detail, tuple(record))
    fast, plain = receipt(*fields), Receipt(*fields)
    assert fast == plain and repr(fast) == repr(plain) and fast.to_json() == plain.to_json()
