"""Rule-by-rule mutation: does each rule's own tests fail when the code of that rule is broken? (decisions RM-1..)

Usage: ./dev mutate --rules [RULE...] [--jobs N] [--check] [--no-record] [--verbose]

mutmut (tests/mutate.py) makes every small syntactic change it can and runs the tests that reach it; its score
says little about any one rule. This pass is the other way round: for each rule of SHEETS-SPEC.md the engine
builds, tests/rule_mutations.toml holds at least one hand-written change that breaks exactly what the rule says
(a boundary moved by one, a branch dropped, an allowed type removed, a check skipped): the file, the exact text
to replace (it must occur once), the text put in its place, and why that breaks the rule. Each change is made in
a scratch copy of the package (`.mutants/rules/wN/`, git-ignored; the worktree is never touched) and only the
tests docs/spec-coverage.md cites for that rule are run (tests/spec_coverage.py finds them; the `slow` ones,
which start browsers and servers, are left out). A rule is killed when every one of its changes makes at least
one of those tests fail. The rules whose cited tests did not fail are printed; with no RULE, every rule that has
a change is run, and the result is recorded in tests/rule_mutation_scores.toml, which tests/spec_coverage.py
writes into docs/spec-coverage.md beside mutmut's scores. A survivor that cannot be killed says why in its
entry's `survives` (an equivalent change, or a test that cannot be written).

`--check` only checks the data: each change's text occurs exactly once in its file, each rule is a rule of the
spec, and lists the built rules that have no change yet.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import os
import queue
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spec_coverage  # tests/ is not a package: the generator of the table, beside this file
from mutate import PLUGIN

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "rule_mutations.toml"
SCORES = ROOT / "tests" / "rule_mutation_scores.toml"
WORK = ROOT / ".mutants" / "rules"
COPIED = ("tagengine", "tests")  # copied: the package is mutated; the tests find the package beside them
LINKED = ("grammars", "prompts", "pages", "samples", "docs", "benchmarks", "sillytavern", "README.md",
          "pyproject.toml", "manifest.json")
TIMEOUT = 300  # seconds: a mutant that hangs its tests this long is killed (as mutmut counts a timeout)


@dataclass(frozen=True)
class Mutation:
    rule: str
    file: str
    old: str
    new: str
    why: str
    survives: str = ""  # why this change cannot be killed (equivalent, or no test can be written)


@dataclass
class Outcome:
    mutation: Mutation
    status: str  # killed | survived | no tests | error
    seconds: float
    detail: str = ""


def load(path: Path = DATA) -> list[Mutation]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Mutation(**entry) for entry in data.get("mutation", [])]


def check(mutations: list[Mutation], cov: spec_coverage.Coverage) -> list[str]:
    """What is wrong with the data: a text that no longer occurs exactly once, a rule the spec lacks, a rule no
    test cites (nothing would be run)."""
    known = {r.id for r in cov.rules}
    errors: list[str] = []
    for m in mutations:
        where = f"{m.rule} in {m.file}"
        if m.rule not in known:
            errors.append(f"{where}: no rule {m.rule} in the spec")
        elif m.rule not in cov.cited:
            errors.append(f"{where}: no test cites {m.rule}")
        path = ROOT / m.file
        if not m.file.startswith("tagengine/"):  # only the package is copied: anything else is the worktree's
            errors.append(f"{where}: only files under tagengine/ are mutated (the rest is linked, not copied)")
            continue
        if not path.is_file():
            errors.append(f"{where}: no file {m.file}")
            continue
        found = path.read_text(encoding="utf-8").count(m.old)
        if found != 1:
            errors.append(f"{where}: the old text occurs {found} times (must be once): {m.old[:60]!r}")
        if m.old == m.new:
            errors.append(f"{where}: the new text is the old text")
    return errors


def built_rules(cov: spec_coverage.Coverage) -> list[str]:
    """The rules the engine builds: every rule of the spec that is not out of scope, in the spec's order."""
    return [r.id for r in cov.rules if r.id not in cov.out_of_scope]


def prepare(worker: Path) -> None:
    """A fresh scratch copy: the package and the tests copied, the data folders linked."""
    if worker.exists():
        shutil.rmtree(worker)
    worker.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "output")
    for name in COPIED:
        shutil.copytree(ROOT / name, worker / name, ignore=ignore)
    for name in LINKED:
        if (ROOT / name).exists():
            (worker / name).symlink_to(ROOT / name)
    (worker / "mutation_hypothesis.py").write_text(PLUGIN, encoding="utf-8")


