"""The base every ruleset definition shares: unknown keys are refused everywhere (DEC-21).

The definitions are plain frozen dataclasses (decision PF-27): a ruleset read back from the cache folder
(kept.py) is made of them and needs nothing of pydantic, so a cold command whose ruleset is kept does not
import it. Pydantic validates them only when a file must be validated (`load.py`): it reads the dataclasses'
fields, `__pydantic_config__`, the `Bounds` in their annotations and each definition's `check`, all through
the hooks below, which import pydantic-core only when pydantic calls them.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

from ..records import frozen


class Bounds:
    """A length or range bound (`min_length`, `max_length`, `ge`, `le`), put into the type's own pydantic schema
    when a validator is built: the same errors as pydantic's `Field(...)` bounds, without importing pydantic here."""

    __slots__ = ("constraints",)

    def __init__(self, **constraints: int | bool) -> None:
        self.constraints = constraints

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema.update(self.constraints)
        return schema


def listed(*items: Any) -> Any:
    """A list default: a new list per definition, shown in the JSON Schema as the list, as a model's was."""
    return dataclasses.field(default_factory=lambda: list(items), metadata={"json_schema_extra": {"default": [*items]}})


def mapped() -> Any:
    """An empty dict default, shown in the JSON Schema as `{}`."""
    return dataclasses.field(default_factory=dict, metadata={"json_schema_extra": {"default": {}}})


def aliased(alias: str) -> Any:
    """A field written under another key in the file (`in`, `from`: Python keywords); None when left out."""
    return dataclasses.field(default=None, metadata={"alias": alias})


def worked_out() -> Any:
    """A value worked out once from the others (`BaseDef.derive`): never a key of the file, never compared."""
    return dataclasses.field(init=False, repr=False, compare=False)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


_MADE_UP_DOC = ": a part of a ruleset file."  # the docstring of a definition that has none (`__init_subclass__`)


def _no_made_up_doc(schema: dict[str, Any], cls: type) -> None:
    """The JSON Schema describes a definition by its own docstring only, as it did a model."""
    if str(schema.get("description", "")).endswith(_MADE_UP_DOC):
        del schema["description"]


_DEFAULTS: dict[type, tuple[tuple[str, Any], ...]] = {}  # each definition's fields and their defaults, once


@frozen(kw_only=True, slots=True)
class BaseDef:
    # Strict (no "1" for 1) by configuration rather than by the call: `Pair` must loosen its own tuple (below).
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid", "populate_by_name": True, "strict": True,
                                                     "json_schema_extra": _no_made_up_doc}

    # The keys the author wrote, as field names (what a pydantic model's `model_fields_set` was): set from the
    # file's object when validated; a definition made in code counts the fields it sets off their default.
    written: frozenset[str] = worked_out()

    def __init_subclass__(cls) -> None:
        # A dataclass without a docstring gets one made from its signature (`inspect.signature`): a fifth of
        # what defining the ruleset's definitions costs a cold command, for a text no one reads.
        if not cls.__doc__:
            cls.__doc__ = f"`{cls.__name__}`{_MADE_UP_DOC}"

    def __post_init__(self) -> None:
        cls = type(self)
        defaults = _DEFAULTS.get(cls)
        if defaults is None:
            defaults = _DEFAULTS[cls] = tuple((f.name, _default(f)) for f in dataclasses.fields(cls) if f.init)
        object.__setattr__(self, "written", frozenset(name for name, d in defaults if getattr(self, name) != d))
        self.derive()

    def derive(self) -> None:
        """Work out the `worked_out()` fields from `written` and the rest (again once validation has set
        `written` from the file); what a pydantic model kept in a cached_property."""

    def check(self) -> None:
        """What the fields' types cannot say (one of several keys...): raises ValueError, which pydantic reports
        at this definition's path as a model validator's error was."""

    def dumped(self) -> dict[str, Any]:
        """The fields that are not None, by name, a definition inside as its own dict (what a model's
        `model_dump(exclude_none=True)` gave)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.init and value is not None:
                out[f.name] = value.dumped() if isinstance(value, BaseDef) else value
        return out

    @classmethod
    def key_of(cls, name: str) -> str:
        """The file's key for field `name`."""
        return str(cls.__dataclass_fields__[name].metadata.get("alias", name))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        names = {cls.key_of(f.name): f.name for f in dataclasses.fields(cls) if f.init}

        def validated(value: Any, inner: Any) -> Any:
            made = inner(value)
            if isinstance(value, dict):
                object.__setattr__(made, "written", frozenset(names.get(k, k) for k in value))
            made.derive()
            made.check()
            return made

        # The wrapper takes the definition's reference, so every place the definition is used gets it (pydantic
        # keeps a schema by its reference and hands that out for the type's later uses).
        inner = dict(handler(source))
        ref = inner.pop("ref", None)
        return core_schema.no_info_wrap_validator_function(validated, inner, ref=ref)


Id = Annotated[str, Bounds(min_length=1, max_length=100)]
Label = Annotated[str, Bounds(min_length=1, max_length=100)]
Round = Literal["down", "up", "nearest"]
# Two numbers, written as a JSON array. Each definition's `check` sees the file's object as Python values, so
# pydantic then validates the rest as Python: a strict tuple would refuse the list a JSON array became. The
# tuple alone is lax (it takes that list); its two numbers stay strict.
Pair = Annotated[tuple[int, int], Bounds(strict=False)]
