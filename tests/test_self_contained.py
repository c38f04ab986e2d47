"""Issue 25: the tests pass on a clone with nothing beside it. No test reads outside the repository (`../shared`,
the folder beside the checkout) except the spec-coverage check, which needs the spec and skips saying why.
`.ci/run` proves it by running the suite again from such a clone; this test names the offending line sooner."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

TESTS = ROOT / "tests"
# The spec-coverage check reads ../shared/spec/SHEETS-SPEC.md (tests/spec_coverage.py) and skips without it.
MAY_READ_SHARED = {"spec_coverage.py", "test_spec_coverage.py"}
OPENERS = {"Path", "open", "PurePath", "read_text", "read_bytes", "chdir"}  # what opens or names a path given to it


def outside_reads(path: Path) -> list[str]:
    """The lines of a test file that name a place outside the repository: `ROOT.parent`, a `shared` path part,
    `..` out of the tests, an absolute path to this machine's folders. Docstrings may talk about them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    in_paths = {id(side) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                for side in (n.left, n.right)}  # the parts of a `path / "part"` expression
    in_paths |= {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call) and
                 (n.func.id if isinstance(n.func, ast.Name) else n.func.attr if isinstance(n.func, ast.Attribute)
                  else "") in OPENERS for a in n.args}  # `Path("../x")`, `open("../x")`
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "parent" and isinstance(node.value, ast.Name) and \
                node.value.id == "ROOT":
            found.append((node.lineno, "ROOT.parent"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            # a `../` that is not opened is data (a hostile form field: `{"../../etc/passwd": "1"}`)
            if (text == "shared" and id(node) in in_paths) or "../shared" in text or text.startswith("/work/") or \
                    (text.startswith("../") and id(node) in in_paths):
                found.append((node.lineno, repr(text[:60])))
    return [f"{path.name}:{line}: {what}" for line, what in sorted(found)]


def test_no_test_reads_outside_the_repository():
    found = [line for p in sorted(TESTS.glob("*.py")) if p.name not in MAY_READ_SHARED and p != Path(__file__)
             for line in outside_reads(p)]
    assert not found, "a clone of the project has none of these (use the repository's own files):\n" + "\n".join(
        found)


def test_the_scan_sees_each_way_of_reaching_out(tmp_path):
    sample = tmp_path / "test_x.py"
    sample.write_text('"""Reads ../shared, in words only."""\nfrom conftest import ROOT\n'
                      'a = ROOT.parent / "shared" / "bench"\nb = "../shared/corpus"\nc = "/work/x"\n'
                      'd = {"../../etc/passwd": "1"}\ne = Path("../x")\nf = ROOT / "../y"\n')
    assert [line.split(":")[1] for line in outside_reads(sample)] == ["3", "3", "4", "5", "7", "8"]


def test_the_spec_coverage_check_says_why_it_skips():
    """The one test that may need ../shared skips with a reason that names it, not an error."""
    text = (TESTS / "test_spec_coverage.py").read_text(encoding="utf-8")
    assert "pytest.mark.skipif(not sc.SPEC.exists()" in text and "../shared" in text
