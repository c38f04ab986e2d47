"""The base every ruleset model shares: unknown keys are refused everywhere (DEC-21)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class BaseDef(BaseModel):
    # defer_build (PF-1): a model's validator is built when a ruleset is first validated, not when its class
    # is defined; a command that reads its ruleset from the cache (ruleset/kept.py) never builds one.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    def keys_set(self) -> set[str]:
        """The keys the author wrote (aliases resolved to field names)."""
        return set(self.model_fields_set)


Id = Annotated[str, Field(min_length=1, max_length=100)]
Label = Annotated[str, Field(min_length=1, max_length=100)]
Round = Literal["down", "up", "nearest"]
