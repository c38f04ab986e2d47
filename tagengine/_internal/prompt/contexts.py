"""The context window of a model by its name, when the user does not give one (`tagengine serve` without
--context): the table `contexts.toml` beside this module (patterns -> tokens, each row with its source),
read once. An unknown or absent model name gets the table's default."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from ..records import frozen
from .registry import matches

TABLE = Path(__file__).resolve().parent / "contexts.toml"


@frozen
class ContextRow:
    patterns: tuple[str, ...]
    context: int
    source: str


@cache
def context_table() -> tuple[int, tuple[ContextRow, ...]]:
    """(the default, the rows in order). A broken table is a bug of the package: it raises."""
    import tomllib  # here: only `serve` reads the table

    doc = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    rows = tuple(ContextRow(tuple(r["patterns"]), int(r["context"]), str(r["source"])) for r in doc["model"])
    return int(doc["default"]), rows


@lru_cache(maxsize=1024)  # model names come from requests: bounded
def context_of(model: str | None) -> tuple[int, str]:
    """(the context window, the pattern that gave it, or "default")."""
    default, rows = context_table()
    if model:
        for row in rows:
            for p in row.patterns:
                if matches(model, p):
                    return row.context, p
    return default, "default"
