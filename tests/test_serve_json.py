"""SB-2: the server reads and writes JSON with orjson where that gives exactly what the standard library
gives, and leaves the rest to the standard library (long numbers, NaN, lone surrogates, bad JSON)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tagengine._internal.server.errors import Refused
from tagengine._internal.server.turn.request import parse_body
from tagengine._internal.server.wire.json_codec import dumps, loads

SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text()
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                      max_size=4), max_leaves=20)


@given(DOCS)
def test_read_and_written_as_the_standard_library_does(doc):
    raw = json.dumps(doc).encode()
    assert loads(raw) == json.loads(raw)
    assert loads(raw.decode()) == json.loads(raw)
    assert json.loads(dumps(doc)) == doc


@pytest.mark.parametrize("raw", [b'{"seed": 123456789012345678901234567890}', b'[-9223372036854775809]',
                                 b'[18446744073709551616]', b'{"a": 1, "a": 2}', b'["\\ud800"]', b'[1e400]',
                                 b'[0.1, 1e-07, 1e+16, -0.0]', '["é", "\\u00e9"]'.encode(), b"\xef\xbb\xbf[1]",
                                 b'{"messages": [{"n": [1, {"seed": 99999999999999999999999}]}]}',  # deep in
                                 b'[9223372036854775808, 18446744073709551615, 1e300, -1e19]',
                                 b'{"a": "12345678901234567890123"}'])  # digits in a string: orjson's answer
def test_edges_read_as_the_standard_library_reads_them(raw):
    assert json.dumps(loads(raw)) == json.dumps(json.loads(raw))  # the same values and kinds (an int stays one)


def test_a_long_integer_passes_through_exactly():
    body = loads(b'{"messages": [{"role": "user", "content": "hi"}], "seed": 123456789012345678901}')
    assert body["seed"] == 123456789012345678901
    assert b'"seed":123456789012345678901' in dumps(body)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_numbers_only_the_standard_library_reads_are_written_back_as_they_came(constant):
    doc = loads(f'{{"temperature": {constant}}}'.encode())
    assert not math.isfinite(doc["temperature"])
    assert dumps(doc) == f'{{"temperature":{constant}}}'.encode()  # orjson would write null
    assert dumps(loads(b'{"t": 1e400}')) == b'{"t":Infinity}'  # as json.dumps(json.loads(...)) writes it


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,]", b"\xff", "\ufeff{}", b"[" * 100_000])
def test_not_json_fails_as_the_standard_library_fails(raw):
    with pytest.raises((ValueError, RecursionError)) as got:
        loads(raw)
    with pytest.raises(type(got.value)) as want:
        json.loads(raw)
    assert str(got.value) == str(want.value)


def test_a_request_that_is_not_json_is_still_a_400_naming_why():
    with pytest.raises(Refused) as e:
        parse_body(b'{"messages": [')
    assert e.value.status == 400 and "not JSON" in e.value.message


def test_a_chat_body_is_exact_outside_its_messages_which_the_engine_rebuilds_from_their_texts():
    from tagengine._internal.server.turn.request import parse_body, read_marked

    raw = (b'{"seed": 123456789012345678901, "logit_bias": {"50256": -100}, "messages": [{"role": "user", '
           b'"content": "hi", "n": 123456789012345678901}]}')
    body = parse_body(raw)
    assert body["seed"] == 123456789012345678901 and type(body["seed"]) is int  # top level: as json reads it
    assert read_marked(body["messages"]).history == [{"role": "user", "content": "hi"}]  # only role and text go on
    assert loads(raw) == json.loads(raw)  # without `rebuilt`, everything as json reads it


MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                           "content": st.text(max_size=40)}), max_size=6)  # lone surrogates too


@given(st.lists(st.tuples(st.integers(0, 6), MESSAGES, st.dictionaries(st.sampled_from(["model", "seed", "n"]), DOCS,
                                                                        max_size=2)), min_size=1, max_size=5))
def test_pf_61_a_chat_body_written_with_its_kept_messages_is_the_body_written_whole(bodies):
    """PF-61: `ChatBodies.dumps` keeps each message's JSON by the message (the same objects as a body before, or equal
    ones) and writes a body with them in place: the same document as `dumps`, whatever bodies came before, and byte
    for byte where orjson writes every part and no kept message was equal with its keys in another order (a lone
    surrogate's message is escaped on its own)."""
    import orjson

    from tagengine._internal.server.wire.json_codec import ChatBodies

    bodies_json, last = ChatBodies(), []
    for keep, new, fields in bodies:
        messages = [*last[:keep], *new]  # a start of the very objects of the body before, then new ones
        body = {**fields, "messages": messages}
        assert json.loads(bodies_json.dumps(body)) == json.loads(dumps(body))
        last = messages
        try:
            whole = orjson.dumps(body)
        except TypeError:  # a part only the standard library writes
            continue
        assert ChatBodies().dumps(body) == whole == dumps(body)


def test_pf_61_the_kept_json_of_a_chats_messages_holds_what_it_writes():
    """PF-61: orjson's answer keeps the 4 KiB buffer it was written into; each message's kept JSON is copied to bytes of
    its own size, so a 200-message chat's is held in about its own size, not 200 buffers (1.2 MB)."""
    import tracemalloc

    from tagengine._internal.server.wire.json_codec import ChatBodies

    body = {"model": "m", "messages": [{"role": "user", "content": f"line {i} " + "x" * 90} for i in range(200)]}
    size = len(dumps(body))
    bodies = ChatBodies()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        bodies.dumps(body)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 3 * size, (held, size)


def test_pf_61_the_kept_json_counts_against_its_memos_bound():
    """PF-61: a kept message holds its object and its JSON, a second copy of its text: both count against the memo's
    bound, so a history kept by the token counts (text and ITEM_CHARS a message) is one the bodies keep only when
    twice its text fits too. Both sides of half the bound: four 100-character messages (and the last, not kept) are
    kept, five are not."""
    from tagengine._internal.prefix_memo import ITEM_CHARS
    from tagengine._internal.server.wire.json_codec import ChatBodies

    per = 2 * 100 + ITEM_CHARS
    for kept, held in ((4, 1), (5, 0)):
        bodies = ChatBodies()
        bodies._written.max_size = 2 * (4 * per + per // 2)  # half of it: four messages and a half
        messages = [{"role": "user", "content": f"{i:03d}" + "x" * 97} for i in range(kept + 1)]
        assert bodies.dumps({"messages": messages}) == dumps({"messages": messages})
        assert len(bodies._written) == held, kept
