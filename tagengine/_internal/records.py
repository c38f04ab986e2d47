"""`frozen`: the engine's frozen dataclasses, made without compiling code for each class (decision PF-42).

`dataclasses.dataclass(frozen=True)` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__` and `__delattr__` as source text and compiles it: about 0.5 ms a class, a third of what a cold
command spent on its imports. `frozen` lets `dataclasses` do everything but that (the fields, `__slots__`,
`__match_args__`, `__dataclass_fields__`, so `dataclasses.fields`, `replace`, `is_dataclass` and pydantic read a
record as the dataclass it is), then gives the class the same methods made from shared closures: `__eq__` and
`__hash__` compare and hash the tuple of the fields, as the generated ones do, so equal records hash alike and
every hash is the one `dataclasses` would give; `__init__` is a template per number of fields (shared by every
class with that many, kept as source in record_inits.py so its bytecode comes with the module's), its
placeholder names replaced by the fields' (`CodeType.replace`), so it runs the code `dataclasses` would write,
as fast. What `dataclasses` itself records differs in one place:
`__dataclass_params__` says `init`, `repr`, `eq` and `frozen` are off (it did not make those methods; nothing
here or in pydantic reads it), so a stdlib frozen dataclass cannot subclass a record nor a record one.

One switch away from the library: `TAGENGINE_RECORDS=dataclasses` in the environment makes every record
`dataclasses.dataclass(frozen=True, ...)` itself (`BY_LIBRARY`). Only public APIs are used;
`tests/test_records.py` holds a record and its library twin to the same behaviour.
"""

from __future__ import annotations

import dataclasses
import os
import reprlib
from collections.abc import Callable
from operator import attrgetter
from types import CodeType, FunctionType
from typing import Any, TypeVar, cast, dataclass_transform

from . import record_inits

BY_LIBRARY = os.environ.get("TAGENGINE_RECORDS") == "dataclasses"

_T = TypeVar("_T")
_set = object.__setattr__


