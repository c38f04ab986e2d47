"""Prompt benchmark (issue: the prompt): 4 characters, a 200-message history, a 16,000-character
gmReference. Prints a warm turn (target <= 3 ms), a turn after one new message (only that message is
encoded), the cost of a cut (target: one encode and one decode) and `tagengine preview` cold (target
<= 400 ms)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tagengine import GameState, Ruleset
from tagengine._internal.prompt import Budget, build_prompt
from tagengine._internal.prompt.budget import cut_reference
from tagengine._internal.prompt.tokens import TiktokenCounter, TokenCounter

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Counting:
    """A Tokenizer that counts the encode and decode calls it serves."""

    name: str = "o200k_base"
    calls: dict[str, int] = field(default_factory=lambda: {"encode": 0, "decode": 0}, compare=False, hash=False)

    def encode(self, text: str) -> list[int]:
        self.calls["encode"] += 1
        return TiktokenCounter(self.name).encode(text)

    def decode_bytes(self, tokens):  # type: ignore[no-untyped-def]
        self.calls["decode"] += 1
        return TiktokenCounter(self.name).decode_bytes(tokens)


def setup() -> tuple[Ruleset, GameState, list[dict[str, str]], dict]:
    doc = json.loads((ROOT / "samples" / "rulesets" / "gravewatch.json").read_text())
    words = "Wardens judge the dark by lantern light before each watch and count every grave twice. "
    doc["gmReference"] = (words * 200)[:16000].strip()
    rs = Ruleset.from_dict(doc)
    state = GameState.new(rs, ["Mira", "Bram", "Tobin", "Vess"])
    history = []
    for i in range(100):
        history.append({"role": "user", "content": f"Turn {i}: we keep watch by the north gate."})
        history.append({"role": "assistant", "content": f"Reply {i}: the fog thickens over the graves. " * 12})
    return rs, state, history, doc


def main() -> None:
    rs, state, history, doc = setup()
    tok = Counting()
    budget = Budget(context=16_000, response=1024, model="gpt-4o", tokenizer=tok)
    build_prompt(rs, state, history, budget)  # cold: encodes everything once
    times = []
    for _ in range(50):
        t = time.perf_counter()
        build_prompt(rs, state, history, budget)
        times.append(time.perf_counter() - t)
    print(f"warm turn: median {statistics.median(times) * 1e3:.2f} ms (target <= 3 ms)")
    tok.calls.update(encode=0, decode=0)
    t = time.perf_counter()
    build_prompt(rs, state, [*history, {"role": "user", "content": "I raise the lantern."}], budget)
    print(f"turn after one new message: {(time.perf_counter() - t) * 1e3:.2f} ms, "
          f"{tok.calls['encode']} encode call(s) (target: only that message)")
    tok.calls.update(encode=0, decode=0)
    c = TokenCounter(tok)
    t = time.perf_counter()
    cut_reference(c, doc["gmReference"], 1500)
    print(f"cut of a 16,000-character reference: {(time.perf_counter() - t) * 1e3:.2f} ms, "
          f"{tok.calls['encode']} encode and {tok.calls['decode']} decode (target: one of each)")
    cold_preview(doc, state, history)


def cold_preview(doc: dict, state: GameState, history: list[dict[str, str]], runs: int = 7) -> None:
    """`tagengine preview` in a new process each time, on the same inputs (the history as a JSONL file).
    Bytecode is compiled once first, as a pip install does; the environment's PYTHONDONTWRITEBYTECODE
    would otherwise make every run compile tagengine from source."""
    exe = Path(sys.executable).parent / "tagengine"
    with tempfile.TemporaryDirectory() as tmp:
        rpath, spath, hpath = Path(tmp) / "r.json", Path(tmp) / "s.json", Path(tmp) / "h.jsonl"
        rpath.write_text(json.dumps(doc))
        spath.write_text(state.dumps())
        hpath.write_text("".join(json.dumps(m) + "\n" for m in history))
        args = ["preview", str(rpath), str(spath), "--history", str(hpath), "--model", "gpt-4o", "--json"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([str(exe), *args], check=True, stdout=subprocess.DEVNULL, env=env)
        commands = {
            "tagengine preview": [str(exe), *args],
            "the same in one process, with teardown": [sys.executable, "-c", ONE_PROCESS, *args],
            "only building the o200k encoding (the floor)": [sys.executable, "-c", ENCODING_ONLY],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):  # interleaved, so a noisy moment on the machine hits all three alike
            for name, cmd in commands.items():
                t = time.perf_counter()
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
                times[name].append(time.perf_counter() - t)
    for name, ts in times.items():
        target = " (target <= 400 ms)" if name == "tagengine preview" else ""
        print(f"{name}, cold (new process): median {statistics.median(ts) * 1e3:.0f} ms, "
              f"best {min(ts) * 1e3:.0f} ms{target}")


ONE_PROCESS = "import sys; from tagengine._internal.cli import run; sys.exit(run(sys.argv[1:]))"
ENCODING_ONLY = "import os; from tagengine._internal.prompt.tokens import encoding; encoding('o200k_base'); os._exit(0)"

if __name__ == "__main__":
    main()
