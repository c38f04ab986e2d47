"""docs/spec-coverage.md is current, and every in-scope rule of the spec is cited by a test (or still pending)."""

from __future__ import annotations

import textwrap

import pytest
import spec_coverage as sc

pytestmark = pytest.mark.skipif(not sc.SPEC.exists(), reason=f"the spec ({sc.SPEC.name}) is not in ../shared/spec "
                                "beside this checkout (a user's clone has none): rule coverage is checked where it is")


@pytest.fixture(scope="module")
def cov() -> sc.Coverage:
    return sc.collect()


def test_doc_is_current(cov):
    assert sc.DOC.read_text(encoding="utf-8") == sc.render(cov), "run: python tests/spec_coverage.py --write"


def test_every_in_scope_rule_is_cited_or_pending(cov):
    assert cov.uncovered() == [], "cite these in a test that checks them, or say in tests/spec_scope.toml why not"


def test_scope_file_names_real_uncited_rules(cov):
    """A pending rule that is now cited must leave the list, so the list only shrinks."""
    assert cov.scope_errors == []


def test_citations_name_rules_the_spec_has(cov):
    assert cov.unknown == {}


def test_the_spec_has_its_rules(cov):
    """The spec parser finds every area's rules, in order (a parser that finds nothing would pass the rest)."""
    assert len(cov.rules) == len({r.id for r in cov.rules}) > 250
    assert {r.id.split("-")[0] for r in cov.rules} == set(sc.PREFIXES)
    assert [r.id for r in cov.rules[:3]] == ["SHEET-1", "SHEET-2", "SHEET-3"]


def test_citations_are_per_test_and_ranges_do_not_count(tmp_path):
    """Name, docstring, decorators (with the constants they name) and body comments cite; module docstrings,
    other constants, strings and ranges do not."""
    (tmp_path / "test_x.py").write_text(textwrap.dedent('''
        """Module docstring: WOUND-1 does not count."""
        import pytest

        def test_wound_2_3_by_name():
            # WOUND-11 before the first statement
            assert "WOUND-4" == "WOUND-4"  # strings do not cite; this comment cites WOUND-5

        CASES = [pytest.param(2, id="WOUND-9")]
        OTHER = "WOUND-10"

        @pytest.mark.parametrize("x", [pytest.param(1, id="WOUND-6")])
        @pytest.mark.parametrize("y", CASES)
        def test_param(x, y):
            """Checks WOUND-7, not the range WOUND-15..60 nor [REF-11] to [REF-15]."""

        class TestGroup:
            def test_in_class(self):
                pass  # GMREF-1 only

        def helper():
            pass  # WOUND-8: not a test
    '''))
    found = sc.citations_in_file(tmp_path / "test_x.py")
    assert found == {
        "test_wound_2_3_by_name": {"WOUND-2", "WOUND-3", "WOUND-5", "WOUND-11"},
        "test_param": {"WOUND-6", "WOUND-7", "WOUND-9"},
        "TestGroup::test_in_class": {"GMREF-1"},
    }


def test_stale_doc_makes_the_script_exit_1(cov, monkeypatch, tmp_path, capsys):
    stale = tmp_path / "spec-coverage.md"
    stale.write_text(sc.render(cov).replace("| SHEET-1 |", "| SHEET-1 (old) |"), encoding="utf-8")
    monkeypatch.setattr(sc, "DOC", stale)
    assert sc.main([]) == 1
    assert "SHEET-1 (old)" in capsys.readouterr().out
    assert sc.main(["--write"]) == 0 and sc.main([]) == 0


def test_not_citations_drop_a_name_that_overclaims_and_must_stay_current(tmp_path):
    (tmp_path / "test_y.py").write_text("def test_track_1_7_x():\n    pass\n")
    scope = tmp_path / "scope.toml"
    scope.write_text('[not_citations]\n"test_y.py::test_track_1_7_x" = { rules = ["TRACK-7"], why = "range" }\n')
    cov = sc.collect(tests=tmp_path, scope=scope)
    assert "TRACK-1" in cov.cited and "TRACK-7" not in cov.cited and cov.scope_errors == []
    scope.write_text('[not_citations]\n"test_y.py::test_track_1_7_x" = { rules = ["TRACK-5"], why = "stale" }\n')
    assert sc.collect(tests=tmp_path, scope=scope).scope_errors != []
