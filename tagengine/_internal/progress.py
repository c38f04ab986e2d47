"""A progress bar for long replays (DK-6): tqdm, imported only when stderr is a terminal and a
bar is asked for; None when tqdm is not installed (the caller then prints its one-line count)."""

from __future__ import annotations

from typing import Any, TextIO


class Bar:
    """A tqdm bar on `err`: `tick(chats, bad)` per batch of the local replay, `done(bytes, chats)` per
    partition of the Dask replay (whose total is the input's bytes)."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.chats = 0
        self.bad = 0

    def tick(self, chats: int, bad: int) -> None:
        self.chats += chats
        self.bad += bad
        self.bar.set_postfix(bad=self.bad, refresh=False)
        self.bar.update(chats)

    def done(self, size: int, chats: int) -> None:
        self.chats += chats
        self.bar.set_postfix(chats=self.chats, refresh=False)
        self.bar.update(size)

    def total(self, total: int) -> None:
        self.bar.reset(total=total)

    def close(self) -> None:
        self.bar.close()


def progress_bar(err: TextIO, total: int | None = None, unit: str = "chat") -> Bar | None:
    """A bar on `err`, or None when `err` is not a terminal or tqdm is missing."""
    if not err.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    scale = unit == "B"
    return Bar(tqdm(total=total, unit=unit, unit_scale=scale, unit_divisor=1024 if scale else 1000, file=err,
                    desc="replay", dynamic_ncols=True, mininterval=0.5))
