"""Mutation testing of one engine module: do its tests fail when its code is broken? (decisions MU-1, MU-2)

Usage: ./dev mutate MODULE [--jobs N] [--again] [--sample N [--seed S]] [--tests FILE...] [--no-record]

MODULE is a folder or a file under tagengine/_internal (`commands`, `sheet`, `tags`, `ruleset/inspect`). mutmut 3
breaks its code one small change at a time (a `<` for a `<=`, a constant, a dropped argument...) and runs, for
each change, the tests that reach the function it changed. A mutant no test fails on "survives". The score is
killed / mutants a test reaches (mutmut's "no tests" mutants are in functions no engine test calls).

The run happens in a scratch copy, `.mutants/<module>/` (git-ignored): the worktree is never mutated. The
engine's tests are used, not the server, page, SillyTavern, Dask and wheel tests: those start other processes
(uvicorn, Chromium, npm, a Dask cluster, pip), which a forked mutant cannot reach, and they are slow.
`--again` keeps the earlier results and runs only what has not been killed yet, with the tests copied afresh
(after adding a test for a survivor). `--sample N` tests only N of the module's mutants, drawn at random with a
fixed seed from all of them (when a whole run would take longer than there is time for): the score is then an
estimate, recorded with the sample's size and its 95% interval (decisions MU-3). The score is written to
tests/mutation_scores.toml, from which tests/spec_coverage.py writes the table in docs/spec-coverage.md; the
survivors are listed, each to be killed with a test or explained as equivalent in docs/mutation.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutants"
SCORES = ROOT / "tests" / "mutation_scores.toml"
COPIED = ("tagengine", "tests", "grammars", "prompts", "pages", "samples", "docs", "benchmarks", "README.md",
          "pyproject.toml")
LEFT_OUT = re.compile(r"test_(serve|st_|pages|replay|wheel|cold_start|cli|files_exits|chat_stream|docs|house|"
                      r"spec_coverage|tokenizers|mistral|prefix_memo|tag_kinds|family_margins)")
# Decorators mutmut must keep skipping: a cache filled by the clean run would answer for the mutant.
CACHES = frozenset({"cache", "lru_cache", "cached_property"})
SAMPLED = "sample.json"  # in a module's scratch copy: the run tested a sample (its size and seed)


PROPERTY_EXAMPLES = 40
PLUGIN = f'''"""Loaded by tests/mutate.py into each mutation run (`-p mutation_hypothesis`): property tests try at most
{PROPERTY_EXAMPLES} examples, the same ones every run (derandomized), so a mutant's verdict does not depend on luck
and a survivor does not run thousands of examples. The suite itself (./dev test) keeps its own numbers."""

import hypothesis

_init = hypothesis.settings.__init__


def _capped(self, parent=None, **kwargs):
    kwargs["max_examples"] = min(kwargs.get("max_examples", {PROPERTY_EXAMPLES}), {PROPERTY_EXAMPLES})
    kwargs.update(derandomize=True, database=None, deadline=None)
    _init(self, parent, **kwargs)


hypothesis.settings.__init__ = _capped
hypothesis.settings.register_profile("mutation", max_examples={PROPERTY_EXAMPLES})
hypothesis.settings.load_profile("mutation")
'''


def engine_tests() -> list[str]:
    return [f"tests/{p.name}" for p in sorted((ROOT / "tests").glob("test_*.py")) if not LEFT_OUT.match(p.name)]


def decorator_name(dec: Any) -> str:
    """The last name of a decorator expression: `functools.lru_cache(maxsize=8)` reads as `lru_cache`."""
    import libcst as cst

    node = dec.decorator
    while isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return str(node.attr.value)
    return str(getattr(node, "value", ""))


def mutate_decorated_functions() -> None:
    """mutmut 3 skips every function with a decorator (its copies would be decorated again). The sheet ops
    (`@character_op`) and clock ops (`@clock_op`) all have one, so: mutate them, keep the decorator on the
    function mutmut swaps in (the trampoline) and take it off the original's copy and the mutants'. Caches
    stay skipped; `staticmethod` and `classmethod` are mutmut's own business."""
    import libcst as cst
    from libcst.metadata import PositionProvider
    from mutmut.mutation import file_mutation as fm

    native = {"staticmethod", "classmethod"}

    def ours(node: Any) -> bool:
        names = {decorator_name(d) for d in node.decorators}
        return isinstance(node, cst.FunctionDef) and bool(names) and not names & (CACHES | native)

    skip = fm.MutationVisitor._skip_node_and_children

    def skip_node_and_children(self: Any, node: Any) -> bool:
        if isinstance(node, cst.FunctionDef) and ours(node):
            position = self.get_metadata(PositionProvider, node, None)
            if position and position.start.line in self._ignored_node_lines:  # `# pragma: no mutate block`
                self.ignored_functions.add(node.name.value)
                return True
            return node.name.value in fm.NEVER_MUTATE_FUNCTION_NAMES
        return bool(skip(self, node))

    arrange = fm.function_trampoline_arrangement

    def arrangement(function: Any, mutants: Any, class_name: str | None) -> Any:
        declared, nodes, assigned, names = arrange(function, mutants, class_name)
        if ours(function):  # nodes[0] is the trampoline; the rest are the original's copy and the mutants
            nodes = [nodes[0], *(n.with_changes(decorators=[]) for n in nodes[1:])]
        return declared, nodes, assigned, names

    fm.MutationVisitor._skip_node_and_children = skip_node_and_children  # type: ignore[method-assign]
    fm.function_trampoline_arrangement = arrangement


