"""Shared helpers: the make_corpus corpus (cached under benchmarks/.corpus/) and the reference timing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
BENCH = SHARED / "bench"
CACHE = ROOT / "benchmarks" / ".corpus"

if not BENCH.is_dir():  # a user's clone: the comparator and its corpus are not there, so these figures cannot be
    print(f"skipped: {Path(sys.argv[0]).name} compares against ../shared/bench (reference_regex.py, make_corpus.py, "
          "bench_ruleset.json), which is not beside this checkout")
    sys.exit(0)


def corpus(chats: int = 200, turns: int = 20) -> Path:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"corpus-{chats}x{turns}.jsonl"
    if not path.exists():
        with path.open("w", encoding="utf-8") as f:
            subprocess.run([sys.executable, str(BENCH / "make_corpus.py"), "--chats", str(chats), "--turns",
                            str(turns)], check=True, stdout=f)
    return path


def replies(path: Path) -> list[str]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            chat = json.loads(line)
            out += [m["content"] for m in chat["messages"] if m["role"] == "assistant"]
    return out


def reference_seconds(path: Path) -> float:
    """Run ../shared/bench/reference_regex.py on the same corpus; its own timing line."""
    out = subprocess.run([sys.executable, str(BENCH / "reference_regex.py"), str(path)], check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"seconds=([\d.]+)", out).group(1))  # type: ignore[union-attr]


def reference_rewrite():  # type: ignore[no-untyped-def]
    """The comparator's own `rewrite` function, loaded from ../shared/bench/reference_regex.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference_regex", BENCH / "reference_regex.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rewrite


def cpu_seconds(fn) -> float:  # type: ignore[no-untyped-def]
    """CPU time of one call: steadier than wall time on a shared machine."""
    t = time.process_time()
    fn()
    return time.process_time() - t
