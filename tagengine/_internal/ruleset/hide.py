"""`hideWhen` (HIDE-1, HIDE-2): hide an element by the value of another field."""


from typing import Any

from ..records import frozen
from .base import BaseDef, Id, aliased, worked_out


@frozen(kw_only=True, slots=True)
class HideWhenDef(BaseDef):
    """HIDE-2: exactly one of `equals`, `notEquals`, `in`."""

    field: Id
    equals: Any = None
    notEquals: Any = None
    in_: list[Any] | None = aliased("in")
    form: str = worked_out()  # "equals", "notEquals" or "in"; "" until checked
    values: list[Any] = worked_out()  # the values it compares with

    def derive(self) -> None:
        form = next((k for k in ("equals", "notEquals", "in_") if k in self.written), "")
        values = list(self.in_ or []) if form == "in_" else [self.equals if form == "equals" else self.notEquals]
        object.__setattr__(self, "form", "in" if form == "in_" else form)
        object.__setattr__(self, "values", values)

    def check(self) -> None:
        forms = [k for k in ("equals", "notEquals", "in_") if k in self.written]
        if len(forms) != 1:
            raise ValueError("hideWhen takes exactly one of equals, notEquals, in (HIDE-2)")
