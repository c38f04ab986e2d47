"""Generate docs/spec-coverage.md: every rule ID of SHEETS-SPEC.md, the tests that cite it, or why it is out of scope.

Usage: python tests/spec_coverage.py [--write] [--spec PATH]

Without --write the script prints the difference to the committed doc and exits 1 when the doc is stale.

A test cites a rule when the exact ID (``WOUND-17``) appears in the test function's docstring, in one of its
decorators (for example a ``pytest.mark.parametrize`` id, also when the decorator takes its cases from a module
constant), or in a comment inside its body; or when its name holds
the ID in snake case (``test_wound_17_...``). Module docstrings, class docstrings and ranges (``WOUND-15..60``,
``[REF-11] to [REF-15]``) do not count: a citation says that this one test checks this one rule.

Out-of-scope rules (with the reason), the rules still waiting for a test (``pending``) and test names that list a
rule their test does not check (``not_citations``) live in tests/spec_scope.toml, so the doc is reproducible from
the repository and the spec alone.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import sys
import tokenize
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
DOC = ROOT / "docs" / "spec-coverage.md"
SCOPE = TESTS / "spec_scope.toml"
MUTATION = TESTS / "mutation_scores.toml"  # written by `./dev mutate MODULE` (tests/mutate.py)
RULE_MUTATIONS = TESTS / "rule_mutations.toml"  # the hand-written change(s) of each rule (tests/rule_mutate.py)
RULE_SCORES = TESTS / "rule_mutation_scores.toml"  # written by `./dev mutate --rules` (tests/rule_mutate.py)
SPEC = ROOT.parent / "shared" / "spec" / "SHEETS-SPEC.md"

PREFIXES = ("ADJ", "CAP", "CLOCK", "ENUM", "GM", "GMREF", "HIDE", "PARTY", "PEN", "REF", "REST", "SHEET", "STATE",
            "TRACK", "UNTR", "WOUND")
_ALT = "|".join(sorted(PREFIXES, key=len, reverse=True))
# An ID not glued to a longer word or number (GM-1 is not GMREF-1, WOUND-1 is not WOUND-17).
ID_RE = re.compile(rf"(?<![A-Za-z0-9_-])({_ALT})-(\d+)(?![0-9])")
# test_wound_17_... -> WOUND-17; test_wound_15_17_... -> WOUND-15 and WOUND-17 (a name cannot write a range)
NAME_RE = re.compile(rf"(?:^|_)({_ALT.lower()})((?:_\d+)+)(?=_|$)")
# A range after an ID: "..31", "-31", "–31", " to 31", " to [WOUND-31]"
RANGE_AFTER = re.compile(rf"\]?(?:\s*(?:\.\.|–|—)\s*|\s+to\s+)\[?(?:(?:{_ALT})-)?\d")
# ...and before one: "WOUND-15..WOUND-31", "[REF-11] to [REF-15]"
RANGE_BEFORE = re.compile(rf"(?:{_ALT})-\d+\]?(?:\s*(?:\.\.|–|—)\s*|\s+to\s+)\[?$")
RULE_LINE = re.compile(rf"^- \[(({_ALT})-\d+)\]\s*(.*)$")


@dataclass
class Rule:
    id: str
    section: str
    text: str


@dataclass
class Coverage:
    rules: list[Rule]
    cited: dict[str, list[str]] = field(default_factory=dict)  # rule id -> ["file.py::test", ...]
    unknown: dict[str, list[str]] = field(default_factory=dict)  # cited ids the spec lacks
    out_of_scope: dict[str, str] = field(default_factory=dict)  # rule id -> reason
    pending: dict[str, str] = field(default_factory=dict)  # rule id -> what is missing
    not_citations: dict[str, tuple[list[str], str]] = field(default_factory=dict)  # test -> (rule ids, why)
    scope_errors: list[str] = field(default_factory=list)

    def uncovered(self) -> list[str]:
        """In-scope rules that no test cites and that are not pending: the test fails on these."""
        return [r.id for r in self.rules
                if r.id not in self.cited and r.id not in self.out_of_scope and r.id not in self.pending]


def parse_spec(text: str) -> list[Rule]:
    """Every rule bullet ``- [ID] text`` in document order, with the number of the section it sits in."""
    rules: list[Rule] = []
    section = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#"):
            m = re.match(r"#+\s+([0-9.]+)", line)
            if m:
                section = m.group(1).rstrip(".")
            continue
        m = RULE_LINE.match(line)
        if not m:
            continue
        body = m.group(3)
        j = i + 1
        # a rule's wrapped lines, up to its first sub-bullet, table or code block
        while j < len(lines) and lines[j].startswith("  ") and not lines[j].lstrip().startswith(
                ("-", "|", "```", "1.")):
            body += " " + lines[j].strip()
            j += 1
        rules.append(Rule(m.group(1), section, summary(body)))
    return rules


def summary(body: str, limit: int = 90) -> str:
    """The first sentence of a rule, short enough for one table cell."""
    body = re.sub(r"\s+", " ", body).strip()
    first = re.split(r"(?<=\.)\s", body, maxsplit=1)[0]
    if len(first) > limit:
        first = first[: limit - 1].rsplit(" ", 1)[0] + "…"
    return first.replace("|", "\\|")


def ids_in(text: str) -> set[str]:
    """Exact rule IDs in a text, leaving out both ends of a range."""
    found: set[str] = set()
    for m in ID_RE.finditer(text):
        if RANGE_AFTER.match(text, m.end()) or RANGE_BEFORE.search(text[max(0, m.start() - 24): m.start()]):
            continue
        found.add(f"{m.group(1)}-{int(m.group(2))}")
    return found


def ids_in_name(name: str) -> set[str]:
    return {f"{p.upper()}-{int(n)}" for p, nums in NAME_RE.findall(name) for n in nums.strip("_").split("_")}


def _comments(source: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = out.get(tok.start[0], "") + tok.string
    return out


def citations_in_file(path: Path) -> dict[str, set[str]]:
    """test name -> rule IDs its name, docstring, decorators or body comments cite."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    comments = _comments(source)
    # a parametrize list kept in a module constant (`@pytest.mark.parametrize("x", CASES)`) is the test's own
    constants: dict[str, str] = {}
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Name):
                constants[t.id] = ast.get_source_segment(source, node) or ""
    out: dict[str, set[str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}::")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and child.name.startswith("test"):
                ids = ids_in_name(child.name)
                ids |= ids_in(ast.get_docstring(child, clean=False) or "")
                for dec in child.decorator_list:
                    ids |= ids_in(ast.get_source_segment(source, dec) or "")
                    for name in ast.walk(dec):
                        if isinstance(name, ast.Name) and name.id in constants:
                            ids |= ids_in(constants[name.id])
                # comments from the def line (after the colon) to the last line of the body
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    ids |= ids_in(comments.get(line, ""))
                out[f"{prefix}{child.name}"] = ids

    visit(tree, "")
    return out


def load_scope(path: Path) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[list[str], str]]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out_of_scope: dict[str, str] = {}
    for group in data.get("out_of_scope", {}).values():
        for rid in group["rules"]:
            out_of_scope[rid] = group["why"]
    pending = dict(data.get("pending", {}))
    not_citations = {test: (list(v["rules"]), v["why"]) for test, v in data.get("not_citations", {}).items()}
    return out_of_scope, pending, not_citations


