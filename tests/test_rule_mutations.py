"""The rule-by-rule mutation data stays true to the code (decisions RM-1): each change's text still occurs once in
its file, each changed file still parses, and every built rule has a change. An edit of the engine that moves a
line a change names fails here, with the entry to update, instead of silently leaving its rule unmeasured."""

from __future__ import annotations

import rule_mutate
import spec_coverage


def test_every_change_still_applies_once_and_parses():
    cov = spec_coverage.collect()
    changes = rule_mutate.load()
    assert rule_mutate.check(changes, cov) == []
    for m in changes:
        text = (rule_mutate.ROOT / m.file).read_text(encoding="utf-8").replace(m.old, m.new)
        compile(text, m.file, "exec")  # a change that does not parse would be counted as an error, not a kill


def test_every_built_rule_has_a_change():
    cov = spec_coverage.collect()
    have = {m.rule for m in rule_mutate.load()}
    assert [r for r in rule_mutate.built_rules(cov) if r not in have] == []
