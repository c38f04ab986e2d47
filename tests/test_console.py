"""The console script's process (`console.py`, decisions PF-68, PF-70, PF-72): `inspect`, and lark's `regex`,
`tempfile` and `hashlib`, are put off until something reads them, and whoever read one through the stand-in reads the
real module."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_cli_package import RULES, imported

from conftest import ROOT

PUT_OFF = {"inspect", "ast", "dis", "tokenize"}  # `inspect` and what it imports, which nothing else on the path does
LARK_PUT_OFF = {"regex", "tempfile", "shutil", "hashlib", "_hashlib"}  # lark's imports for what tagengine does not use


def console(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tagengine", *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, **env})


def test_pf_68_a_cold_command_loads_no_inspect_and_writes_what_it_wrote_with_it(tmp_path):
    state, reply = tmp_path / "state.json", tmp_path / "reply.txt"
    assert console("state", "new", RULES, "Cutter", "Lurk", "-o", str(state)).returncode == 0
    reply.write_text('The lock gives. [clock: name="Alarm raised" size="6"] [sheet: who="Cutter" op="spend" '
                     'pool="stress" amount="1"]\n')
    for argv in (["apply", RULES, str(state), str(reply)], ["narrate", str(reply)], ["sheet", RULES, str(state),
                                                                                      "Cutter"]):
        plain = console(*argv, TAGENGINE_IMPORTS="eager")  # the switch: the plain import, as before; it also fills
        assert plain.returncode == 0 and plain.stdout, argv[0]  # the cache folder, as a day's first call does
        assert set(imported(*argv, env={**os.environ, "TAGENGINE_IMPORTS": "eager"})) >= PUT_OFF, argv[0]
        assert not PUT_OFF & set(imported(*argv)), argv[0]
        deferred = console(*argv)
        assert (deferred.returncode, deferred.stdout, deferred.stderr) == (0, plain.stdout, plain.stderr), argv[0]


def test_pf_70_a_cold_command_that_builds_the_tag_parser_loads_neither_regex_nor_tempfile(tmp_path):
    state, reply = tmp_path / "state.json", tmp_path / "reply.txt"
    assert console("state", "new", RULES, "Cutter", "Lurk", "-o", str(state)).returncode == 0
    reply.write_text('The lock gives. [sheet: who="Cutter op="spend" pool="stress" amount="1"]\n')  # Lark says where
    argv = ["apply", RULES, str(state), str(reply)]
    eager = {**os.environ, "TAGENGINE_IMPORTS": "eager"}
    plain = console(*argv, TAGENGINE_IMPORTS="eager")  # also fills the cache folder (read back: test_disk_cache)
    assert plain.returncode == 0 and 'reason="malformed"' in plain.stdout, plain.stderr
    assert set(imported(*argv, env=eager)) >= LARK_PUT_OFF | {"lark"}
    modules = set(imported(*argv))
    assert "lark" in modules and not LARK_PUT_OFF & modules, sorted(LARK_PUT_OFF & modules)
    deferred = console(*argv)
    assert (deferred.returncode, deferred.stdout, deferred.stderr) == (0, plain.stdout, plain.stderr)


def test_pf_72_a_cold_command_loads_no_openssl_even_eager(tmp_path):
    """The dice, a state's seed and the cache folder's keys take hashlib's own digests from its built-in modules
    (`digests`): no command here loads OpenSSL, eager or not, but lark's `import hashlib` for a malformed tag (the
    tag parser read back from the cache folder), which the stand-in puts off."""
    state, reply, after = tmp_path / "state.json", tmp_path / "reply.txt", tmp_path / "next.json"
    assert console("state", "new", RULES, "Cutter", "Lurk", "-o", str(state)).returncode == 0
    reply.write_text('Dice. [check: who="Cutter" skill="hunt"] [sheet: who="Cutter op="spend"]\n')
    eager = {**os.environ, "TAGENGINE_IMPORTS": "eager"}
    for argv in (["apply", RULES, str(state), str(reply), "--json", "--state-out", str(after)], ["check", RULES],
                 ["sheet", RULES, str(state), "Cutter"], ["narrate", str(reply)]):
        assert console(*argv).returncode == 0, argv[0]  # fills the cache folder, as a day's first call does
        modules = set(imported(*argv))
        assert "_hashlib" not in imported(*argv, env=eager) or "lark" in modules, argv[0]
        assert not {"hashlib", "_hashlib"} & modules, argv[0]
        if argv[0] == "apply":  # a die was rolled, and lark read the malformed tag, through the stand-in
            assert json.loads(after.read_text())["rulesetDice"]["rolls"] == 1 and "lark" in modules


STAND_IN = r"""
import sys, threading
from tagengine._internal.console import Deferred, defer

defer()
import dataclasses

import inspect as early  # the stand-in: importing it reads nothing from it
import importlib.util
assert type(early) is Deferred and dataclasses.inspect is early, type(early)
assert importlib.util.find_spec("inspect").name == "inspect"  # asked of the stand-in, answered as for the module
assert not {"ast", "dis", "tokenize"} & set(sys.modules), sorted(sys.modules)

got = []
barrier = threading.Barrier(8)

def first_read():
    barrier.wait()
    got.append(early.signature)

threads = [threading.Thread(target=first_read) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()

import inspect as real
assert type(real) is not Deferred and sys.modules["inspect"] is real and "ast" in sys.modules
assert got == [real.signature] * 8  # one module, whichever thread loaded it
assert str(early.signature(lambda a, b=1: a)) == "(a, b=1)"
from inspect import getsource  # a name taken from it
assert getsource is real.getsource and "signature" in dir(early)
early.marker = 1  # a write through the stand-in reaches the module, and so does a delete
assert real.marker == 1
del early.marker
assert not hasattr(real, "marker")

defer(("tagengine_no_such_module",))  # a module that is not there gets no stand-in: importing it fails at once
assert "tagengine_no_such_module" not in sys.modules
try:
    import tagengine_no_such_module
except ImportError:
    pass
else:
    raise AssertionError("a module that is not there was imported")
print("ok")
"""


def test_pf_68_the_stand_in_is_the_module_once_read_whoever_reads_it():
    done = subprocess.run([sys.executable, "-c", STAND_IN], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
