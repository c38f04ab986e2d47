"""`frozen`: the engine's frozen dataclasses, made without compiling code for each class (decision PF-42).

`dataclasses.dataclass(frozen=True)` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__` and `__delattr__` as source text and compiles it: about 0.5 ms a class, a third of what a cold
command spent on its imports. `frozen` first does what `dataclasses` does but that (the fields, `__slots__`,
`__match_args__`, `__dataclass_fields__`, so `dataclasses.fields`, `replace`, `is_dataclass` and pydantic read a
record as the dataclass it is): itself for the shapes the engine's records have, without the library's generic
field processing (PF-72), and by the library for any other. It then gives the class the same methods without
compiling: `__init__`, `__eq__` and `__hash__` from templates, one per number of fields, kept as source in
record_inits.py (their bytecode comes with the module's) and given the fields' names (`CodeType.replace`), so they
run the code `dataclasses` would write, as fast, and every hash is the one it would give; the others from
closures. What is recorded of the dataclass differs from the library's in one place: `__dataclass_params__` says
`init`, `repr`, `eq` and `frozen` are off (it did not make those methods; nothing here or in pydantic reads it), so
a stdlib frozen dataclass cannot subclass a record nor a record one.

One switch away from the library: `TAGENGINE_RECORDS=dataclasses` in the environment makes every record
`dataclasses.dataclass(frozen=True, ...)` itself (`BY_LIBRARY`). One private name of the library is read, the mark a
`Field` carries to be listed by `fields()` (pinned in tests/test_records.py); `tests/test_records.py` holds a
record and its library twin to the same behaviour.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import re
import reprlib
import sys
from collections.abc import Callable
from types import CodeType, FunctionType, MemberDescriptorType, ModuleType
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

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
    made: Any = _as_dataclass(cls, kw_only, slots)
    if made is None:  # a shape left to the library (see `_as_dataclass`)
        made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only, slots=slots)
    own = made.__dict__
    every = dataclasses.fields(made)
    if len(every) != len(made.__dataclass_fields__) and any(
            (not isinstance(f.type, str) and isinstance(f.type, dataclasses.InitVar)) or "InitVar" in str(f.type)
            for f in made.__dataclass_fields__.values() if f not in every):
        raise TypeError(f"{made.__qualname__}: a record takes no InitVar")
    names = tuple(f.name for f in every)
    frozen_names = frozenset(names)
    methods: dict[str, Any] = {"__init__": _init_of(made, every, slots), "__repr__": _repr_of(every),
                               "__setattr__": _frozen_setattr(made, frozen_names),
                               "__delattr__": _frozen_delattr(made, frozen_names)}
    if eq:  # `(self.a, self.b) == (other.a, other.b)` for one of the same class, and the hash of the compared
        # fields (or of those marked `hash=True`), as dataclasses compares and hashes
        compared = [f.name for f in every if f.compare]
        methods["__eq__"] = _from_template(f"eq_{len(compared)}", compared, {})
        hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
        methods["__hash__"] = _from_template(f"hash_{len(hashed)}", hashed, {})
    if slots:
        methods["__getstate__"], methods["__setstate__"] = _state_of(names)
    # the signature is the `__init__` made here, unless the class says otherwise (`inspect.signature`'s order)
    signed_here = "__init__" not in own and "__new__" not in own and type(made) is type
    for name, method in methods.items():
        # a class's own method stays, as in dataclasses (a `__hash__` of None is what defining `__eq__` left)
        if name not in own or (name == "__hash__" and own[name] is None):
            method.__qualname__ = f"{made.__qualname__}.{name}"
            method.__module__ = made.__module__
            setattr(made, name, method)
    if not doc:
        made.__doc__ = _signature_doc(made, signed_here)
    return cast("type[_T]", made)


# What `_as_dataclass` takes from dataclasses beyond its documented API (tests/test_records.py pins it): the mark,
# in a `Field`'s `_field_type`, that makes it one `fields()` lists
_FIELD: Any = dataclasses._FIELD  # type: ignore[attr-defined]
_LEADING_NAME = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")  # as dataclasses reads the type a text annotation names
# an annotation's text -> the module and name it leads with (None: no name), read once per text, not per class
_LEADING: dict[str, tuple[str | None, str] | None] = {}
_UNREAD: Any = object()
MAX_LEADING = 4096  # texts kept at most: a program that makes classes without end does not grow it without end
# every record's `__dataclass_params__`: init, repr, eq and frozen off, as the library records what it made of one
_OFF: Any = dataclasses.dataclass(type("Off", (), {"__doc__": "-"}), init=False, repr=False, eq=False)
_PARAMS = _OFF.__dataclass_params__


def _as_dataclass(cls: Any, kw_only: bool, slots: bool) -> Any:
    """`dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=..., slots=...)`, half of what making a
    record by the library cost (its field processing looks each field's annotation up three times, and its slots
    make the class again through generic code): the same fields, defaults, `__match_args__` and slots,
    for the shapes the engine's records have. Any other (an annotation that is or names ClassVar, InitVar or
    KW_ONLY, a class naming its own `__slots__`, a `Field` without an annotation, a mutable default, a
    frozen dataclass among the bases, a base's `__slots__` that is an iterator, a class whose module is not
    imported) is None: the library makes it, and says what is wrong with it as it does (decision PF-72). An
    InitVar a base holds is copied as the library copies it, and `_made` refuses it."""
    module = sys.modules.get(cls.__module__)
    own = cls.__dict__
    annotations: dict[str, Any] = own.get("__annotations__", {})
    if module is None or "__slots__" in own or any(
            hasattr(base.__dict__.get("__slots__"), "__next__") for base in cls.__mro__[1:-1]):
        return None
    space = module.__dict__
    found = [(name, annotation, getattr(cls, name, dataclasses.MISSING)) for name, annotation in annotations.items()]
    for _, annotation, default in found:
        if _names_special(annotation, space):
            return None
        if (default.default if isinstance(default, dataclasses.Field) else default).__class__.__hash__ is None:
            return None  # a mutable default, which the library refuses
    if any(isinstance(v, dataclasses.Field) and k not in annotations for k, v in own.items()):
        return None
    fields: dict[str, Any] = {}
    for base in cls.__mro__[-1:0:-1]:
        kept = getattr(base, "__dataclass_fields__", None)
        if kept is not None:
            if base.__dataclass_params__.frozen:
                return None
            fields.update(kept)
    cls.__dataclass_params__ = _PARAMS
    for name, annotation, default in found:
        f: Any = default
        if isinstance(default, dataclasses.Field):
            if f.default is dataclasses.MISSING:  # no class attribute stands for a factory or no default
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = dataclasses.field(default=dataclasses.MISSING if isinstance(default, MemberDescriptorType)
                                  else default)
        f.name, f.type = name, annotation
        f._field_type = _FIELD
        if f.kw_only is dataclasses.MISSING:
            f.kw_only = kw_only
        fields[name] = f
    cls.__dataclass_fields__ = fields
    every = [f for f in fields.values() if f._field_type is _FIELD]
    if "__match_args__" not in own:
        # set as the library sets it, through a metaclass's own `__setattr__` (mypy refuses the assignment)
        setattr(cls, "__match_args__", tuple(f.name for f in every if f.init and not f.kw_only))  # noqa: B010
    if slots:
        cls = _slotted(cls, tuple(f.name for f in every))
    abc.update_abstractmethods(cls)
    return cls


def _names_special(annotation: Any, space: dict[str, Any]) -> bool:
    """Whether an annotation is ClassVar, InitVar or KW_ONLY, or a text one names one as dataclasses would find
    it: its leading name among the class's module's globals, or a module there and a name in it."""
    named = annotation
    if isinstance(annotation, str):
        leading = _LEADING.get(annotation, _UNREAD)
        if leading is _UNREAD:  # the text's names depend on the text alone; what they name, on the module
            match = _LEADING_NAME.match(annotation)
            leading = None if match is None else (match[1], match[2])
            if len(_LEADING) < MAX_LEADING:
                _LEADING[annotation] = leading
        if leading is None:
            return False
        module_name, name = leading
        if module_name:
            module = space.get(module_name)
            space = module.__dict__ if isinstance(module, ModuleType) else {}
        named = space.get(name)
        if named is None:  # most annotations name a builtin or a class of another module
            return False
    if named is ClassVar or named is dataclasses.InitVar or named is dataclasses.KW_ONLY:
        return True
    # most annotations name no module global, or a class (InitVar and KW_ONLY, the classes among them, are above)
    return named is not None and not isinstance(named, type) and (
        isinstance(named, dataclasses.InitVar) or getattr(named, "__origin__", None) is ClassVar)


def _slotted(cls: Any, names: tuple[str, ...]) -> Any:
    """The class made again with `__slots__` for its fields but those a base holds already, as dataclasses does."""
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        held = base.__dict__.get("__slots__")
        if held is not None:
            inherited.update((held,) if isinstance(held, str) else held)
    space = dict(cls.__dict__)
    space["__slots__"] = tuple(name for name in names if name not in inherited)
    for name in (*names, "__dict__", "__weakref__"):
        space.pop(name, None)
    made = type(cls)(cls.__name__, cls.__bases__, space)
    made.__qualname__ = cls.__qualname__
    return made


def _signature_doc(cls: Any, signed_here: bool) -> str:
    """The docstring dataclasses gives a class that has none: its name and its signature. Written here from the
    `__init__` just made while every annotation is text (a module with postponed annotations, as the engine's
    are), as `inspect.signature` prints it, so that making a record does not need `inspect`, which a command
    line process loads only when something reads it (PF-68). Any other annotation, or a class whose signature
    is not that `__init__` (`signed_here` false: its own `__init__` or `__new__`, a metaclass), is left to
    `inspect`."""
    init = cls.__init__
    annotations = init.__annotations__
    if not signed_here or not all(isinstance(a, str) for name, a in annotations.items() if name != "return"):
        import inspect

        try:
            return f"{cls.__name__}{inspect.signature(cls)}".replace(" -> None", "")
        except (TypeError, ValueError):
            return str(cls.__name__)
    code = init.__code__
    names = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]  # the instance's argument left out
    positional = code.co_argcount - 1
    given = init.__defaults__ or ()
    defaults = {**dict(zip(names[positional - len(given):positional], given, strict=True)),
                **(init.__kwdefaults__ or {})}
    shown = []
    for i, name in enumerate(names):
        if i == positional:
            shown.append("*")  # the keyword-only ones follow
        text = f"{name}: {annotations[name]!r}"
        shown.append(f"{text} = {defaults[name]!r}" if name in defaults else text)
    return f"{cls.__name__}({', '.join(shown)})"


def _repr_of(every: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], str]:
    shown = tuple(f.name for f in every if f.repr)

    def __repr__(self: Any) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inside})"

    return reprlib.recursive_repr()(__repr__)  # '...' where a record holds itself


def _frozen_setattr(cls: Any, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    refused = _refusal(cls, names, "assign to")

    def __setattr__(self: Any, name: str, value: Any) -> None:
        refused(self, name)
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _frozen_delattr(cls: Any, names: frozenset[str]) -> Callable[[Any, str], None]:
    refused = _refusal(cls, names, "delete")

    def __delattr__(self: Any, name: str) -> None:
        refused(self, name)
        super(cls, self).__delattr__(name)

    return __delattr__


def _refusal(cls: Any, names: frozenset[str], verb: str) -> Callable[[Any, str], None]:
    """What a frozen record's `__setattr__` and `__delattr__` check first, as dataclasses' do: the record's own
    class, or any field, is frozen (a subclass that is not a record may set its own other attributes)."""

    def refused(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot {verb} field {name!r}")

    return refused


def _state_of(names: tuple[str, ...]) -> tuple[Callable[[Any], Any], Callable[[Any, Any], None]]:
    """A slotted frozen record's pickled state: the list of its fields' values, as dataclasses pickles one
    (a ruleset kept in the cache folder by earlier code reads back the same)."""

    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: Any) -> None:
        for name, value in zip(names, state, strict=False):
            _set(self, name, value)

    return __getstate__, __setstate__


_Places = tuple[tuple[int, int], ...]  # where a template's tuple holds placeholders: (index, field number) pairs
# A template's code and the places of the placeholders in its constants, names and local names: found once per
# template, so each record's functions are made by putting names in place, not by matching every item again
_Template = tuple[CodeType, _Places, _Places, _Places]
_TEMPLATES: dict[str, _Template] = {}
KEPT_FIELDS = 24  # record_inits.py holds the templates for up to this many fields
_PLACEHOLDER = re.compile(r"p[0-9]+")


def template_source(name: str) -> str:
    """The source of one template, by its name: `init_N` sets N fields (placeholders `p0`, `p1`...), `_f` when
    a field may be left to its default factory (`__f0()` where the argument is the `__F` mark), `_post` then
    calls `__post_init__`, `_then` calls `__then(self)` (the rest of what makes a record: fields not given to
    `__init__`, then `__post_init__`); `eq_N` and `hash_N` compare and hash N fields. One line each."""
    kind, n_text, *rest = name.split("_")
    n = int(n_text)
    fields = [f"p{i}" for i in range(n)]
    if kind == "eq":
        mine, theirs = (f"({''.join(f'{who}.{f}, ' for f in fields)})" for who in ("self", "other"))
        same = "other.__class__ is self.__class__"
        return f"def {name}(self, other): return {mine} == {theirs} if {same} else NotImplemented\n"
    if kind == "hash":
        return f"def {name}(self): return hash(({''.join(f'self.{f}, ' for f in fields)}))\n"
    made = "f" in rest
    body = [f"__set(self, '{f}', __f{f[1:]}() if {f} is __F else {f})" if made else f"__set(self, '{f}', {f})"
            for f in fields]
    body += ["self.__post_init__()"] if "post" in rest else ["__then(self)"] if "then" in rest else []
    return f"def {name}(self{''.join(f', {f}' for f in fields)}): {'; '.join(body) or 'pass'}\n"


def template_names() -> list[str]:
    """Every template record_inits.py keeps."""
    tails = ("", "_post", "_then")
    return [*(f"init_{n}{made}{tail}" for n in range(KEPT_FIELDS + 1) for made in ("", "_f") for tail in tails),
            *(f"{kind}_{n}" for kind in ("eq", "hash") for n in range(KEPT_FIELDS + 1))]


def templates_module_text() -> str:
    """What record_inits.py holds."""
    return "".join([f"{_TEMPLATES_HEAD}\n", *(template_source(name) for name in template_names())])


_TEMPLATES_HEAD = '''"""The templates `records.frozen` makes each record's `__init__`, `__eq__` and `__hash__` from
(decision PF-42): one for each number of fields (see `records.template_source`). Kept as source, so Python
keeps their bytecode with the module's and making a record compiles nothing. `__set`, `__F`, `__f0`... and
`__then` are the globals each record's `__init__` is given. Written by `records.templates_module_text()`
(tests/test_records.py checks it)."""
# mypy: ignore-errors
# ruff: noqa: E501, E702, F821
'''


def _placeholders(items: tuple[Any, ...]) -> _Places:
    return tuple((i, int(x[1:])) for i, x in enumerate(items) if isinstance(x, str) and _PLACEHOLDER.fullmatch(x))


def _template(name: str) -> _Template:
    """A template by its name: from record_inits.py, else compiled once per process (more fields than it keeps)."""
    made = _TEMPLATES.get(name)
    if made is None:
        kept = getattr(record_inits, name, None)
        if kept is None:
            space: dict[str, Any] = {}
            exec(template_source(name), space)  # a fixed text made of numbers
            kept = space[name]
        code = kept.__code__
        made = _TEMPLATES[name] = (code, _placeholders(code.co_consts), _placeholders(code.co_names),
                                   _placeholders(code.co_varnames))
    return made


def _renamed(items: tuple[Any, ...], at: _Places, names: list[str]) -> tuple[Any, ...]:
    """`items` with each placeholder at `at` replaced by its field's name."""
    if not at:
        return items
    out = list(items)
    for i, field in at:
        out[i] = names[field]
    return tuple(out)


