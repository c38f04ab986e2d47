"""What two workers can give a command whose start no worker shares (Amdahl's law): kept apart from replay.py,
which reads the benchmarks' corpus on import, so a test can read it in a clone with nothing beside it."""

from __future__ import annotations


def start_bound(command: float, warm: float) -> tuple[float, float]:
    """(the start, the most two workers can give) of a command that replays with one worker in `command` seconds
    what a warm process replays in `warm`: all it does beyond the warm replay is its start, which is serial; only
    the replay is shared. A command read faster than the warm replay (noise) has no start, and two workers halve it."""
    shared = min(warm, command)
    start = command - shared
    return start, command / (start + shared / 2)
