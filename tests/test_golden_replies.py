"""Golden replies: input, rewritten output and narration (tests/golden/replies/*.in.md).

Regenerate after an intended change with `UPDATE_GOLDEN=1 ./dev test tests/test_golden_replies.py`
and read the diff.
"""

from __future__ import annotations

import os

import pytest

from conftest import GOLDEN, SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.state import GameState
from tagengine._internal.tags import narration

FOLDER = GOLDEN / "replies"
CASES = sorted(FOLDER.glob("*.in.md"))


def check(path, text):
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def start(stem):
    """`<ruleset>--<case>` replays on the sample state; other cases on a new blades-like crew."""
    if "--" in stem:
        name = stem.split("--")[0]
        rs = load_sample(name)
        return rs, GameState.loads(rs, (SAMPLES / "states" / f"{name}.json").read_text())
    rs = load_sample("blades-like")
    return rs, GameState.new(rs, ["Cutter", "Lurk"])


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".in.md") for c in CASES])
def test_golden_reply(case):
    rs, state = start(case.name.removesuffix(".in.md"))
    text = case.read_text(encoding="utf-8")
    applied = apply_reply(rs, state, text)
    stem = case.name.removesuffix(".in.md")
    lines = [" ".join([r.result, *(f"{k}={v}" for k, v in r.record)]) if r.record else f"{r.result} {r.now or r.reason}"
             for r in applied.receipts]
    lines += [f"dice {applied.state.dice.rolls}"] if applied.state.dice.rolls else []
    lines += [f"clock {c.name} {c.filled}/{c.size}" for c in applied.state.clocks]
    check(FOLDER / f"{stem}.out.md", applied.text)
    check(FOLDER / f"{stem}.narration.md", narration(applied.text))
    check(FOLDER / f"{stem}.receipts.txt", "\n".join(lines) + "\n")
    assert apply_reply(rs, state, applied.text).text == applied.text  # DEC-5
