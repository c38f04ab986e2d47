"""`benchmarks/replay.py`: the command line's row reads against what two cores allow a command whose start is
serial, not against the workers' target (PF-74)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from _amdahl import start_bound


def test_pf_74_only_the_replay_is_shared_between_two_workers() -> None:
    # 0.4 s in all, 0.2 of it the replay a warm process does: 0.2 + 0.1 at best, 1.33x
    start, bound = start_bound(0.4, 0.2)
    assert start == pytest.approx(0.2)
    assert bound == pytest.approx(0.4 / 0.3)
    # no start at all: two workers halve the whole run
    assert start_bound(0.2, 0.2) == (0.0, 2.0)
    # a command read faster than the warm replay (noise) has no start, not a negative one, and is halved
    assert start_bound(0.19, 0.2) == (0.0, 2.0)
