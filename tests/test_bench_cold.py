"""`benchmarks/cold.py`: a command's ratio to the floor is also read round by round, each round's time over the
floor's in the same round (PF-68)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import cold


def test_pf_68_the_ratio_to_the_floor_pairs_each_round_with_its_own_floor() -> None:
    # round by round 1x, 2x and 3x; the medians' ratio would read 30 / 10 = 3x
    assert cold.by_round([10.0, 40.0, 30.0], [10.0, 20.0, 10.0]) == (2.0, 1.0, 3.0)