def collect(spec: Path = SPEC, tests: Path = TESTS, scope: Path = SCOPE) -> Coverage:
    cov = Coverage(parse_spec(spec.read_text(encoding="utf-8")))
    known = {r.id for r in cov.rules}
    cov.out_of_scope, cov.pending, cov.not_citations = load_scope(scope)
    unused = {(test, rid) for test, (rids, _) in cov.not_citations.items() for rid in rids}
    for path in sorted(tests.glob("test_*.py")):
        for test, ids in citations_in_file(path).items():
            where = f"{path.name}::{test}"
            for rid in sorted(ids):
                if (where, rid) in unused:  # the name lists a rule the test does not check
                    unused.discard((where, rid))
                    continue
                (cov.cited if rid in known else cov.unknown).setdefault(rid, []).append(where)
    for where, rid in sorted(unused):
        cov.scope_errors.append(f"not_citations: {where} does not cite {rid} (or no longer exists)")
    for name, table in (("out_of_scope", cov.out_of_scope), ("pending", cov.pending)):
        for rid in table:
            if rid not in known:
                cov.scope_errors.append(f"{name} names {rid}, which the spec does not have")
            elif rid in cov.cited:
                cov.scope_errors.append(f"{rid} is in {name} but cited by {', '.join(cov.cited[rid])}: "
                                        f"remove it from {name}")
    for rid in set(cov.out_of_scope) & set(cov.pending):
        cov.scope_errors.append(f"{rid} is both out of scope and pending")
    return cov


