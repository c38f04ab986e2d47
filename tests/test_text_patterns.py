"""The text rules' checks that no longer compile a pattern when a module is imported (decision PF-73): `writable` by
strict UTF-8, `escaped_surrogate` past ASCII text, and the patterns of characters beyond U+00FF compiled on a first
use, each held to the pattern it stood for. A cold command compiles none of them, nor an expression of a whole tag:
of such patterns, only a tag's attribute."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from conftest import ROOT
from tagengine._internal.tags.parse import _expressions, terminals
from tagengine._internal.text import escaped_surrogate, prompt_inert, prompt_unsafe, writable

SURROGATE = re.compile("[\ud800-\udfff]")  # what `writable` and `escaped_surrogate` were written as (H-3, TR-9)
NOT_A_BYTE = re.compile("[\ud800-\udc7f\udd00-\udfff]")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # DEC-25's control characters
LINE_BREAK = "\r\n|[\n\r\u2028\u2029]"
# text with lone surrogates among other characters, ASCII and not: st.text() alone never holds a surrogate
TEXT = st.lists(st.one_of(st.characters(codec="ascii"), st.characters(), st.integers(0xD800, 0xDFFF).map(chr),
                          st.sampled_from(["\x85", "\u2028", "\u2029", "\x7f", "\r\n", "{{", "]"])),
                max_size=30).map("".join)


@given(TEXT)
def test_pf_73_writable_is_no_lone_surrogate_h_3(text):
    assert writable(text) is (SURROGATE.search(text) is None)


@given(TEXT, st.booleans())
def test_pf_73_escaped_surrogate_is_the_first_that_stands_for_no_byte_tr_9(text, bytes_kept):
    found = (NOT_A_BYTE if bytes_kept else SURROGATE).search(text)
    assert escaped_surrogate(text, bytes_kept=bytes_kept) == (None if found is None else found.group())


@given(TEXT)
def test_pf_73_prompt_unsafe_finds_every_control_character_ascii_or_not_dec_25(text):
    if "\n" not in text and "\r" not in text:  # said first, as a line break
        assert (prompt_unsafe(text) == "must not contain control characters") is (CONTROL.search(text) is not None)


def test_pf_73_each_check_at_its_edges():
    assert writable("") and writable("plain") and writable("caf\u00e9 \U0001f3b2") and writable("\ud7ff\ue000")
    assert not writable("a\ud800") and not writable("\udfff") and not writable("\udc80")
    assert escaped_surrogate("\udc80\udcff", bytes_kept=True) is None  # a byte kept as it came
    assert escaped_surrogate("ok\udc7f", bytes_kept=True) == "\udc7f" and escaped_surrogate("\udd00", bytes_kept=True)
    assert escaped_surrogate("\udc80", bytes_kept=False) == "\udc80" and escaped_surrogate("ascii", bytes_kept=False) \
        is None
    assert prompt_unsafe("a\u2028b") == prompt_unsafe("a\x85b") == "must not contain control characters"
    assert prompt_unsafe("a\u2027b\xa0") is None
    assert prompt_inert("one\u2029two\r\nthree\x85four") == "one / two / three four"


COLD = r"""
import json, re, sys
seen = []
compile = re.compile

def counting(pattern, flags=0):
    seen.append(pattern)
    return compile(pattern, flags)

re.compile = counting
from tagengine._internal.console import defer
defer()
from tagengine._internal.cli import run
code = run(sys.argv[1:])
wide = [p for p in seen if isinstance(p, str) and any(ord(c) > 0xFF for c in p)]
print(json.dumps({"code": code, "wide": wide, "seen": [p for p in seen if isinstance(p, str)]}))
"""


def test_pf_73_a_cold_apply_compiles_one_pattern_beyond_latin_1(tmp_path):
    reply = tmp_path / "reply.txt"
    reply.write_text('Mira spends. [sheet: who="Mira" op="spend" pool="resolve"] And caf\u00e9.\n', encoding="utf-8")
    rules, state = ROOT / "samples/rulesets/gravewatch.json", ROOT / "samples/states/gravewatch.json"
    env = {**os.environ, "TAGENGINE_CACHE": str(tmp_path / "cache")}
    for _ in range(2):  # the first fills the cache folder, as a day's first call does; the second is read
        p = subprocess.run([sys.executable, "-c", COLD, "apply", str(rules), str(state), str(reply)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    report = json.loads(p.stdout.splitlines()[-1])
    assert report["code"] == 0 and 'result="ok"' in p.stdout, p.stdout + p.stderr[-400:]
    # the one such pattern a reading needs: a tag's attribute (its values may be in typographic quotes)
    assert report["seen"] and report["wide"] == [_expressions(terminals())[1]], report["wide"]
    # and none of text's, which name such characters by their escapes
    assert not {CONTROL.pattern, LINE_BREAK, SURROGATE.pattern, NOT_A_BYTE.pattern} & set(report["seen"])
