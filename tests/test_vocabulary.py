"""Issue 11 (SC-2): the tag names are written once (tags/vocabulary.py); scanner, grammar and stream filter follow."""

from __future__ import annotations

import pytest
from cmdkit import sample_state

from conftest import ROOT, load_sample
from tagengine._internal.stream import StreamFilter
from tagengine._internal.tags import narration, parse, scan
from tagengine._internal.tags.vocabulary import TAG_NAMES, VOCABULARY, vocabulary

RS = load_sample("blades-like")
STATE = sample_state("blades-like")
EXTENDED = vocabulary((*TAG_NAMES, "check"))  # a third kind, through the same builder and nothing else


def cases(name):
    return [name, name.upper(), name.capitalize(), name[:2].upper() + name[2:]]


def shows(vocab, text):
    f = StreamFilter(RS, STATE, vocab)
    return "".join(f.feed(c) for c in text)


def works_everywhere(vocab, name):
    for spelled in cases(name):
        text = f'Then [ {spelled} : a="b"] now.'
        (found,) = scan(text, vocab)
        assert found.name == name and found.tag is not None and found.tag.attrs == (("a", "b"),)
        assert parse(f'[{spelled}: a="b"]').name == name  # the grammar takes any word as a name
        assert narration(text, vocab) == "Then  now."
        opener = f"[ {spelled} :"
        for i in range(1, len(opener) + 1):  # every prefix of the opener, fed alone, is held back
            assert shows(vocab, opener[:i]) == "", opener[:i]
        assert shows(vocab, "Ok " + opener) == "Ok "
        f = StreamFilter(RS, STATE, vocab)
        assert "".join(f.feed(c) for c in text) + f.finish()[0] == "Then  now."


@pytest.mark.parametrize("name", TAG_NAMES)
def test_every_tag_name_is_found_parsed_and_held_back(name):
    works_everywhere(VOCABULARY, name)


@pytest.mark.parametrize("name", [*TAG_NAMES, "check"])
def test_a_third_name_works_everywhere_from_the_tuple_alone(name):
    works_everywhere(EXTENDED, name)


@pytest.mark.parametrize("prose", ['[roll: a="b"]', '[chock: a="b"]', '[sheets: a="b"]', '[she et: a="b"]',
                                   '[\u017fheet: a="b"]', '[cloc\u212a: a="b"]'])
def test_a_name_not_in_the_tuple_is_prose(prose):
    assert scan(prose) == [] and narration(prose) == prose
    f = StreamFilter(RS, STATE)
    assert "".join(f.feed(c) for c in prose) + f.finish()[0] == prose


def test_the_grammar_lists_no_tag_name():
    grammar = (ROOT / "grammars" / "tags.lark").read_text(encoding="utf-8")
    rules = [line for line in grammar.splitlines() if not line.lstrip().startswith("//")]
    for name in (*TAG_NAMES, "check"):
        assert name not in "\n".join(rules).lower()


def test_names_must_be_lower_case_words():
    for bad in [(), ("Sheet",), ("she et",), ("sheet", "")]:
        with pytest.raises(ValueError):
            vocabulary(bad)
    assert vocabulary(TAG_NAMES) is VOCABULARY
