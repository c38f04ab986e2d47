"""Side by side with another commit's code (`--against REF`), shared by the benchmark scripts.

A figure is only worth comparing with one taken in the same minutes on the same machine, so each script
unpacks the other commit with `git archive` and measures both trees in turn, round by round. A tree's
code is put first on `PYTHONPATH`; the measuring script is always this tree's, so both trees are timed
by the same loop."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bytecode_env(**extra: str) -> dict[str, str]:
    """The environment a timed command runs in: this one's, bytecode written as a pip install leaves it (the
    environment's PYTHONDONTWRITEBYTECODE would otherwise make every run compile tagengine from source, and a tree
    unpacked here has no bytecode of its own, so it would be charged for that and this tree not), and `extra`."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **extra}


def unpack(ref: str, tmp: Path) -> Path:
    """The tree of commit `ref`, extracted under `tmp` (its `against/` folder)."""
    root = tmp / "against"
    root.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=ROOT, capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--against {ref}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    # compiled now, as pip compiles what it installs: else the tree's first process compiles it, and a server's
    # memory or a cold start would be charged for what this tree, read from its bytecode, is not
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "tagengine")], check=True,
                   stdout=subprocess.DEVNULL)
    return root


def console_script(tree: Path, folder: Path) -> Path:
    """The `tagengine` console script as pip writes it from `tree`'s pyproject.toml, in `folder/tagengine`: each
    tree is timed through its own entry point, which may differ from the installed one (it moved in PF-68)."""
    import tomllib

    entry = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["tagengine"]
    module, _, func = entry.partition(":")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tagengine"
    path.write_text(f"import sys\nfrom {module} import {func}\nif __name__ == '__main__':\n"
                    f"    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit({func}())\n", encoding="utf-8")
    return path


def figures_in(tree: Path, script: str, args: list[str]) -> dict[str, float]:
    """Run `script --figures ARGS` with `tree`'s package first on the path; the JSON object it prints last."""
    env = bytecode_env(PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, script, "--figures", *args], env=env, check=True,
                          capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def side_by_side(script: str, ref: str, tmp: Path, rounds: int, args: list[str] | None = None) -> None:
    """Measure this tree and `ref` in alternate child processes, `rounds` times; print each figure's
    median and range per tree, and this tree's median over the other's."""
    trees = {"this tree": ROOT, ref: unpack(ref, tmp)}
    seen: dict[tuple[str, str], list[float]] = {}
    load = os.getloadavg()[0]
    for _ in range(rounds):
        for label, tree in trees.items():
            for name, value in figures_in(tree, script, args or []).items():
                seen.setdefault((name, label), []).append(value)
    print(f"side by side, {rounds} alternate rounds; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    for name in dict.fromkeys(n for n, _ in seen):
        cells = []
        scale, unit = (1e6, "us") if statistics.median(seen[(name, ref)]) < 1e-3 else (1e3, "ms")
        for label in trees:
            vs = seen[(name, label)]
            cells.append(f"{label} {statistics.median(vs) * scale:.3f} {unit} "
                         f"({min(vs) * scale:.3f}-{max(vs) * scale:.3f})")
        ratio = statistics.median(seen[(name, "this tree")]) / statistics.median(seen[(name, ref)])
        print(f"  {name}: " + "; ".join(cells) + f"; this tree / {ref} = {ratio:.2f}")


def main(script: str, doc: str | None, figures: Callable[[], dict[str, float]], everything: Callable[[], None],
         rounds: int = 7, compared: str = "") -> None:
    """A benchmark's command line: alone it runs `everything`; `--against REF` compares `figures` (in
    seconds) with another commit's, side by side; `--figures` is the child's side of that."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = f" ({compared})" if compared else ""
    p.add_argument("--against", metavar="REF", help=f"also measure the code of this git commit, side by side{what}")
    p.add_argument("--rounds", type=int, default=rounds, help=f"alternate rounds with --against (default {rounds})")
    p.add_argument("--figures", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.figures:
        print(json.dumps(figures()))
    elif args.against:
        with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
            side_by_side(script, args.against, Path(tmp), args.rounds)
    else:
        everything()
