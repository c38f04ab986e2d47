"""Issue 30: what tagengine keeps in the cache folder (decisions PF-2, PF-3, PF-5). An entry is read back only
when it is exactly what was written for its key; anything else, and every failure to read or write, is a
miss; a miss computes the same answer as no cache at all."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tagengine._internal.ruleset.load as ruleset_load
from conftest import SAMPLES, sample_dict
from tagengine._internal import disk_cache
from tagengine._internal.errors import RulesetError
from tagengine._internal.prompt import render
from tagengine._internal.ruleset import Ruleset, kept
from tagengine._internal.tags.model import MAX_ATTRIBUTES
from tagengine._internal.tags.parse import (
    PARSER_KIND,
    TERMINALS_KIND,
    _expressions,
    _lexed,
    _tag_pieces,
    _tag_start,
    judged_by_lark,
    parser,
    terminals,
)

GRAVEWATCH = SAMPLES / "rulesets" / "gravewatch.json"


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A cache folder of this test's own."""
    monkeypatch.setenv(disk_cache.VARIABLE, str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(folder: Path, kind: str) -> list[Path]:
    return sorted((folder / kind).glob("[!.]*")) if (folder / kind).is_dir() else []


# -- the folder and its entries -------------------------------------------------------------------------------
def test_the_folder_is_chosen_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.VARIABLE, str(tmp_path / "here"))
    assert disk_cache.folder() == str(tmp_path / "here")
    monkeypatch.setenv(disk_cache.VARIABLE, "")
    assert disk_cache.folder() is None
    disk_cache.write_entry("k", "a" * 64, b"x")  # nothing kept, nothing raised
    assert disk_cache.read_entry("k", "a" * 64) is None
    monkeypatch.delenv(disk_cache.VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.folder() == str(tmp_path / "xdg" / "tagengine")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert disk_cache.folder() == str(tmp_path / "home" / ".cache" / "tagengine")


def test_an_entry_is_read_back_only_as_written(folder):
    key = disk_cache.digest(b"inputs")
    disk_cache.write_entry("k", key, b"payload \n with a line break")
    assert disk_cache.read_entry("k", key) == b"payload \n with a line break"
    (path,) = entries(folder, "k")
    whole = path.read_bytes()
    for spoilt in (whole[:-1], whole[:-1] + b"X", whole.replace(key.encode(), b"0" * 64), b"", b"\n" + whole,
                   whole.replace(disk_cache.FORMAT, b"tagengine-cache/0")):
        path.write_bytes(spoilt)
        assert disk_cache.read_entry("k", key) is None, spoilt[:80]
    assert disk_cache.read_entry("k", disk_cache.digest(b"other inputs")) is None
    disk_cache.write_entry("k", key, b"payload")  # a bad entry is replaced by the next write
    assert disk_cache.read_entry("k", key) == b"payload"


def test_digest_keeps_its_parts_apart():
    assert disk_cache.digest(b"ab", b"c") != disk_cache.digest(b"a", b"bc")


def test_a_folder_that_cannot_be_written_is_a_miss_not_an_error(folder):
    folder.parent.mkdir(exist_ok=True)
    folder.write_text("a file where the folder should be")
    disk_cache.write_entry("k", "a" * 64, b"x")
    assert disk_cache.read_entry("k", "a" * 64) is None
    rs = Ruleset.load(GRAVEWATCH)  # and so is every user of it
    assert rs.name == "Gravewatch"


def test_the_least_recently_used_entries_go_first(folder, monkeypatch):
    monkeypatch.setattr(disk_cache, "MAX_ENTRIES", 3)
    keys = [disk_cache.digest(bytes([i])) for i in range(5)]
    for i, k in enumerate(keys[:3]):
        disk_cache.write_entry("k", k, b"v")
        os.utime(folder / "k" / k, (1000 + i, 1000 + i))
    assert disk_cache.read_entry("k", keys[0]) == b"v"  # used now: the newest
    stale, fresh = folder / "k" / ".left.1234.tmp", folder / "k" / ".writing.5678.tmp"
    stale.write_bytes(b"left by a killed writer")
    os.utime(stale, (1000, 1000))
    fresh.write_bytes(b"another process is writing this")
    disk_cache.write_entry("k", keys[3], b"v")
    disk_cache.write_entry("k", keys[4], b"v")
    assert [p.name for p in entries(folder, "k")] == sorted([keys[0], keys[3], keys[4]])
    assert not stale.exists() and fresh.exists()


def _hammer(key: str, other: str, payload: bytes, rounds: int) -> None:
    for _ in range(rounds):
        disk_cache.write_entry("k", key, payload)
        disk_cache.write_entry("k", other, payload)


def test_processes_writing_at_once_leave_whole_entries(folder):
    """Four processes write the same entry and one each, 200 times, while this one reads: a read finds
    a whole entry or none, never a mix."""
    key = disk_cache.digest(b"shared")
    payload = os.urandom(200_000)
    ctx = multiprocessing.get_context("fork")
    others = [disk_cache.digest(bytes([i])) for i in range(4)]
    workers = [ctx.Process(target=_hammer, args=(key, o, payload, 200)) for o in others]
    for w in workers:
        w.start()
    seen = set()
    deadline = time.monotonic() + 60
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        got = disk_cache.read_entry("k", key)
        assert got is None or got == payload
        seen.add(got is not None)
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert all(disk_cache.read_entry("k", k) == payload for k in [key, *others])
    assert not list((folder / "k").glob(".*.tmp"))  # every writer finished its rename


# -- validated rulesets (PF-2) --------------------------------------------------------------------------------
def same(a: Ruleset, b: Ruleset) -> bool:
    return (a.file, a.sheet, a.party, a.warnings, a.requires) == (b.file, b.sheet, b.party, b.warnings, b.requires)


def test_a_ruleset_read_before_comes_from_the_cache(folder, tmp_path, monkeypatch):
    doc = sample_dict("gravewatch")
    doc["sheet"]["rests"][1]["steps"][2]["by"] = {"const": 2}  # a file with a warning: a rest step that would mark
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    first = Ruleset.load(path)
    assert [w.code for w in first.warnings] == ["heal-only"] and first.requires is not None
    assert len(entries(folder, kept.KIND)) == 1
    elsewhere = tmp_path / "copy.json"
    elsewhere.write_bytes(path.read_bytes())

    def refuse(*args, **kwargs):
        raise AssertionError("validated: the cache missed")

    monkeypatch.setattr(ruleset_load, "validate", refuse)  # where Ruleset.load takes it from
    again = Ruleset.load(elsewhere)
    assert same(again, first) and again is not first
    assert again.source == str(elsewhere)  # the source is this load's, not the one that wrote the entry
    assert again.party is None or again.party.kinds == first.party.kinds
    assert again.sheet.kinds.keys() == first.sheet.kinds.keys()


def test_a_changed_file_is_validated_again(folder, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(sample_dict("gravewatch")))
    Ruleset.load(path)
    doc = sample_dict("gravewatch")
    doc["manifest"]["name"] = "Gravewatch, edited"
    path.write_text(json.dumps(doc))
    assert Ruleset.load(path).name == "Gravewatch, edited"
    assert len(entries(folder, kept.KIND)) == 2


def test_a_ruleset_with_problems_is_never_kept(folder, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"sheet": {"fields": [{"id": "x"}]}}))
    for _ in range(2):
        with pytest.raises(RulesetError):
            Ruleset.load(path)
    assert entries(folder, kept.KIND) == []


