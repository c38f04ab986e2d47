"""`tagengine demo`: a walkthrough of the bundled samples."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from .errors import RulesetError
from .ruleset import Ruleset
from .state import GameState


def samples_dir(samples: Path) -> Path:
    if samples.is_dir():
        return samples
    raise FileNotFoundError(f"the bundled samples are not at {samples}; run the demo from a source checkout")


def demo(out: TextIO, samples: Path) -> int:
    rulesets = sorted((samples_dir(samples) / "rulesets").glob("*.json"))
    out.write("== tagengine check on every sample ruleset\n")
    status = 0
    loaded: dict[str, Ruleset] = {}
    for path in rulesets:
        try:
            rs = Ruleset.load(path)
        except RulesetError as e:
            status = 1
            out.write(f"{path.name}: {len(e.problems)} problem(s)\n")
            for p in e.problems:
                out.write(f"  {p}\n")
            continue
        loaded[path.stem] = rs
        out.write(f"{path.name}: ok: {rs.name}, needs Capability API {rs.requires_text}\n")
    if "gravewatch" in loaded:
        out.write("\n== tagengine state new samples/rulesets/gravewatch.json Mira Bram\n")
        out.write(GameState.new(loaded["gravewatch"], ["Mira", "Bram"]).dumps())
    return status
