"""`frozen` (decision PF-42): the engine's frozen dataclasses, made without compiling their methods per class, behave
as `dataclasses.dataclass(frozen=True, ...)` makes them: each shape is held to its library twin here, and every
record of the engine to the one the library makes of it (`TAGENGINE_RECORDS=dataclasses`, in a child process)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import os
import pickle
import subprocess
import sys
import types
from typing import Any, ClassVar

import pytest

from conftest import ROOT
from tagengine._internal.records import BY_LIBRARY, KEPT_FIELDS, frozen, templates_module_text


def both(**options: Any):
    """The class made by `frozen` and by the library, from one body."""

    def make(body):
        space = {k: v for k, v in body.__dict__.items() if k not in ("__dict__", "__weakref__")}
        ours = frozen(**options)(type(body.__name__, (), dict(space)))
        theirs = dataclasses.dataclass(frozen=True, **options)(type(body.__name__, (), dict(space)))
        return ours, theirs

    return make


class Plain:
    a: int
    b: str = "x"
    c: tuple[int, ...] = ()


class Keywords:
    """A definition's shape: keyword-only, defaults, a factory, a field worked out after."""

    K: ClassVar[int] = 3
    a: int
    b: int = 0
    c: list[int] = dataclasses.field(default_factory=list)
    d: int = dataclasses.field(init=False, default=5)
    e: str = dataclasses.field(default="e", repr=False, compare=False)
    f: frozenset[str] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "f", frozenset({str(self.a)}))


class NoFields:
    pass


class OneField:
    a: int


class Self:
    self: int
    other: int = 2


SHAPES = [
    (Plain, {}, [(1,), (1, "y", (2,))], [{}]),
    (Plain, {"slots": True}, [(1,), (1, "y", (2,))], [{}]),
    (Keywords, {"kw_only": True, "slots": True}, [()], [{"a": 1}, {"a": 2, "b": 3, "c": [4], "e": "z"}]),
    (Keywords, {"kw_only": True}, [()], [{"a": 1}]),
    (NoFields, {"slots": True}, [()], [{}]),
    (OneField, {"slots": True}, [(7,)], [{}]),
    (Self, {}, [(1,), (1, 3)], [{}]),
    (Plain, {"eq": False}, [(1,)], [{}]),
]


class OwnInit:
    """(Its docstring is taken away below.)"""

    a: int

    def __init__(self, *parts: str) -> None:
        object.__setattr__(self, "a", len(parts))


def test_pf_68_a_record_without_a_docstring_is_described_as_the_library_describes_it():
    """Its name and its signature: written from the `__init__` made here while every annotation is text (each
    shape above that has no docstring), else by `inspect`: a class's own `__init__` (here one taking `*parts`,
    which a signature read from the made `__init__` would leave out) or annotations that are not text."""
    own = {k: v for k, v in OwnInit.__dict__.items() if k != "__doc__"}
    typed = {"__annotations__": {"a": int, "b": "str"}, "b": "x"}
    for space in (own, typed, {"__annotations__": {"a": "int"}}):
        body = type("Body", (), space)
        ours, theirs = both()(body)
        assert ours.__doc__ == theirs.__doc__ != "-"
    assert both()(type("Body", (), own))[0].__doc__ == "Body(*parts: 'str') -> 'None'"  # as dataclasses has it


def calls(shape):
    _, _, positional, keywords = shape
    return [(a, k) for a in positional for k in keywords]