def _from_template(name: str, names: list[str], space: dict[str, Any], **replaced: Any) -> Any:
    """A function made from a template, its placeholders (`p0`... as names, strings and attributes) replaced by
    the fields' names: the code dataclasses would compile, without compiling."""
    code, consts_at, names_at, varnames_at = _template(name)
    varnames = _renamed(code.co_varnames, varnames_at, names)
    if "self" in names:  # the instance's argument takes another name, as in dataclasses
        varnames = ("__dataclass_self__", *varnames[1:])
    code = code.replace(co_consts=_renamed(code.co_consts, consts_at, names),
                        co_names=_renamed(code.co_names, names_at, names), co_varnames=varnames,
                        co_name=f"__{name.split('_')[0]}__", **replaced)
    return FunctionType(code, {"__builtins__": __builtins__, **space}, code.co_name)


def _init_of(cls: type, every: tuple[dataclasses.Field[Any], ...], slots: bool) -> Callable[..., None]:
    """The `__init__` dataclasses would write: positional fields, then keyword-only ones, each set with
    `object.__setattr__` (a field left to its default factory made there), defaults as the function's defaults,
    then `__post_init__`; fields not given to `__init__` but made by a factory, or with a default and slots, are
    set by one closure before it."""
    positional: list[dataclasses.Field[Any]] = []
    keywords: list[dataclasses.Field[Any]] = []
    set_later: list[tuple[str, Any, Any]] = []
    for f in every:  # one pass: this runs for every record a process imports
        if f.init:
            (keywords if f.kw_only else positional).append(f)
        # a field not given to `__init__` is set there when made by a factory, or has a default and no class
        # attribute can hold it (slots), as dataclasses does; else reading it reads the class's default
        elif f.default_factory is not dataclasses.MISSING or (slots and f.default is not dataclasses.MISSING):
            set_later.append((f.name, f.default, f.default_factory))
    ordered = positional + keywords
    names = [f.name for f in ordered]
    if any(name.startswith("__") for name in names):
        raise TypeError(f"{cls.__qualname__}: a record's field names do not start with two underscores")
    post_init = getattr(cls, "__post_init__", None) is not None
    space: dict[str, Any] = {"__set": _set, "__F": _FACTORY}
    if set_later:
        def then(self: Any) -> None:
            for name, default, factory in set_later:
                _set(self, name, factory() if default is dataclasses.MISSING else default)
            if post_init:
                self.__post_init__()

        space["__then"] = then
    given_defaults: list[Any] = []  # the positional fields' defaults, from the first that has one
    keyword_defaults: dict[str, Any] = {}
    made = False
    last_with_default = ""
    for i, f in enumerate(ordered):
        if f.default_factory is not dataclasses.MISSING:
            made = True
            space[f"__f{i}"] = f.default_factory
            default: Any = _FACTORY
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif given_defaults and not f.kw_only:
            # refused as `dataclass` refuses it, in its words, which name the field before from Python 3.13 on:
            # the library checks the order only where it writes the `__init__` itself
            after = f" {last_with_default!r}" if sys.version_info >= (3, 13) else ""
            raise TypeError(f"non-default argument {f.name!r} follows default argument{after}")
        else:
            continue
        if f.kw_only:
            keyword_defaults[f.name] = default
        else:
            given_defaults.append(default)
            last_with_default = f.name
    name = (f"init_{len(names)}{'_f' if made else ''}"
            f"{'_then' if set_later else '_post' if post_init else ''}")
    init = _from_template(name, names, space, co_argcount=1 + len(positional),
                          co_kwonlyargcount=len(keywords), co_qualname=f"{cls.__qualname__}.__init__")
    init.__defaults__ = tuple(given_defaults) or None
    init.__kwdefaults__ = keyword_defaults or None
    annotations: dict[str, Any] = {f.name: f.type for f in ordered}
    annotations["return"] = None
    init.__annotations__ = annotations
    return cast("Callable[..., None]", init)