def drop_bytecode(path: Path) -> None:
    """A mutant and its restore can share a second and a size: never let a stale .pyc answer for either."""
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink(missing_ok=True)


def run_one(worker: Path, m: Mutation, tests: list[str], verbose: bool) -> Outcome:
    """Apply one change in the worker's copy, run the rule's cited tests, restore the file."""
    target = worker / m.file
    original = target.read_text(encoding="utf-8")
    if original.count(m.old) != 1:
        return Outcome(m, "error", 0.0, "the old text does not occur exactly once")
    mutated = original.replace(m.old, m.new)
    try:  # a change that does not parse proves nothing: every test would fail on it
        compile(mutated, str(target), "exec")
    except SyntaxError as e:
        return Outcome(m, "error", 0.0, f"the changed file does not parse: {e}")
    target.write_text(mutated, encoding="utf-8")
    drop_bytecode(target)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(worker)  # before the editable install's path to the worktree
    env["COLUMNS"] = "1000"  # pytest cuts its summary lines to the terminal's width: keep the exception's name
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-p",
           "mutation_hypothesis", "-W", "ignore", "-o", "addopts=", *tests]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=worker, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        code, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, out = 1, f"timed out after {TIMEOUT} s"
    finally:
        target.write_text(original, encoding="utf-8")
        drop_bytecode(target)
    seconds = time.monotonic() - start
    # 1: a test failed. 2 or 4 (a test module, or the test named, not collected): a kill when the change made a test
    # module's setup fail (a sample it loads refused), an error when the changed package does not even import (a
    # NameError is no rule broken).
    status = {0: "survived", 1: "killed", 5: "no tests"}.get(code, "error")
    broken = ("NameError", "ImportError", "ModuleNotFoundError", "SyntaxError")
    if code in (2, 4) and "ERROR collecting" in out and not any(e in out for e in broken):
        status = "killed"
    tail = "\n".join(out.strip().splitlines()[-3:])
    if verbose or status == "error":
        print(f"--- {m.rule} ({m.file}): exit {code}\n{tail}", flush=True)
    return Outcome(m, status, seconds, failure(out) if status == "killed" else tail)


def failure(out: str) -> str:
    """How the first failing test failed, from pytest's short summary: `assert` when an assertion (or
    pytest.raises) caught the change, else the exception's name. A kill by a crash (a TypeError in the changed
    code) may mean the change broke the code, not the rule: the summary lists those to be read."""
    m = re.search(r"^(?:FAILED|ERROR) .+? - ([\w.]+)", out, re.MULTILINE)
    if m is None:
        return "collecting" if "ERROR collecting" in out else "?"
    name = m.group(1).rsplit(".", 1)[-1]
    return "assert" if name in ("assert", "AssertionError", "Failed") else name


def node_ids(cited: list[str]) -> list[str]:
    """`file.py::Class::test` as the table writes it -> `tests/file.py::Class::test` for pytest."""
    return sorted({f"tests/{t}" for t in cited})


def run(mutations: list[Mutation], cov: spec_coverage.Coverage, jobs: int, verbose: bool) -> list[Outcome]:
    workers: queue.Queue[Path] = queue.Queue()
    for n in range(jobs):
        worker = WORK / f"w{n}"
        prepare(worker)
        workers.put(worker)

    def task(m: Mutation) -> Outcome:
        worker = workers.get()
        try:
            return run_one(worker, m, node_ids(cov.cited.get(m.rule, [])), verbose)
        finally:
            workers.put(worker)

    outcomes: list[Outcome] = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for o in pool.map(task, mutations):
            mark = {"killed": ".", "survived": "S", "no tests": "0"}.get(o.status, "E")
            print(f"{mark} {o.mutation.rule:10} {o.status:9} {o.seconds:6.1f} s  {o.mutation.why[:70]}", flush=True)
            outcomes.append(o)
    return outcomes


def by_rule(outcomes: list[Outcome]) -> dict[str, str]:
    """A rule is killed when each of its changes is killed; else the first status that is not a kill."""
    status: dict[str, str] = {}
    for o in outcomes:
        rule = o.mutation.rule
        if status.get(rule, "killed") == "killed":
            status[rule] = o.status
    return status