def test_the_switch_is_off_in_the_tests():
    assert not BY_LIBRARY  # else this file compares the library with itself


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0].__name__}-{'-'.join(s[1]) or 'plain'}")
def test_a_record_behaves_as_its_library_twin(shape):
    body, options, _, _ = shape
    ours, theirs = both(**options)(body)
    assert dataclasses.is_dataclass(ours)
    assert [(f.name, f.type, f.init, f.repr, f.compare, f.kw_only, f.default) for f in dataclasses.fields(ours)] == \
        [(f.name, f.type, f.init, f.repr, f.compare, f.kw_only, f.default) for f in dataclasses.fields(theirs)]
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ours.__doc__ == theirs.__doc__
    assert ours.__match_args__ == theirs.__match_args__
    assert getattr(ours, "__slots__", None) == getattr(theirs, "__slots__", None)
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)
    assert ours.__init__.__qualname__ == theirs.__init__.__qualname__
    assert ours.__init__.__module__ == theirs.__init__.__module__
    for args, kwargs in calls(shape):
        x, y = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(x) == repr(y)
        assert (x == ours(*args, **kwargs)) == (y == theirs(*args, **kwargs))
        assert x != y  # another class, as two dataclasses are
        if "eq" not in options:
            try:
                expected = hash(y)
            except TypeError:  # a list among the fields
                with pytest.raises(TypeError):
                    hash(x)
            else:
                assert hash(x) == expected
        for f in dataclasses.fields(ours):
            assert getattr(x, f.name) == getattr(y, f.name)
        for name in [f.name for f in dataclasses.fields(ours)] + ["elsewhere"]:
            with pytest.raises(dataclasses.FrozenInstanceError) as ours_error:
                setattr(x, name, 1)
            # Python 3.11's slotted frozen dataclass refuses a name that is no field with a TypeError (its
            # `__setattr__` names the class before the slots made it anew); a record says FrozenInstanceError
            with pytest.raises((dataclasses.FrozenInstanceError, TypeError)) as theirs_error:
                setattr(y, name, 1)
            if theirs_error.type is dataclasses.FrozenInstanceError:
                assert str(ours_error.value) == str(theirs_error.value)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(x, name)
        assert x.__reduce_ex__(4)[2:] == y.__reduce_ex__(4)[2:]  # what pickle writes but the class
        again = copy.deepcopy(x)  # through the same reduction as pickle
        assert repr(again) == repr(x) and type(again) is ours
        if "eq" not in options:
            assert again == x and copy.copy(x) == x
        else:
            assert copy.copy(x) is not x and repr(copy.deepcopy(x)) == repr(x)
        if options.get("slots"):
            assert x.__getstate__() == y.__getstate__()  # a ruleset kept by earlier code reads back the same
        init = [f.name for f in dataclasses.fields(ours) if f.init]
        if init:
            changed = dataclasses.replace(x, **{init[0]: 9})
            assert getattr(changed, init[0]) == 9 and type(changed) is ours


@frozen(kw_only=True, slots=True)
class Kept:
    """A record pickle finds by its name."""

    a: int
    b: tuple[str, ...] = ()
    c: dict[str, int] = dataclasses.field(default_factory=dict)


@frozen
class KeptLoose:
    """A record without slots."""

    a: int
    b: Kept | None = None


def test_records_pickle_and_read_back_equal():
    for x in [Kept(a=1), Kept(a=2, b=("x",), c={"y": 3}), KeptLoose(4, Kept(a=5))]:
        again = pickle.loads(pickle.dumps(x))
        assert again == x and type(again) is type(x) and repr(again) == repr(x)
    assert Kept(a=1).__getstate__() == [1, (), {}]  # the library's form: the fields' values in order


def test_equal_records_hash_as_the_library_hashes_them():
    """Sets of records iterate in the library's order: the hash is the tuple of the compared fields."""
    ours, theirs = both(slots=True)(Plain)
    for args in [(1,), (2, "y"), (3, "z", (1, 2))]:
        assert hash(ours(*args)) == hash(theirs(*args)) == hash(tuple(getattr(ours(*args), n) for n in "abc"))
    one, one_lib = both(slots=True)(OneField)
    assert hash(one(5)) == hash(one_lib(5)) == hash((5,))
    assert one(5) == one(5) and one(5) != one(6) and one(5) != one_lib(5)


@pytest.mark.parametrize("wrong", [((), {}), ((1, 2, 3, 4), {}), ((1,), {"z": 1}), ((1,), {"a": 2})])
def test_wrong_arguments_are_refused_as_the_library_refuses_them(wrong):
    ours, theirs = both()(Plain)
    args, kwargs = wrong
    with pytest.raises(TypeError) as ours_error:
        ours(*args, **kwargs)
    with pytest.raises(TypeError) as theirs_error:
        theirs(*args, **kwargs)
    assert str(ours_error.value) == str(theirs_error.value)


