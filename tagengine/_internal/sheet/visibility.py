"""`hideWhen` (HIDE-1..5): hidden by the value the sheet editor shows for another field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ruleset.hide import HideWhenDef


def hidden_by(hw: HideWhenDef | None, fields: Mapping[str, Any]) -> str | None:
    """Why the element is hidden, or None when it shows."""
    if hw is None:
        return None
    value = fields.get(hw.field)
    if hw.form == "equals":
        hit = value == hw.equals
        why = f"{hw.field} is {value!r}"
    elif hw.form == "notEquals":
        hit = value != hw.notEquals
        why = f"{hw.field} is {value!r}, not {hw.notEquals!r}"
    else:
        hit = value in hw.values
        why = f"{hw.field} is {value!r}, one of {hw.values!r}"
    return why if hit else None
