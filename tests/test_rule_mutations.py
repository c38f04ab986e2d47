"""The rule-by-rule mutation data stays true to the code (decisions RM-1): each change's text still occurs once in
its file, each changed file still parses, and every built rule has a change. An edit of the engine that moves a
line a change names fails here, with the entry to update, instead of silently leaving its rule unmeasured.

The first check needs only the repository; the two that read the spec skip where it is not beside the checkout
(a user's clone), as the spec-coverage test does."""

from __future__ import annotations

import pytest
import rule_mutate
import spec_coverage

needs_spec = pytest.mark.skipif(not spec_coverage.SPEC.exists(), reason=f"the spec ({spec_coverage.SPEC.name}) is "
                                "not beside this checkout (a user's clone has none)")


def test_every_change_still_applies_once_and_parses():
    for m in rule_mutate.load():
        text = (rule_mutate.ROOT / m.file).read_text(encoding="utf-8")
        assert m.file.startswith("tagengine/") and text.count(m.old) == 1, (m.rule, m.file, m.old[:60])
        compile(text.replace(m.old, m.new), m.file, "exec")  # a change that does not parse would be an error


@needs_spec
def test_every_change_names_a_rule_a_test_cites():
    assert rule_mutate.check(rule_mutate.load(), spec_coverage.collect()) == []


@needs_spec
def test_every_built_rule_has_a_change():
    cov = spec_coverage.collect()
    have = {m.rule for m in rule_mutate.load()}
    assert [r for r in rule_mutate.built_rules(cov) if r not in have] == []