class _Factory:
    """The default an `__init__` shows for a field made by its `default_factory` (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[_T] | None = None, /, *, kw_only: bool = False, slots: bool = False, eq: bool = True) -> Any:
    """`@dataclass(frozen=True, kw_only=..., slots=..., eq=...)`, made without compiling per class."""

    def wrap(c: type[_T]) -> type[_T]:
        if BY_LIBRARY:
            return dataclasses.dataclass(c, frozen=True, kw_only=kw_only, slots=slots, eq=eq)
        return _made(c, kw_only=kw_only, slots=slots, eq=eq)

    return wrap if cls is None else wrap(cls)


def _made(cls: type[_T], *, kw_only: bool, slots: bool, eq: bool) -> type[_T]:
    doc = cls.__dict__.get("__doc__")
    if not doc:  # dataclasses would describe the class by its `__init__`, which is not made yet
        cls.__doc__ = "-"
    made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only, slots=slots)
    own = made.__dict__
    every = dataclasses.fields(made)
    if any((not isinstance(f.type, str) and isinstance(f.type, dataclasses.InitVar)) or "InitVar" in str(f.type)
           for f in made.__dataclass_fields__.values() if f not in every):
        raise TypeError(f"{made.__qualname__}: a record takes no InitVar")
    methods: dict[str, Any] = {"__init__": _init_of(made, every, slots), "__repr__": _repr_of(every),
                               "__setattr__": _frozen_setattr(made, every),
                               "__delattr__": _frozen_delattr(made, every)}
    if eq:
        methods["__eq__"] = _eq_of(every)
        methods["__hash__"] = _hash_of(every)
    if slots:
        methods["__getstate__"], methods["__setstate__"] = _state_of(every)
    for name, method in methods.items():
        # a class's own method stays, as in dataclasses (a `__hash__` of None is what defining `__eq__` left)
        if name not in own or (name == "__hash__" and own[name] is None):
            method.__qualname__ = f"{made.__qualname__}.{name}"
            method.__module__ = made.__module__
            setattr(made, name, method)
    if not doc:
        import inspect

        try:
            made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
        except (TypeError, ValueError):
            made.__doc__ = made.__name__
    return cast("type[_T]", made)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these fields of a record (a tuple even for one field or none, as dataclasses compares)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_of(every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any, Any], Any]:
    key = _getter(tuple(f.name for f in every if f.compare))

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash_of(every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], int]:
    key = _getter(tuple(f.name for f in every if (f.compare if f.hash is None else f.hash)))

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _repr_of(every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], str]:
    shown = tuple(f.name for f in every if f.repr)

    def __repr__(self: Any) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inside})"

    return reprlib.recursive_repr()(__repr__)  # '...' where a record holds itself


def _frozen_setattr(cls: Any, every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any, str, Any], None]:
    names = frozenset(f.name for f in every)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _frozen_delattr(cls: Any, every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any, str], None]:
    names = frozenset(f.name for f in every)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _state_of(every: tuple[dataclasses.Field[Any], ...]) -> tuple[Callable[[Any], Any], Callable[[Any, Any], None]]:
    """A slotted frozen record's pickled state: the list of its fields' values, as dataclasses pickles one
    (a ruleset kept in the cache folder by earlier code reads back the same)."""
    names = tuple(f.name for f in every)

    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: Any) -> None:
        for name, value in zip(names, state, strict=False):
            _set(self, name, value)

    return __getstate__, __setstate__


_TEMPLATES: dict[tuple[int, bool], CodeType] = {}
INITS_KEPT = 24  # record_inits.py holds the templates for up to this many fields


def init_source(n: int, then: bool) -> str:
    """The `__init__` template that sets n fields (placeholders `_0`, `_1`...) and then, if asked, calls
    `__then(self)`: one line, as record_inits.py keeps it."""
    body = [f"__set(self, '_{i}', _{i})" for i in range(n)] + (["__then(self)"] if then else [])
    params = "".join(f", _{i}" for i in range(n))
    return f"def init_{n}{'_then' if then else ''}(self{params}): {'; '.join(body) or 'pass'}\n"


def inits_module_text() -> str:
    """What record_inits.py holds: every template up to INITS_KEPT fields."""
    lines = [f"{_INITS_HEAD}\n"] + [init_source(n, then) for n in range(INITS_KEPT + 1) for then in (False, True)]
    return "".join(lines)


_INITS_HEAD = '''"""The `__init__` templates `records.frozen` makes each record's `__init__` from (decision PF-42): one
for each number of fields, without and with the call that finishes a record (`__then`: its default factories,
its fields not given to `__init__`, `__post_init__`). Kept as source, so Python keeps their bytecode with the
module's and making a record compiles nothing. `__set` and `__then` are the globals each record's `__init__` is
given. Written by `records.inits_module_text()` (tests/test_records.py checks it)."""
# mypy: ignore-errors
# ruff: noqa: E501, E702, F821
'''


def _template(n: int, then: bool) -> CodeType:
    """The template for n fields: from record_inits.py, else compiled once per process (more fields than it keeps)."""
    code = _TEMPLATES.get((n, then))
    if code is None:
        kept = getattr(record_inits, f"init_{n}{'_then' if then else ''}", None)
        if kept is None:
            space: dict[str, Any] = {}
            exec(init_source(n, then), space)  # a fixed text made of numbers
            kept = space[f"init_{n}{'_then' if then else ''}"]
        code = _TEMPLATES[(n, then)] = kept.__code__
    return code


def _init_of(cls: type, every: tuple[dataclasses.Field[Any], ...], slots: bool) -> Callable[..., None]:
    """The `__init__` dataclasses would write: positional fields, then keyword-only ones, each set with
    `object.__setattr__`; defaults as the function's defaults; fields made by a factory, fields not given to
    `__init__` but with a default, and `__post_init__` done by one closure after the fields are set."""
    given = [f for f in every if f.init]
    ordered = [f for f in given if not f.kw_only] + [f for f in given if f.kw_only]
    positional = sum(1 for f in given if not f.kw_only)
    made_later = tuple((f.name, f.default_factory) for f in given if f.default_factory is not dataclasses.MISSING)
    # a field not given to `__init__` is set there when made by a factory, or has a default and no class
    # attribute can hold it (slots), as dataclasses does; else reading it reads the class's default
    set_later: tuple[tuple[str, Any, Any], ...] = tuple(
        (f.name, f.default, f.default_factory) for f in every
        if not f.init
        and (f.default_factory is not dataclasses.MISSING or (slots and f.default is not dataclasses.MISSING)))
    post_init = getattr(cls, "__post_init__", None) is not None

    def then(self: Any) -> None:
        for name, factory in made_later:
            if getattr(self, name) is _FACTORY:
                _set(self, name, factory())
        for name, default, factory in set_later:
            _set(self, name, factory() if default is dataclasses.MISSING else default)
        if post_init:
            self.__post_init__()

    names = tuple(f.name for f in ordered)
    me = "__dataclass_self__" if "self" in names else "self"
    template = _template(len(names), bool(made_later or set_later or post_init))
    consts = tuple(names[int(c[1:])] if isinstance(c, str) and c[:1] == "_" and c[1:].isdigit() else c
                   for c in template.co_consts)
    code = template.replace(co_varnames=(me, *names), co_consts=consts, co_argcount=1 + positional,
                            co_kwonlyargcount=len(names) - positional, co_name="__init__",
                            co_qualname=f"{cls.__qualname__}.__init__")
    defaults = {f.name: _FACTORY if f.default is dataclasses.MISSING else f.default for f in ordered
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    space = {"__set": _set, "__then": then, "__builtins__": __builtins__}
    init = FunctionType(code, space, "__init__",
                        tuple(defaults[f.name] for f in ordered[:positional] if f.name in defaults) or None)
    init.__kwdefaults__ = {f.name: defaults[f.name] for f in ordered[positional:] if f.name in defaults} or None
    init.__annotations__ = {**{f.name: f.type for f in ordered}, "return": None}
    return init