def test_a_spoilt_entry_is_a_miss_and_is_written_anew(folder):
    first = Ruleset.load(GRAVEWATCH)
    (entry,) = entries(folder, kept.KIND)
    whole = bytearray(entry.read_bytes())
    whole[-100] ^= 0xFF
    entry.write_bytes(bytes(whole))
    again = Ruleset.load(GRAVEWATCH)
    assert same(again, first)
    assert disk_cache.read_entry(kept.KIND, entry.name) is not None  # whole again


class _Planted:
    """What an entry written by someone else might hold: unpickling it would make a folder."""

    def __init__(self, where: Path) -> None:
        self.where = where

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return os.mkdir, (str(self.where),)


@pytest.mark.parametrize("payload", ["planted", "not a ruleset", "not a pickle"])
def test_an_entry_that_is_not_a_ruleset_is_a_miss(folder, tmp_path, payload):
    """The header is right (as if written by another program that knows the format); the payload names
    something other than a ruleset's classes, or is the wrong shape: the entry is not used."""
    data = GRAVEWATCH.read_bytes()
    marker = tmp_path / "planted"
    body = {"planted": pickle.dumps(_Planted(marker)), "not a ruleset": pickle.dumps((1, 2, 3, 4, 5)),
            "not a pickle": b"\x80\x05garbage"}[payload]
    key = kept.key(data)
    assert key is not None
    disk_cache.write_entry(kept.KIND, key, body)
    rs = Ruleset.load(GRAVEWATCH)
    assert rs.name == "Gravewatch" and not marker.exists()
    assert kept.recall(data) == (rs.file, rs.sheet, rs.party, rs.warnings, rs.requires)  # the miss wrote it anew


