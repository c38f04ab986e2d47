"""A ruleset of any shape is answered with problems, never a crash. Each import check reads the file after
pydantic has typed it, and a check written for the documented shape can still meet another one (a table whose
rows are not pairs, a reference where a number stood, a key dropped by an earlier error of the same union):
the import must then say where and what (path, code, message), never raise TypeError or KeyError. The
samples are broken one place at a time, anywhere in the file, with values of every JSON shape and the near
misses a hand-written ruleset makes."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, sample_dict
from tagengine._internal.errors import RulesetError
from tagengine._internal.ruleset import Ruleset

SAMPLES = [sample_dict(n) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like")]
KEYS = ["const", "field", "derived", "by", "to", "min", "max", "fractionOfMax", "list", "column", "pool", "track",
        "state", "liveState", "kind", "values", "table", "of", "from", "op", "id", "label", "x"]
WORDS = ["", "x", "harm", "level", "lit", "d8", "a\nb", '"q"', "[x]", "{{x}}", "max", "min", "default", "refuse",
         "harder", "indexed", "number", "enum"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 70), st.integers(-(10**12), 10**12),
                    st.sampled_from([0.5, -1.5, 2.0, 1e300]), st.sampled_from(WORDS), st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)), max_leaves=8)
SETTINGS = settings(max_examples=examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CODE = re.compile(r"^[a-z]+(-[a-z]+)*$")


def places(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and list item of the file, as a path from its root."""
    out = [at] if at else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += places(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += places(v, (*at, i))
    return out


def broken(data: dict[str, Any], where: int, value: Any, drop: bool) -> dict[str, Any]:
    """The file with the place numbered `where` (of all its places) replaced by `value`, or removed."""
    d = copy.deepcopy(data)
    path = places(d)[where % len(places(d))]
    node: Any = d
    for part in path[:-1]:
        node = node[part]
    if drop:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


def answered_with_problems(data: dict[str, Any]) -> None:
    """Imports, or raises RulesetError whose every problem has a path, a code and a message."""
    try:
        Ruleset.from_dict(data)
    except RulesetError as e:
        assert e.problems
        for p in e.problems:
            assert isinstance(p.path, str) and p.path, p
            assert isinstance(p.code, str) and CODE.match(p.code), p
            assert isinstance(p.message, str) and p.message, p
            json.dumps(p.value, default=str)  # a value a page or a log can show


@SETTINGS
@given(st.sampled_from(SAMPLES), st.lists(st.tuples(st.integers(0, 10**6), VALUES, st.booleans()), min_size=1,
                                          max_size=3))
def test_a_ruleset_broken_anywhere_is_answered_with_problems(sample, edits):
    data = sample
    for where, value, drop in edits:
        data = broken(data, where, value, drop)
    answered_with_problems(data)


def test_a_union_error_inside_a_value_already_dropped_is_a_problem(fifth):
    """A training bonus that is neither a number nor a reference: pydantic reports the value and each of its
    keys; the value is dropped first, so its keys are already gone (this raised KeyError)."""
    fifth["sheet"]["training"][0]["bonus"] = {"max": [1], "y": 2}
    answered_with_problems(fifth)
    try:
        Ruleset.from_dict(fifth)
    except RulesetError as e:
        assert ("sheet.training[0].bonus", "wrong-type") in [(p.path, p.code) for p in e.problems]
    else:
        raise AssertionError("a bonus of the wrong shape was accepted")


NEAR_MISSES = [None, [], {}, "", "x", 0, -1, True, 1.5, [[0, "a"]], [[1]], [None], {"const": None},
               {"derived": None}, {"x": 1}]


@SETTINGS
@given(st.sampled_from(SAMPLES), st.integers(0, 10**6), st.sampled_from(NEAR_MISSES))
def test_one_place_given_a_near_miss_is_answered_with_problems(sample, where, value):
    """The same, with the wrong values a hand-written file holds: null, an empty list or object, a string for a
    number, a row that is not a pair; one place at a time, so every place of every sample meets them."""
    answered_with_problems(broken(sample, where, value, drop=False))


def test_a_reference_to_null_is_a_problem(gravewatch):
    """`{"const": null}` passed as a reference with its one key, and the checks then read None as a name or a
    number (sorted() raised TypeError); a reference names what it reads."""
    for key in ("const", "derived", "field", "livePool"):
        d = copy.deepcopy(gravewatch)
        d["sheet"]["live"]["pools"][1]["max"] = {key: None}
        answered_with_problems(d)
        try:
            Ruleset.from_dict(d)
        except RulesetError as e:
            assert "sheet.live.pools[1].max" in [p.path for p in e.problems], key
        else:
            raise AssertionError(f"{key}: null accepted")