def render(cov: Coverage) -> str:
    by_prefix: dict[str, list[Rule]] = {}
    for r in cov.rules:
        by_prefix.setdefault(r.id.split("-")[0], []).append(r)
    total = len(cov.rules)
    n_cited = sum(1 for r in cov.rules if r.id in cov.cited)
    n_out = sum(1 for r in cov.rules if r.id in cov.out_of_scope)
    n_pending = sum(1 for r in cov.rules if r.id in cov.pending)
    lines = [
        "# Spec coverage",
        "",
        "<!-- Generated by `python tests/spec_coverage.py --write`; tests/test_spec_coverage.py fails when stale. -->",
        "",
        "Every rule of `SHEETS-SPEC.md` with the tests that cite it by its own ID (in the test's name, docstring, "
        "decorators or a comment in its body), or the reason it is out of scope (`tests/spec_scope.toml`).",
        "",
        f"- rules: {total}",
        f"- cited by at least one test: {n_cited}",
        f"- out of scope: {n_out}",
        f"- pending (in scope, no citing test yet): {n_pending}",
        f"- neither: {len(cov.uncovered())}",
        "",
        "| Area | Rules | Cited | Out of scope | Pending |",
        "|---|---:|---:|---:|---:|",
    ]
    for prefix, rules in by_prefix.items():
        ids = [r.id for r in rules]
        lines.append(f"| [{prefix}](#{prefix.lower()}) | {len(ids)} | {sum(i in cov.cited for i in ids)} | "
                     f"{sum(i in cov.out_of_scope for i in ids)} | {sum(i in cov.pending for i in ids)} |")
    for prefix, rules in by_prefix.items():
        lines += ["", f"## {prefix}", "", "| Rule | § | Rule text (first sentence) | Tests |", "|---|---|---|---|"]
        for r in rules:
            if r.id in cov.cited:
                status = "<br>".join(f"`{t}`" for t in cov.cited[r.id])
            elif r.id in cov.out_of_scope:
                status = f"out of scope: {cov.out_of_scope[r.id]}"
            elif r.id in cov.pending:
                status = f"**PENDING**: {cov.pending[r.id]}"
            else:
                status = "**NOT COVERED**"
            lines.append(f"| {r.id} | {r.section} | {r.text} | {status} |")
    lines += mutation_section()
    lines += rule_mutation_section(cov)
    if cov.not_citations:
        lines += ["", "## Names that list a rule their test does not check", "",
                  "These mentions are not counted (`[not_citations]` in `tests/spec_scope.toml`).", "",
                  "| Test | Rules | Why |", "|---|---|---|"]
        for test, (rids, why) in sorted(cov.not_citations.items()):
            lines.append(f"| `{test}` | {', '.join(rids)} | {why} |")
    return "\n".join(lines) + "\n"