def test_a_default_factory_makes_a_new_value_each_time():
    ours, _ = both(kw_only=True, slots=True)(Keywords)
    first, second = ours(a=1), ours(a=1)
    assert first.c == [] and first.c is not second.c and first.f == frozenset({"1"}) and first.d == 5


def test_a_class_keeps_the_methods_it_defines():
    class Own:
        a: int

        def __repr__(self) -> str:
            return "mine"

        def __eq__(self, other: object) -> bool:
            return True

    ours, theirs = both(slots=True)(Own)
    assert repr(ours(1)) == repr(theirs(1)) == "mine"
    assert ours(1) == ours(2) and hash(ours(1)) == hash((1,))


def test_a_record_holding_itself_shows_dots():
    ours, theirs = both(slots=True)(OneField)
    box: list[Any] = []
    x, y = ours(box), theirs([])
    box.append(x)
    y.a.append(y)
    assert repr(x) == repr(y) == "OneField(a=[...])"


def test_an_init_var_is_refused():
    class WithInitVar:
        a: dataclasses.InitVar[int]

    with pytest.raises(TypeError, match="InitVar"):
        frozen(WithInitVar)


MADE_BY_RECORDS = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__getstate__",
                   "__setstate__", "__doc__"}  # what `frozen` gives a class after the fields are found


def as_library_records(cls: type) -> dict[str, Any]:
    """What `dataclasses` says of a class it processed: every entry of `__dataclass_fields__` (ClassVars too), its
    params, `__match_args__` and `__slots__`, and the class attributes that hold the fields' defaults."""
    return {"fields": {name: (f.name, f.type, f._field_type, f.default, f.default_factory, f.init, f.repr, f.hash,
                              f.compare, dict(f.metadata), f.kw_only)
                       for name, f in cls.__dataclass_fields__.items()},
            "params": repr(cls.__dataclass_params__), "match_args": cls.__match_args__,
            "slots": cls.__dict__.get("__slots__"), "abstract": getattr(cls, "__abstractmethods__", None),
            "qualname": cls.__qualname__, "names": sorted(set(cls.__dict__) - MADE_BY_RECORDS),
            "defaults": {name: cls.__dict__.get(name, "-") for name in cls.__dataclass_fields__
                         if not isinstance(cls.__dict__.get(name), types.MemberDescriptorType)}}


class Base:
    a: int
    b: str = "b"


class Sub:
    c: int = 3
    d: list[int] = dataclasses.field(default_factory=list, metadata={"m": 1})
    e: int = dataclasses.field(default=5, kw_only=False, repr=False)
    __match_args__ = ("e",)


class PlainBase:  # not a dataclass: a default from its attribute, and a slot a record then declares a field
    __slots__ = ("s",)
    b = "from the base"


class OnPlain:
    s: int
    b: str


class Left:
    a: int = 1


class Right:
    a: str = "y"
    r: int = 2


class Diamond:
    z: int = 0