def test_another_pydantic_or_another_code_is_another_key(folder, monkeypatch):
    data = GRAVEWATCH.read_bytes()
    Ruleset.load(GRAVEWATCH)
    key = kept.key(data)
    import pydantic.version

    assert f"VERSION = {pydantic.version.VERSION!r}".encode() in kept._validator_version()  # read, not imported
    monkeypatch.setattr(kept, "_validator_version", lambda: b"VERSION = '0.0.1'")
    assert kept.key(data) not in (None, key)
    monkeypatch.setattr(kept, "_validator_version", lambda: b"")  # pydantic's version unknown: nothing is kept
    assert kept.key(data) is None
    monkeypatch.undo()
    monkeypatch.setattr(kept, "_code", lambda: b"another version's code")
    assert kept.key(data) not in (None, key)
    monkeypatch.setattr(kept, "_code", lambda: b"")  # the code could not be read: nothing is kept
    assert kept.key(data) is None and kept.recall(data) is None


def test_nothing_is_kept_when_the_cache_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.VARIABLE, "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Ruleset.load(GRAVEWATCH).name == "Gravewatch"
    assert list(tmp_path.iterdir()) == []


COLD = """
import sys
from tagengine._internal.cli import run
code = run(sys.argv[1:])
print("|", "pydantic" in sys.modules, "pydantic.plugin._loader" in sys.modules, "lark" in sys.modules)
"""


def cold_apply(script: str, folder: Path, reply: Path) -> Callable[[], str]:
    """A cold `tagengine apply` of gravewatch's sample state and `reply` (written here, a spend that applies) in a
    new process that runs `script`, with the cache folder `folder`: each call runs one and gives its output."""
    reply.write_text('Mira holds. [sheet: who="Mira" op="spend" pool="resolve"]\n')
    args = [sys.executable, "-c", script, "apply", str(GRAVEWATCH), str(SAMPLES / "states" / "gravewatch.json"),
            str(reply)]
    env = {**os.environ, disk_cache.VARIABLE: str(folder)}
    return lambda: subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout


def test_a_cold_apply_with_its_ruleset_kept_builds_no_validator_and_imports_no_lark(folder, tmp_path):
    """PF-1..PF-3, PF-27: the second command reads the ruleset and the grammar's terminals from the cache folder;
    pydantic is not even imported (the kept ruleset is plain dataclasses), and neither is lark."""
    reply = tmp_path / "reply.md"
    run = cold_apply(COLD, folder, reply)
    first, second = run(), run()
    assert first.split("|")[0] == second.split("|")[0] and 'result="ok"' in second
    assert first.split("|")[1].split() == ["True", "True", "True"]  # nothing kept yet: validated, parser built
    assert second.split("|")[1].split() == ["False", "False", "False"]
    reply.write_text('Mira holds. [sheet: who="Mira op="spend"]\n')  # malformed: Lark says where
    third = run()
    assert 'reason="malformed"' in third and third.split("|")[1].split() == ["False", "False", "True"]


COLD_MODULES = """
import sys
from tagengine._internal.cli import run
code = run(sys.argv[1:])
print("|", code, " ".join(sorted(m for m in sys.modules if m.startswith(("tagengine", "hmac", "pathlib", "ipaddr")))))
"""
# What a cold command whose ruleset is kept does not import (PF-43, PF-44): the validation (pydantic's shape, the
# inspections, the capability versions), the families of tags the reply does not hold, pathlib (and with it
# urllib.parse and ipaddress).
NOT_IMPORTED = {"tagengine._internal.ruleset.load", "tagengine._internal.ruleset.capability",
                "tagengine._internal.ruleset.inspect", "tagengine._internal.ruleset.inspect.inspection",
                "tagengine._internal.commands.clock", "tagengine._internal.commands.check",
                "tagengine._internal.commands.edit", "hmac", "pathlib", "ipaddress"}


def test_a_cold_apply_with_its_ruleset_kept_imports_no_validation_and_only_its_tags_families(folder, tmp_path):
    reply = tmp_path / "reply.md"
    run = cold_apply(COLD_MODULES, folder, reply)
    first, second = run(), run()
    assert first.split("|")[0] == second.split("|")[0] and 'result="ok"' in second
    code, *modules = second.split("|")[1].split()
    assert code == "0" and "tagengine._internal.commands.sheet" in modules
    assert not NOT_IMPORTED & set(modules), sorted(NOT_IMPORTED & set(modules))
    validated = set(first.split("|")[1].split())  # nothing kept yet: the inspections ran
    assert {m for m in NOT_IMPORTED if m.startswith("tagengine._internal.ruleset")} <= validated
    reply.write_text('The alarm. [clock: name="Alarm" size="4"]\n')
    third = run()
    assert "tagengine._internal.commands.clock" in third.split("|")[1].split()


# -- the grammar's terminals (PF-3) and compiled templates (PF-5) --------------------------------------------
def test_the_kept_terminals_are_larks(folder):
    from_lark = {d.name: d.pattern.to_regexp() for d in parser().terminals}
    assert terminals() == from_lark  # computed and kept
    assert len(entries(folder, TERMINALS_KIND)) == 1
    assert terminals() == from_lark  # read back