def mutation_section(path: Path = MUTATION) -> list[str]:
    """The mutation score of each engine module, as `./dev mutate MODULE` last recorded it (decisions MU-2)."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    lines = ["", "## Mutation testing", "",
             "Do the tests fail when a rule breaks? `./dev mutate MODULE` (tests/mutate.py, mutmut 3) breaks each "
             "module's code one small change at a time and runs the tests that reach it. A score is killed / "
             "mutants a test reaches; every survivor is killed with a test or explained in "
             "[mutation.md](mutation.md). A module too big to run whole in the time there was is measured on a "
             "random sample of its mutants (decisions MU-3): its score is an estimate, given with its 95% interval.",
             "",
             "| Module | Killed | Reached | Score | Survived | Not reached | Run |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, m in sorted(data.items()):
        pct = 100 * m["killed"] / max(1, m["reached"])
        score = f"{pct:.1f}%"
        if m.get("sampled"):  # MU-3: an estimate from a random sample of the module's mutants
            low, high = m["interval"]
            score = (f"{pct:.1f}% in a sample (95%: {low}-{high}%) of {m['sample']} "
                     f"of {m['mutants']} mutants")
        lines.append(f"| `{name}/` | {m['killed']} | {m['reached']} | {score} "
                     f"| {m['survived']} | {m['no_tests']} | {m['date']} at `{m['commit']}` |")
    if not data:
        lines.append("| (no run recorded) | | | | | | |")
    return lines


def rule_mutation_section(cov: Coverage, data_path: Path = RULE_MUTATIONS,
                          scores_path: Path = RULE_SCORES) -> list[str]:
    """The rule-by-rule pass (decisions RM-1..): the share of built rules whose cited tests fail when the rule's
    own change is made, the pass's time, and every rule whose tests did not fail with why."""
    changes = tomllib.loads(data_path.read_text(encoding="utf-8")).get("mutation", []) if data_path.exists() else []
    scores = tomllib.loads(scores_path.read_text(encoding="utf-8")) if scores_path.exists() else {}
    built = [r.id for r in cov.rules if r.id not in cov.out_of_scope]
    status = {rid: v["status"] for rid, v in scores.get("rules", {}).items()}
    run = scores.get("pass", {})
    with_change = {c["rule"] for c in changes}
    killed = [r for r in built if status.get(r) == "killed"]
    measured = [r for r in built if r in status]
    lines = ["", "## Rule-by-rule mutation", "",
             "mutmut's scores above count syntactic changes; this pass breaks each rule on purpose. For every built "
             "rule, `tests/rule_mutations.toml` holds one or more hand-written changes that break exactly what the "
             "rule says (a limit moved by one, an allowed type dropped, a branch or a check skipped); "
             "`./dev mutate --rules` (tests/rule_mutate.py, decisions RM-1..RM-4) makes each in a scratch copy and "
             "runs only the tests this table cites for that rule. A rule is killed when each of its changes fails "
             "at least one of them.", ""]
    share = f"{100 * len(killed) / max(1, len(measured)):.1f}%"
    lines.append(f"- built rules: {len(built)}; with a change: {len(with_change & set(built))}; changes: "
                 f"{len(changes)}")
    lines.append(f"- killed by their own cited tests: **{len(killed)} of {len(measured)} ({share})**")
    if run:
        lines.append(f"- the whole pass: {len(changes) if run.get('mutations') is None else run['mutations']} "
                     f"changes in {run['seconds']} s with {run['jobs']} jobs on two shared cores, {run['date']} at "
                     f"`{run['commit']}`")
    lines += ["- rerun one rule: `./dev mutate --rules WOUND-7` (add `--verbose` to see its tests' output); "
              "the whole pass: `./dev mutate --rules`; check the data only: `./dev mutate --rules --check`", ""]
    explained = {c["rule"]: c["survives"] for c in changes if c.get("survives")}
    alive = [r for r in measured if status[r] != "killed"]
    missing = [r for r in built if r not in with_change]
    if measured and not alive:
        lines.append("- not killed: none. A change its rule's tests cannot kill is listed here with why "
                     "(`survives` in its entry: equivalent, or a test that cannot be written); the pass also prints "
                     "the kills made by a crash rather than an assertion, to be read")
    if alive:
        lines += ["| Rule not killed | Status | Why |", "|---|---|---|"]
        for r in alive:
            lines.append(f"| {r} | {status[r]} | {explained.get(r, '**not explained**')} |")
    if missing:
        lines += ["", "Built rules with no change yet: " + ", ".join(missing)]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite docs/spec-coverage.md")
    ap.add_argument("--spec", type=Path, default=SPEC)
    args = ap.parse_args(argv)
    cov = collect(args.spec)
    text = render(cov)
    for err in cov.scope_errors:
        print(f"scope: {err}", file=sys.stderr)
    for rid, where in sorted(cov.unknown.items()):
        print(f"unknown rule {rid} cited by {', '.join(where)}", file=sys.stderr)
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC.name}: {len(cov.rules)} rules, {len(cov.uncovered())} neither cited, "
              f"out of scope nor pending")
        return 0
    old = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if old == text:
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                               "docs/spec-coverage.md", "generated"))
    print("docs/spec-coverage.md is stale: run python tests/spec_coverage.py --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