def record(outcomes: list[Outcome], seconds: float, whole: bool, jobs: int) -> None:
    """Rewrite tests/rule_mutation_scores.toml: one entry per rule (kept from earlier runs for rules not run),
    and the whole pass's time when every rule was run."""
    data = tomllib.loads(SCORES.read_text(encoding="utf-8")) if SCORES.exists() else {}
    rules: dict[str, dict[str, object]] = dict(data.get("rules", {}))
    statuses = by_rule(outcomes)
    per_rule: dict[str, float] = {}
    for o in outcomes:
        per_rule[o.mutation.rule] = per_rule.get(o.mutation.rule, 0.0) + o.seconds
    for rule, status in statuses.items():
        rules[rule] = {"status": status, "seconds": round(per_rule[rule], 1)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    run_info: dict[str, object] = dict(data.get("pass", {}))
    if whole:
        run_info = {"seconds": round(seconds), "jobs": jobs, "mutations": len(outcomes),
                    "date": datetime.date.today().isoformat(), "commit": commit}
    lines = ["# The rule-by-rule mutation pass (`./dev mutate --rules`, tests/rule_mutate.py): each rule's status",
             "# (killed: every change of it in tests/rule_mutations.toml failed a test cited for it). Read by",
             "# tests/spec_coverage.py.", "", "[pass]"]
    lines += [f"{k} = {_toml(v)}" for k, v in run_info.items()]
    lines += ["", "[rules]"]
    order = {r: i for i, r in enumerate(spec_rule_order())}
    for rule in sorted(rules, key=lambda r: order.get(r, 10**6)):
        entry = rules[rule]
        lines.append(f'"{rule}" = {{ status = "{entry["status"]}", seconds = {entry["seconds"]} }}')
    SCORES.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _toml(v: object) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def spec_rule_order() -> list[str]:
    return [r.id for r in spec_coverage.parse_spec(spec_coverage.SPEC.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rules", nargs="*", help="rule IDs (WOUND-7); none: every rule with a change")
    ap.add_argument("--jobs", type=int, default=2, help="changes tested at once (one scratch copy each)")
    ap.add_argument("--check", action="store_true", help="only check the data and list built rules without one")
    ap.add_argument("--no-record", action="store_true", help="do not write tests/rule_mutation_scores.toml")
    ap.add_argument("--verbose", action="store_true", help="print the end of each test run")
    args = ap.parse_args(argv)
    cov = spec_coverage.collect()
    mutations = load()
    errors = check(mutations, cov)
    for e in errors:
        print(f"rule_mutations.toml: {e}", file=sys.stderr)
    have = {m.rule for m in mutations}
    built = built_rules(cov)
    missing = [r for r in built if r not in have]
    if args.check:
        print(f"{len(have & set(built))} of {len(built)} built rules have a change; without one: "
              + (" ".join(missing) or "none"))
        return 1 if errors else 0
    if errors:
        return 2
    wanted = [r.upper() for r in args.rules]
    unknown = [r for r in wanted if r not in have]
    if unknown:
        ap.error(f"no change for {' '.join(unknown)} in {DATA.relative_to(ROOT)}")
    chosen = [m for m in mutations if not wanted or m.rule in wanted]
    start = time.monotonic()
    outcomes = run(chosen, cov, max(1, args.jobs), args.verbose)
    seconds = time.monotonic() - start
    statuses = by_rule(outcomes)
    killed = sum(s == "killed" for s in statuses.values())
    explained = {m.rule: m.survives for m in chosen if m.survives}
    print(f"\n{killed} of {len(statuses)} rules killed ({100 * killed / max(1, len(statuses)):.1f}%) by their cited "
          f"tests, {len(outcomes)} changes in {seconds:.0f} s")
    crashes = [(o.mutation.rule, o.detail) for o in outcomes if o.status == "killed" and o.detail != "assert"]
    if crashes:
        print("killed by something other than an assertion (read these: the change may break the code, not the "
              "rule): " + ", ".join(f"{r} ({how})" for r, how in crashes))
    alive = [r for r, s in statuses.items() if s != "killed"]
    if alive:
        print("rules whose cited tests did not fail:")
        for r in alive:
            note = f"  (explained: {explained[r]})" if r in explained else ""
            whys = "; ".join(o.mutation.why for o in outcomes if o.mutation.rule == r and o.status != "killed")
            print(f"  {r} [{statuses[r]}]: {whys}{note}")
        print("rerun one with: ./dev mutate --rules RULE --verbose")
    if not args.no_record:
        record(outcomes, seconds, whole=not wanted, jobs=args.jobs)
    return 1 if alive else 0


if __name__ == "__main__":
    sys.exit(main())
