"""Cold commands (issue 30): each command as a script or a chat app's hook runs it, one new process per call,
beside the floor (a Python that does nothing: `python -c pass`), in interleaved rounds.

    python benchmarks/cold.py [--runs N] [--against REF]

Prints, per command, the median wall time and its range over the rounds, and the median CPU time (user +
system of the child: steadier than wall time on a shared machine), its ratio to the floor's (the medians', and
the median of each round's own: `by_round`), with the target (`apply` of one reply <= 150 ms). `--against REF`
runs the same commands with the code of another commit (unpacked with `git archive`), interleaved with this
tree's, so both see the same machine.

The commands run each tree's console script (as pip writes it from the tree's pyproject.toml, so each tree
starts at its own entry point) with the code on PYTHONPATH. Bytecode is written first, as
a pip install does (the environment's PYTHONDONTWRITEBYTECODE would otherwise make every run compile
tagengine from source), and the first rounds are not timed: they also fill the cache folder (decisions
PF-2, PF-3), here a temporary one per tree, as the first call of the day does. `apply, nothing cached` runs
with the cache turned off (TAGENGINE_CACHE empty), which is what a first call costs, minus writing the
entries. `preview` builds a tokenizer, whose own floor (a process that only builds o200k_base) is shown
beside it. On a machine other sessions keep busy, wall times are about twice the CPU times; run it in a
session of its own with a higher share of the cores for figures a quiet machine would give (decisions,
the PF section): `setsid sh -c 'echo -15 > /proc/self/autogroup; exec python benchmarks/cold.py'`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _against import bytecode_env, console_script, unpack

ROOT = Path(__file__).resolve().parent.parent
RULESET = ROOT / "samples" / "rulesets" / "gravewatch.json"
STATE = ROOT / "samples" / "states" / "gravewatch.json"
REPLY = """Mira steadies the lantern as the fog thickens over the graves. [sheet: who="Mira" op="spend" pool="resolve"]
Something cold brushes Bram's shoulder. [sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"]
The lantern gutters. [sheet: who="Mira" op="spend" pool="oil"]
"""
MALFORMED = REPLY + '[sheet: who="Mira op="spend" pool="oil"]\n'  # needs Lark to say where it breaks
FLOOR_TIMES = 6  # a cold one-shot command against `python -c pass`, same run
APPLY_TARGET = 0.150
ENCODING_ONLY = "import os; from tagengine._internal.prompt.tokens import encoding; encoding('o200k_base'); os._exit(0)"


@dataclass(frozen=True)
class Code:
    label: str
    root: Path
    cache: Path


def code_at(ref: str, tmp: Path) -> Code:
    return Code(ref, unpack(ref, tmp), tmp / "cache-against")


def commands(tmp: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (arguments after the program, extra environment)."""
    reply, bad = tmp / "reply.md", tmp / "malformed.md"
    reply.write_text(REPLY, encoding="utf-8")
    bad.write_text(MALFORMED, encoding="utf-8")
    r, s = str(RULESET), str(STATE)
    return {
        "apply": (["apply", r, s, str(reply)], {}),
        "apply, nothing cached": (["apply", r, s, str(reply)], {"TAGENGINE_CACHE": ""}),
        "apply, a malformed tag": (["apply", r, s, str(bad)], {}),
        "apply --json --state-out": (["apply", r, s, str(reply), "--json", "--state-out", str(tmp / "next.json")], {}),
        "check": (["check", r], {}),
        "narrate": (["narrate", str(reply)], {}),
        "sheet": (["sheet", r, s, "Mira"], {}),
        "preview": (["preview", r, s, "--model", "gpt-4o"], {}),
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def by_round(times: list[float], floors: list[float]) -> tuple[float, float, float]:
    """Each round's time over the floor's in the same round (the rounds run every command in turn, so a moment when
    the machine is slow falls on both): their median, least and most. The floor's own median moves by a fifth
    from run to run, which moves the ratio of the two medians as much (PF-68)."""
    ratios = [t / f for t, f in zip(times, floors, strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=15, help="timed rounds (default 15)")
    p.add_argument("--warm", type=int, default=2, help="untimed rounds first (default 2)")
    p.add_argument("--against", metavar="REF", help="also run the code of this git commit, interleaved")
    args = p.parse_args()
    base_env = bytecode_env()
    with tempfile.TemporaryDirectory(prefix="tagengine-cold-") as name:
        tmp = Path(name)
        codes = [Code("this tree", ROOT, tmp / "cache-here")]
        if args.against:
            codes.append(code_at(args.against, tmp))
        cmds = commands(tmp)
        runs: dict[tuple[str, str], tuple[list[str], dict[str, str]]] = {
            ("", "floor: python -c pass"): ([sys.executable, "-c", "pass"], base_env),
        }
        for code in codes:
            env = {**base_env, "PYTHONPATH": str(code.root), "TAGENGINE_CACHE": str(code.cache)}
            exe = console_script(code.root, code.cache.with_name(f"{code.cache.name}-script"))
            for cmd, (argv, extra) in cmds.items():
                runs[(code.label, cmd)] = ([sys.executable, str(exe), *argv], {**env, **extra})
            runs[(code.label, "tokenizer floor: building o200k_base")] = ([sys.executable, "-c", ENCODING_ONLY], env)
        load = os.getloadavg()
        for _ in range(args.warm):
            for argv, env in runs.values():
                run_once(argv, env)
        walls: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
        cpus: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
        for _ in range(args.runs):  # interleaved: a busy moment on the machine hits every command alike
            for k, (argv, env) in runs.items():
                wall, cpu = run_once(argv, env)
                walls[k].append(wall)
                cpus[k].append(cpu)
        for code in codes:
            shutil.rmtree(code.cache, ignore_errors=True)
    print(f"cold commands: {args.runs} interleaved rounds after {args.warm} untimed; load average "
          f"{load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores")
    med = {k: statistics.median(v) for k, v in walls.items()}
    floor = med[("", "floor: python -c pass")]
    for (label, cmd), ts in walls.items():
        line = (f"{label + ': ' if label else ''}{cmd}: {med[(label, cmd)] * 1e3:.0f} ms wall (median; "
                f"{min(ts) * 1e3:.0f}-{max(ts) * 1e3:.0f}), {statistics.median(cpus[(label, cmd)]) * 1e3:.0f} ms CPU")
        if label:
            cpu_floor = statistics.median(cpus[("", "floor: python -c pass")])
            mid, low, high = by_round(ts, walls[("", "floor: python -c pass")])
            line += (f"; {(med[(label, cmd)] - floor) * 1e3:.0f} ms above the floor, "
                     f"{med[(label, cmd)] / floor:.1f}x it (CPU "
                     f"{statistics.median(cpus[(label, cmd)]) / cpu_floor:.1f}x; round by round {mid:.1f}x, "
                     f"{low:.1f}-{high:.1f})")
        if cmd == "apply":
            line += f" (targets <= {APPLY_TARGET * 1e3:.0f} ms, <= {FLOOR_TIMES:g}x the floor)"
        elif cmd in ("check", "sheet", "narrate"):
            line += f" (target <= {FLOOR_TIMES:g}x the floor)"
        if cmd == "preview":
            tok = med[(label, "tokenizer floor: building o200k_base")]
            line += f"; {(med[(label, cmd)] - tok) * 1e3:.0f} ms above the tokenizer's floor"
        print(line)


if __name__ == "__main__":
    main()
