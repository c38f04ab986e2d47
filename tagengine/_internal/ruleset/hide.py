"""`hideWhen` (HIDE-1, HIDE-2): hide an element by the value of another field."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import Field, model_validator

from .base import BaseDef, Id


class HideWhenDef(BaseDef):
    """HIDE-2: exactly one of `equals`, `notEquals`, `in`."""

    field: Id
    equals: Any = None
    notEquals: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")

    @model_validator(mode="after")
    def _one_form(self) -> HideWhenDef:
        forms = [k for k in ("equals", "notEquals", "in_") if k in self.model_fields_set]
        if len(forms) != 1:
            raise ValueError("hideWhen takes exactly one of equals, notEquals, in (HIDE-2)")
        return self

    @cached_property
    def form(self) -> str:
        for k in ("equals", "notEquals", "in_"):
            if k in self.model_fields_set:
                return "in" if k == "in_" else k
        raise AssertionError

    @cached_property
    def values(self) -> list[Any]:
        if self.form == "in":
            return list(self.in_ or [])
        return [self.equals if self.form == "equals" else self.notEquals]