@pytest.mark.parametrize("spoilt", [b"not json", b'{"WS": 1}', b'{"WS": "(", "KEY": "x"}', b'{"NAME": "[a-z]+"}'])
def test_spoilt_terminals_are_read_again_from_lark(folder, monkeypatch, spoilt):
    expected = _expressions({d.name: d.pattern.to_regexp() for d in parser().terminals})
    terminals()
    (entry,) = entries(folder, TERMINALS_KIND)
    disk_cache.write_entry(TERMINALS_KIND, entry.name, spoilt)
    _tag_pieces.cache_clear()
    _tag_start.cache_clear()
    try:
        assert [p.pattern for p in (*_tag_pieces(), _tag_start())] == list(expected)
    finally:
        _tag_pieces.cache_clear()
        _tag_start.cache_clear()


JUDGED = ['[sheet: who="Mira op="spend" pool="grit"]', '[clock name="Alarm"]', "[sheet: who='Mira' op=spend]",
          '[sheet: who=“Mira” op="spend" hidden]', '[sheet: who="Mira" op="spend" pool="grit" amount="1"]',
          "[roll: " + " ".join(f'k{i}="v"' for i in range(MAX_ATTRIBUTES + 1)) + "]", "[sheet: who="]


def test_pf_70_the_tag_parser_is_read_back_from_the_folder_and_judges_as_one_built(folder, monkeypatch):
    import lark

    parser.cache_clear()
    try:
        built = [judged_by_lark(t) for t in JUDGED]  # built, and kept
        assert [v for v in built if not isinstance(v, str)] == [v for t in JUDGED if (v := _lexed(t)) is not None]
        assert len(entries(folder, PARSER_KIND)) == 1
        parser.cache_clear()
        with monkeypatch.context() as m:
            m.setattr(lark.Lark, "__init__", lambda *a, **k: pytest.fail("the parser was built, not read back"))
            assert [judged_by_lark(t) for t in JUDGED] == built
        (entry,) = entries(folder, PARSER_KIND)
        saved = pickle.loads(disk_cache.read_entry(PARSER_KIND, entry.name))
        saved["data"]["options"]["lexer_callbacks"] = {"NAME": "not a function"}  # plain data, but no parser of tags
        for spoilt in (b"not what lark saved", pickle.dumps(Called()), pickle.dumps(saved)):  # not lark's: misses
            disk_cache.write_entry(PARSER_KIND, entry.name, spoilt)
            parser.cache_clear()
            assert [judged_by_lark(t) for t in JUDGED] == built
            assert disk_cache.read_entry(PARSER_KIND, entry.name) != spoilt  # built again, and kept
        assert not CALLED  # the entry that names a function was refused before the function was found
    finally:
        parser.cache_clear()


CALLED: list[str] = []


def called() -> dict[str, str]:
    CALLED.append("called")
    return {}


class Called:
    """Pickles as a call of `called`, which any unpickler that finds functions makes."""

    def __reduce__(self):
        return called, ()


def test_templates_kept_render_as_compiled_ones(folder, tmp_path):
    """`preview` and `sheet --html` in new processes: with nothing kept, with the compiled templates kept,
    and with those entries spoilt: the same bytes each time."""
    state = str(SAMPLES / "states" / "gravewatch.json")
    commands = [["preview", str(GRAVEWATCH), state, "--json"], ["sheet", str(GRAVEWATCH), state, "Mira", "--html"]]
    env = {**os.environ, disk_cache.VARIABLE: str(folder)}

    def outputs() -> list[str]:
        return [subprocess.run([sys.executable, "-m", "tagengine", *c], capture_output=True, text=True, env=env,
                               check=True).stdout for c in commands]

    first = outputs()
    kept = entries(folder, render.TEMPLATES_KIND)
    assert len(kept) >= 5
    assert outputs() == first
    for entry in kept:
        entry.write_bytes(entry.read_bytes()[:-10])
    assert outputs() == first
    assert all(disk_cache.read_entry(render.TEMPLATES_KIND, e.name) is not None for e in kept)  # written anew


@pytest.mark.parametrize("command", [["check", str(GRAVEWATCH)],
                                     ["sheet", str(GRAVEWATCH), str(SAMPLES / "states" / "gravewatch.json"), "Mira"]])
def test_check_and_sheet_of_a_kept_ruleset_import_no_pydantic(folder, command):
    """PF-27: a ruleset read back from the cache folder is plain dataclasses; pydantic is imported only to validate."""
    args = [sys.executable, "-c", COLD, *command]
    env = {**os.environ, disk_cache.VARIABLE: str(folder)}
    first = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    second = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    assert first.split("|")[1].split()[0] == "True"  # nothing kept yet: validated
    assert second.split("|")[1].split()[0] == "False" and first.split("|")[0] == second.split("|")[0]