def prepare(work: Path, module: str, tests: list[str], again: bool) -> None:
    """The scratch copy: links to the repository's folders (mutmut copies them into `mutants/`), and a
    pyproject.toml that says what to mutate and which tests to run."""
    if not again and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for name in COPIED[:-1]:
        link = work / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    if again:  # the tests may have changed since: copy them afresh, and find again which tests reach what
        shutil.rmtree(work / "mutants" / "tests", ignore_errors=True)
        (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    (work / "mutation_hypothesis.py").write_text(PLUGIN, encoding="utf-8")
    config = {
        "source_paths": ["tagengine"],
        "only_mutate": [f"tagengine/_internal/{module}" + ("" if module.endswith(".py") else "/*")],
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-W", "ignore", "-p", "mutation_hypothesis"],
        "also_copy": [*(n for n in COPIED[1:-1] if n != "tests"), "mutation_hypothesis.py"],
        # the worker forks from a server that ran no test: it imported the libraries and collected the tests
        # (module constants are the clean code's; the tests' own work, and every identity cache it fills, runs
        # under the mutant). Importing the tests in every worker instead took 5-8 s a mutant on two cores.
        "process_isolation": "forkserver",
        "forkserver_warmup": "collect",
        "use_git_change_detection": False,
    }
    toml = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    toml += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    (work / "pyproject.toml").write_text(toml, encoding="utf-8")


def sample_mutants(sample: int, seed: int) -> None:
    """Make mutmut test only `sample` of the mutants it generated, drawn with `seed` from all of them (sorted by
    name, so one code and one seed draw the same sample); the others stay "not checked" and count nowhere."""
    import mutmut.__main__ as mm

    collect = mm.collect_source_file_mutation_data

    def sampled(*, mutant_names: Any) -> Any:
        mutants, by_path = collect(mutant_names=mutant_names)
        if mutant_names:  # --again: exactly the ones named
            return mutants, by_path
        names = sorted(name for _, name, _ in mutants)
        chosen = set(random.Random(seed).sample(names, min(sample, len(names))))
        return [m for m in mutants if m[1] in chosen], by_path

    mm.collect_source_file_mutation_data = sampled


def run_mutmut(work: Path, jobs: int, names: list[str], sample: int | None = None, seed: int = 0) -> None:
    """mutmut's own `run`, in the scratch copy, with decorated functions mutated too; only `names` when given,
    only a random `sample` of the mutants when asked."""
    os.chdir(work)
    sys.path.insert(0, str(work))
    mutate_decorated_functions()
    if sample is not None and not names:
        (work / SAMPLED).write_text(json.dumps({"sample": sample, "seed": seed}), encoding="utf-8")
        sample_mutants(sample, seed)
    from mutmut.__main__ import cli

    try:
        cli.main(["run", "--max-children", str(jobs), *names], prog_name="mutmut", standalone_mode=False)
    except SystemExit as e:  # mutmut exits 1 when the clean run fails
        if e.code:
            raise


def results(work: Path, *, reached_only: bool = True) -> tuple[Counter[str], dict[str, list[str]]]:
    """Mutant counts by status, and the names of the mutants that were not killed, by status (those no test
    reaches, and those a run cut short did not check, too, unless `reached_only`)."""
    from mutmut.stats import status_by_exit_code

    counts: Counter[str] = Counter()
    left: dict[str, list[str]] = {}
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            status = status_by_exit_code[code]
            counts[status] += 1
            if status in ("killed", "timeout") or (reached_only and status in ("no tests", "not checked")):
                continue
            if status == "not checked" and (work / SAMPLED).exists():  # outside the sample: never tested
                continue
            left.setdefault(status, []).append(name)
    return counts, left


def score(counts: Counter[str]) -> tuple[int, int]:
    """(killed, reached): a timeout is a kill (the mutant hangs a test); `no tests` is not reached, and a mutant
    not checked (outside a sample, or a run cut short) is not counted."""
    killed = counts["killed"] + counts["timeout"]
    return killed, sum(counts.values()) - counts["no tests"] - counts["not checked"]


def interval(killed: int, reached: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a sample's kill rate, in percent: what the whole module's score is
    likely to be when only a sample was tested."""
    if reached == 0:
        return 0.0, 100.0
    z, p = 1.96, killed / reached
    mid = (p + z * z / (2 * reached)) / (1 + z * z / reached)
    half = z * math.sqrt(p * (1 - p) / reached + z * z / (4 * reached * reached)) / (1 + z * z / reached)
    return round(100 * max(0.0, mid - half), 1), round(100 * min(1.0, mid + half), 1)


def record(module: str, counts: Counter[str]) -> None:
    """Rewrite this module's entry in tests/mutation_scores.toml (the file is ours: one table per module). When
    not every mutant was tested (a sample), the entry says how many there are and gives the 95% interval."""
    import tomllib

    data = tomllib.loads(SCORES.read_text(encoding="utf-8")) if SCORES.exists() else {}
    killed, reached = score(counts)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    data[module] = {"killed": killed, "reached": reached, "survived": counts["survived"],
                    "no_tests": counts["no tests"], "other": reached - killed - counts["survived"],
                    "date": datetime.date.today().isoformat(), "commit": commit.strip()}
    if counts["not checked"]:
        low, high = interval(killed, reached)
        total = sum(counts.values())
        data[module].update(sampled=True, sample=total - counts["not checked"], mutants=total, interval=[low, high])
    lines = ["# Mutation scores per engine module, written by `./dev mutate MODULE` (tests/mutate.py); read by",
             "# tests/spec_coverage.py. Survivors are killed with a test or explained in docs/mutation.md.", ""]
    for name in sorted(data):
        lines.append(f'["{name}"]')
        lines += [f"{k} = {json.dumps(v)}" for k, v in data[name].items()]
        lines.append("")
    SCORES.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module", help="a folder or file under tagengine/_internal: commands, sheet, tags, ruleset/inspect")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    ap.add_argument("--again", action="store_true", help="keep earlier results; rerun what was not killed")
    ap.add_argument("--sample", type=int, help="test only this many mutants, drawn at random (MU-3)")
    ap.add_argument("--seed", type=int, default=29, help="the seed the sample is drawn with")
    ap.add_argument("--tests", nargs="+", help="test files to run instead of the engine's tests")
    ap.add_argument("--no-record", action="store_true", help="do not write tests/mutation_scores.toml")
    args = ap.parse_args(argv)
    module = args.module.strip("/")
    if not (ROOT / "tagengine" / "_internal" / module).exists():
        ap.error(f"no tagengine/_internal/{module}")
    work = WORK / module.replace("/", "-")
    again = []
    if args.again and work.exists():
        again = [n for names in results(work, reached_only=False)[1].values() for n in names]
    prepare(work, module, args.tests or engine_tests(), args.again)
    run_mutmut(work, args.jobs, again, args.sample, args.seed)
    counts, left = results(work)
    killed, reached = score(counts)
    print(f"\n{module}: {killed} of {reached} mutants killed ({100 * killed / max(1, reached):.1f}%); "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if counts["not checked"]:
        low, high = interval(killed, reached)
        print(f"a sample: {sum(counts.values()) - counts['not checked']} of {sum(counts.values())} mutants tested; "
              f"the module's score is likely (95%) between {low}% and {high}%")
    for status, names in left.items():
        print(f"{status}:")
        for name in names:
            print(f"  {name}")
    if left:
        print(f"see one with: cd {work.relative_to(ROOT)} && ../../.venv/bin/mutmut show NAME")
    if not args.no_record and not args.tests:
        record(module, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