@pytest.mark.parametrize("options", [{}, {"slots": True}, {"kw_only": True, "slots": True}, {"kw_only": True}])
def test_pf_72_the_fields_found_are_the_librarys_for_each_shape_the_engine_has(options, monkeypatch):
    """`records` finds a record's fields itself (decision PF-72): what it records is what `dataclasses` records
    when it makes the class with `init`, `repr` and `eq` off, as `records` had it do: a record, a record of a record
    (with its own `__match_args__`), a record on a class that is no dataclass (a default from that class's
    attribute, a slot it holds), a record on two dataclasses (the fields in the library's order), a local class (its
    qualified name kept when made again for slots). The library is not called for these shapes."""

    def library(body: type, *bases: type) -> type:
        space = {"__qualname__": body.__qualname__, **space_of(body)}
        return dataclasses.dataclass(type(body.__name__, bases, space), init=False, repr=False, eq=False, **options)

    def local() -> type:
        class Local:
            a: int = 0

        return Local

    def two_bases() -> tuple[type, ...]:
        return (dataclasses.dataclass(type("Left", (), space_of(Left))),
                dataclasses.dataclass(type("Right", (), space_of(Right))))

    theirs_base = library(Base)
    theirs = [theirs_base, library(Sub, theirs_base), library(OnPlain, PlainBase), library(Diamond, *two_bases()),
              library(local())]
    bases = two_bases()
    calls: list[type] = []
    real = dataclasses.dataclass
    monkeypatch.setattr(dataclasses, "dataclass", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    ours_base = frozen(**options)(type("Base", (), space_of(Base)))
    ours = [ours_base, frozen(**options)(type("Sub", (ours_base,), space_of(Sub))),
            frozen(**options)(type("OnPlain", (PlainBase,), space_of(OnPlain))),
            frozen(**options)(type("Diamond", bases, space_of(Diamond))), frozen(**options)(local())]
    assert calls == []
    for mine, library_made in zip(ours, theirs, strict=True):
        assert as_library_records(mine) == as_library_records(library_made), mine.__name__
    made = ours[1](a=1, e=6)
    assert (made.a, made.b, made.c, made.d, made.e) == (1, "b", 3, [], 6)
    assert ours[2](s=1).b == "from the base" and ours[3]().a == 1 and ours[4].__qualname__.endswith("<locals>.Local")


def space_of(body: type) -> dict[str, Any]:
    """A class's own attributes, each `Field` a copy (a class made of them sets each Field's name and type)."""
    return {k: copy.copy(v) if isinstance(v, dataclasses.Field) else v for k, v in body.__dict__.items()
            if k not in ("__dict__", "__weakref__")}


ALIAS = ClassVar  # a ClassVar under another name, which dataclasses finds in the module too


@pytest.mark.parametrize("annotations, space", [
    ({"k": "ClassVar[int]", "a": "int"}, {"k": 1}),
    ({"k": "ALIAS", "a": "int"}, {"k": 1}),
    ({"k": ClassVar[int], "a": "int"}, {"k": 1}),
    ({"k": "dataclasses.KW_ONLY", "a": "int"}, {}),
])
def test_pf_72_a_class_var_or_kw_only_leaves_the_class_to_the_library(annotations, space, monkeypatch):
    calls: list[type] = []
    real = dataclasses.dataclass
    monkeypatch.setattr(dataclasses, "dataclass", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    ours = frozen(slots=True)(type("Odd", (), {"__annotations__": annotations, **space}))
    theirs = real(type("Odd", (), {"__annotations__": annotations, **space}), init=False, repr=False, eq=False,
                  slots=True)
    assert len(calls) == 1
    assert as_library_records(ours) == as_library_records(theirs)


def test_pf_73_one_annotation_text_names_what_each_class_module_says(monkeypatch):
    """`records` reads an annotation's leading names once per text; what they name is looked up in each class's
    own module, as dataclasses does: `ALIAS` is a ClassVar here and a field's type in another module."""
    other = types.ModuleType("records_elsewhere")
    other.ALIAS, other.ALIAS_73 = int, int
    monkeypatch.setitem(sys.modules, other.__name__, other)
    monkeypatch.setitem(globals(), "ALIAS_73", ClassVar)  # a text no other test reads: read first elsewhere
    for text in ("ALIAS_73", "ALIAS_73", "ALIAS", "ALIAS"):
        there = frozen(slots=True)(type("There", (), {"__annotations__": {"a": "int", "k": text},
                                                       "__module__": other.__name__, "k": 1}))
        here = frozen(slots=True)(type("Here", (), {"__annotations__": {"a": "int", "k": text}, "k": 1}))
        assert [f.name for f in dataclasses.fields(here)] == ["a"] and here(2).k == 1, text
        assert [f.name for f in dataclasses.fields(there)] == ["a", "k"] and there(2, 3).k == 3, text


@pytest.mark.parametrize("flags", [{"hash": True, "compare": False}, {"hash": False}, {"compare": False}])
def test_pf_73_a_field_is_hashed_as_the_library_hashes_it(flags):
    """A field marked `hash=True` is hashed though not compared; `hash=False` is compared but not hashed."""
    def body():
        return type("Marked", (), {"__annotations__": {"a": "int", "b": "int"}, "b": dataclasses.field(**flags)})

    ours, theirs = frozen(body()), dataclasses.dataclass(body(), frozen=True)
    assert hash(ours(1, 2)) == hash(theirs(1, 2)) and hash(ours(1, 3)) == hash(theirs(1, 3))
    assert (ours(1, 2) == ours(1, 3)) is (theirs(1, 2) == theirs(1, 3))


@pytest.mark.parametrize("kw_only", [False, True])
def test_pf_73_a_field_without_a_default_after_one_with_is_refused_in_the_librarys_words(kw_only):
    """As `dataclass` refuses it (a keyword-only record may order its fields as it likes)."""
    def body():
        return type("Late", (), {"__annotations__": {"a": "int", "b": "int", "c": "int"}, "a": 1})

    if kw_only:
        made = frozen(kw_only=True)(body())
        assert made(b=2, c=3) == made(a=1, b=2, c=3) and made(a=0, b=2, c=3).a == 0
        return
    with pytest.raises(TypeError) as theirs:
        dataclasses.dataclass(body(), frozen=True)
    with pytest.raises(TypeError) as ours:
        frozen(body())
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value).startswith("non-default argument 'b' follows default argument")


class IteratedSlots:
    __slots__ = iter(("a",))


@pytest.mark.parametrize("space, bases", [
    ({"__annotations__": {"a": "list[int]"}, "a": []}, ()),  # a mutable default
    ({"__annotations__": {"a": "int"}, "a": dataclasses.field(default={})}, ()),
    ({"__annotations__": {"a": "int"}, "b": dataclasses.field(default=1)}, ()),  # a field without an annotation
    ({"__annotations__": {"a": "int"}, "__slots__": ("a",)}, ()),  # slots of its own
    ({"__annotations__": {"a": "int"}}, (IteratedSlots,)),  # a base's slots that cannot be read twice
    ({"__annotations__": {"b": "int"}}, "frozen"),  # a frozen dataclass's subclass
])
def test_pf_72_what_the_library_refuses_it_refuses_in_its_words(space, bases):
    if bases == "frozen":
        bases = (dataclasses.dataclass(frozen=True)(type("Frozen", (), {"__annotations__": {"a": "int"}})),)
    with pytest.raises((TypeError, ValueError)) as theirs:
        dataclasses.dataclass(type("Bad", bases, dict(space)), init=False, repr=False, eq=False, slots=True)
    with pytest.raises(theirs.type) as ours:
        frozen(slots=True)(type("Bad", bases, dict(space)))
    assert str(ours.value) == str(theirs.value)


def test_pf_72_an_init_var_of_a_base_is_refused():
    with_init_var = dataclasses.dataclass(type("Base", (), {"__annotations__": {"a": dataclasses.InitVar[int]}}))
    with pytest.raises(TypeError, match="InitVar"):
        frozen(type("Sub", (with_init_var,), {"__annotations__": {"b": "int"}}))


def test_pf_72_the_private_name_records_reads_is_there():
    """Pinned: the mark a `Field` carries in `__dataclass_fields__` when it is a field, which `fields()` filters
    on (a ClassVar's is another)."""
    made = dataclasses.dataclass(type("One", (), {"__annotations__": {"a": "int", "k": ClassVar[int]}, "k": 1}))
    kept = made.__dataclass_fields__
    assert kept["a"]._field_type is dataclasses._FIELD and dataclasses.fields(made) == (kept["a"],)
    assert kept["k"]._field_type is not dataclasses._FIELD


ENGINE_RECORDS = r"""
import dataclasses, importlib, inspect, json, pkgutil, re, sys
import tagengine._internal as internal
out = {}
for info in pkgutil.walk_packages(internal.__path__, internal.__name__ + "."):
    if info.name.endswith(("batch_dask", "__main__")):
        continue
    try:
        module = importlib.import_module(info.name)
    except ImportError:  # an optional extra that is not installed
        continue
    for name, cls in vars(module).items():
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == info.name):
            continue
        if "__setattr__" not in cls.__dict__:  # a mutable dataclass: the library's own
            continue
        out[f"{info.name}.{cls.__qualname__}"] = {
            "fields": [[f.name, str(f.type), f.init, f.repr, f.compare, f.hash, f.kw_only,
                        "-" if f.default is dataclasses.MISSING else repr(f.default),
                        f.default_factory is not dataclasses.MISSING] for f in dataclasses.fields(cls)],
            "signature": str(inspect.signature(cls)), "doc": cls.__doc__,
            "match_args": list(cls.__match_args__), "slots": list(getattr(cls, "__slots__", ["-"])),
            "hashable": cls.__hash__ is not None, "getstate": "__getstate__" in cls.__dict__,
            "eq": "__eq__" in cls.__dict__, "repr": "__repr__" in cls.__dict__,
        }
print(re.sub(r" at 0x[0-9a-f]+", " at 0x", json.dumps(out, sort_keys=True)))  # no object's address
"""


def engine_records(library: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TAGENGINE_RECORDS"}
    if library:
        env["TAGENGINE_RECORDS"] = "dataclasses"
    done = subprocess.run([sys.executable, "-c", ENGINE_RECORDS], capture_output=True, text=True, env=env,
                          cwd=ROOT, check=True, timeout=120)
    return json.loads(done.stdout)


def test_every_record_of_the_engine_is_what_the_library_would_make():
    ours, theirs = engine_records(False), engine_records(True)
    assert len(ours) > 100 and ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name] == theirs[name], name


KEEP = r"""
import pickle, sys
from tagengine._internal.ruleset import Ruleset
if sys.argv[1] == "dump":
    rs = Ruleset.load(sys.argv[2])
    sys.stdout.buffer.write(pickle.dumps((rs.file, rs.sheet, rs.party, rs.warnings, rs.requires)))
else:
    kept = pickle.loads(sys.stdin.buffer.read())
    rs = Ruleset.load(sys.argv[2])
    print(kept == (rs.file, rs.sheet, rs.party, rs.warnings, rs.requires))
"""


@pytest.mark.parametrize("library_first", [True, False])
def test_a_ruleset_kept_by_either_reads_back_equal_in_the_other(tmp_path, library_first):
    """The kept ruleset (PF-2) is a pickle of records: one written with the library's dataclasses reads back under
    `frozen` as the same ruleset, and the other way round."""
    ruleset = str(ROOT / "samples" / "rulesets" / "gravewatch.json")
    env = {k: v for k, v in os.environ.items() if k != "TAGENGINE_RECORDS"} | {"TAGENGINE_CACHE": ""}
    library = env | {"TAGENGINE_RECORDS": "dataclasses"}
    dump = subprocess.run([sys.executable, "-c", KEEP, "dump", ruleset], capture_output=True,
                          env=library if library_first else env, cwd=ROOT, check=True, timeout=120).stdout
    read = subprocess.run([sys.executable, "-c", KEEP, "read", ruleset], input=dump, capture_output=True,
                          env=env if library_first else library, cwd=ROOT, check=True, timeout=120).stdout
    assert read.strip() == b"True"


def test_the_kept_init_templates_are_what_records_writes():
    """record_inits.py is generated: `records.templates_module_text()` writes it (run it again after a change)."""
    kept = (ROOT / "tagengine" / "_internal" / "record_inits.py").read_text(encoding="utf-8")
    assert kept == templates_module_text()


def test_a_record_with_more_fields_than_the_kept_templates_is_made_all_the_same():
    many = KEPT_FIELDS + 3
    space = {"__annotations__": {f"f{i}": "int" for i in range(many)}, **{f"f{i}": i for i in range(5, many)}}
    ours = frozen(slots=True)(type("Many", (), dict(space)))
    theirs = dataclasses.dataclass(frozen=True, slots=True)(type("Many", (), dict(space)))
    x, y = ours(*range(100, 105)), theirs(*range(100, 105))
    assert repr(x).removeprefix("Many") == repr(y).removeprefix("Many") and x.f26 == 26
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
