"""`digests` (decision PF-72): the dice's SHA-256 and the cache folder's BLAKE2b are hashlib's own, taken from the
modules hashlib takes them from, so a cold command does not load OpenSSL for them."""

from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys

import pytest

from conftest import ROOT
from tagengine._internal import digests
from tagengine._internal.state.values import die


@pytest.mark.parametrize("data", [b"", b"seed:0", b"x" * 1000, bytes(range(256)) * 513])
def test_each_digest_is_hashlibs(data):
    assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert digests.blake2b(data, digest_size=32).hexdigest() == hashlib.blake2b(data, digest_size=32).hexdigest()
    h = digests.blake2b(digest_size=32)
    h.update(data[:7])
    h.update(data[7:])
    assert h.digest() == hashlib.blake2b(data, digest_size=32).digest()


def test_the_built_in_modules_are_the_ones_hashlib_falls_back_to():
    """Pinned: each digest comes from the built-in module hashlib has it from without OpenSSL (its SHA-2 module's
    name changed in Python 3.12), and hashlib's own blake2b is the built-in one."""
    assert type(digests.sha256(b"x")).__module__ == ("_sha2" if sys.version_info >= (3, 12) else "_sha256")
    assert digests.blake2b.__module__ == "_blake2"
    assert hashlib.blake2b is importlib.import_module("_blake2").blake2b


def test_a_die_is_the_one_the_documented_sha256_gives():
    """DEC-5's dice: the first 8 bytes of SHA-256 of "seed:n", big-endian, modulo the sides, plus one."""
    for n in range(50):
        x = int.from_bytes(hashlib.sha256(f"a seed:{n}".encode()).digest()[:8], "big")
        assert die("a seed", n, 6) == x % 6 + 1


def test_importing_them_loads_no_openssl():
    code = ("import sys; import tagengine._internal.digests as d; d.sha256(b'x'); d.blake2b(b'x');"
            "print('_hashlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                          timeout=60)
    assert done.stdout.strip() == "False"
