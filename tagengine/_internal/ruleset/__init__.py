"""A validated ruleset: the pydantic model of the file plus lookups, warnings and the version it needs."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..errors import Problem, RulesetError
from ..records import frozen
from . import kept
from .index import SheetIndex
from .source import ruleset_bytes
from .top import RulesetDef

if TYPE_CHECKING:  # validation, imported when a file must be validated: a kept ruleset needs none of it (PF-43)
    from pathlib import Path

    from .capability import Version

__all__ = ["Ruleset", "RulesetDef", "RulesetError"]


@frozen(eq=False)
class Ruleset:
    """What the engine reads. Build it with `Ruleset.load`, `from_json` or `from_dict`."""

    file: RulesetDef
    sheet: SheetIndex
    party: SheetIndex | None
    warnings: tuple[Problem, ...]
    requires: Version | None
    source: str = "<ruleset>"

    @classmethod
    def _build(cls, model: RulesetDef, ctx: Any, source: str) -> Ruleset:
        from .capability import required

        return cls(model, ctx.sheet, ctx.party, tuple(ctx.warnings), required(ctx), source)

    @classmethod
    def load(cls, path: str | Path) -> Ruleset:
        """A ruleset file, checked. Raises RulesetError listing every problem (an unreadable file too).
        A file that imported before is read back from the cache folder, checks and all (PF-2)."""
        return cls.from_file(ruleset_bytes(path), str(path))

    @classmethod
    def from_file(cls, data: bytes, source: str) -> Ruleset:
        """A ruleset file's bytes as `files.read_file` gives them, checked, or read back from the cache folder when
        this file imported before (PF-2): then pydantic is not even imported, which keeps some 9 MB of validators
        out of a server that only plays turns (PF-46). Raises RulesetError listing every problem."""
        found = kept.recall(data)
        if found is not None:
            return cls(*found, source=source)
        from .load import validate

        model, ctx = validate(data, source)
        rs = cls._build(model, ctx, source)
        kept.keep(data, (rs.file, rs.sheet, rs.party, rs.warnings, rs.requires))
        return rs

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<ruleset>") -> Ruleset:
        """A ruleset from its JSON text. Raises RulesetError listing every problem."""
        from .load import validate

        model, ctx = validate(text, source)
        return cls._build(model, ctx, source)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<ruleset>") -> Ruleset:
        """A ruleset from parsed JSON. Raises RulesetError listing every problem."""
        try:
            text = json.dumps(data)
        except (TypeError, ValueError) as e:  # not JSON data at all (a set, a NaN...)
            raise RulesetError([Problem("$", "not-json", f"not JSON data: {e}", None)], source) from None
        return cls.from_json(text, source)

    @property
    def requires_text(self) -> str | None:
        from .capability import fmt

        return fmt(self.requires) if self.requires else None

    @property
    def dice_pool(self) -> bool:
        """Checks roll a pool of dice; without a `resolution` block a ruleset rolls like `dice-sum` (E-1)."""
        res = self.file.resolution
        return res is not None and res.type == "dice-pool"

    @property
    def die(self) -> int:
        """The sides of the die a check rolls: `resolution.die`, else d6 for a dice pool and d20 for a sum (CK-3)."""
        res = self.file.resolution
        if res is not None and res.die is not None:
            return res.die
        return 6 if self.dice_pool else 20

    @property
    def name(self) -> str:
        m = self.file.manifest
        return (m.name if m and m.name else None) or _stem(self.source)


def _stem(source: str) -> str:
    """`Path(source).stem`, with os.path (a cold command does not import pathlib, PF-44)."""
    name = os.path.basename(source.rstrip("/"))
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and stem and suffix else name
