"""A chat history is read in one place (`_internal/history.py`): `build_prompt`, `Chat.from_history` and
`preview --history` agree on what a message is (F-10), name every bad one, and raise only TagengineErrors."""

from __future__ import annotations

import io
import json

import pytest
from cmdkit import sample_state

from conftest import SAMPLES, load_sample
from tagengine import Chat, HistoryError, apply_reply, build_prompt
from tagengine._internal.cli import run

RULES = SAMPLES / "rulesets" / "blades-like.json"
TAG = '[clock: name="Alarm raised" size="6"]'


@pytest.fixture(scope="module")
def blades():
    return load_sample("blades-like")


def test_f_10_from_history_matches_roles_without_case(blades):
    state = sample_state("blades-like")
    chat = Chat.from_history(blades, state, [{"role": "USER", "content": "go"}, {"role": "Assistant", "content": TAG}])
    assert chat.state.clocks == apply_reply(blades, state, TAG).state.clocks != ()
    assert [m.role for m in chat.messages] == ["user", "assistant"]


@pytest.mark.parametrize("bad", [["not a message"], [{"role": "narrator", "content": "x"}],
                                 [{"role": "user"}], [{"role": "user", "content": 3}]])
def test_a_bad_message_is_a_history_error_naming_it(blades, bad):
    with pytest.raises(HistoryError) as e:
        Chat.from_history(blades, sample_state("blades-like"), [{"role": "user", "content": "ok"}, *bad])
    assert [p.path for p in e.value.problems] == ["history[1]"]
    with pytest.raises(HistoryError):
        build_prompt(blades, sample_state("blades-like"), [{"role": "user", "content": "ok"}, *bad])


@pytest.mark.parametrize("history", [None, "user: hi", {"role": "user", "content": "hi"}, 7])
def test_a_history_that_is_not_a_list_is_a_history_error(blades, history):
    with pytest.raises(HistoryError):
        build_prompt(blades, sample_state("blades-like"), history)


def test_preview_history_keeps_unicode_line_breaks_inside_json_strings(tmp_path):
    """JSON may hold U+2028, U+0085 and form feeds raw inside a string: only line feeds end a line."""
    state = tmp_path / "s.json"
    state.write_text(sample_state("blades-like").dumps())
    history = tmp_path / "h.jsonl"
    text = "one\u2028two\x85three\x0cfour"
    history.write_text(json.dumps({"role": "user", "content": text}, ensure_ascii=False) + "\n", encoding="utf-8")
    out = io.StringIO()
    assert run(["preview", str(RULES), str(state), "--history", str(history), "--json"], out, io.StringIO()) == 0
    assert any(m["content"] == text for m in json.loads(out.getvalue())["messages"])


def test_states_dir_reads_replay_output_that_is_not_utf8(tmp_path):
    """F-4 keeps bytes that are not UTF-8 as they came; writing the final states must read them too."""
    line = json.dumps({"id": "café", "characters": ["Cutter"],
                       "messages": [{"role": "assistant", "content": "x " + TAG}]}).encode()
    line = line.replace(b"x ", b"caf\xe9 ")
    source = tmp_path / "in.jsonl"
    source.write_bytes(line + b"\n")
    err = io.StringIO()
    code = run(["replay", str(RULES), str(source), "-o", str(tmp_path / "out.jsonl"), "--states-dir",
                str(tmp_path / "states")], io.StringIO(), err)
    assert code == 0, err.getvalue()
    (written,) = (tmp_path / "states").iterdir()
    assert json.loads(written.read_text())["rulesetClocks"][0]["name"] == "Alarm raised"


def test_tr_9_a_lone_surrogate_in_a_history_is_named_not_a_traceback(tmp_path):
    """Issue 26 item 13: `\\udfff` (a JSON escape of a lone surrogate) is no character, and no UTF-8 output can
    hold it: the line is named (exit 1), where the real command ended in a UnicodeEncodeError. A byte that was
    not UTF-8 stays what it was (F-4, H-3): it goes out as it came."""
    import subprocess
    import sys

    state = tmp_path / "s.json"
    state.write_text(sample_state("blades-like").dumps())
    history = tmp_path / "h.jsonl"
    history.write_bytes(b'{"role": "user", "content": "ok"}\n{"role": "user", "content": "hi \\udfff there"}\n')
    for extra in ([], ["--json"]):
        got = subprocess.run([sys.executable, "-m", "tagengine", "preview", str(RULES), str(state), "--history",
                              str(history), *extra], capture_output=True, timeout=120)
        err = got.stderr.decode("utf-8", "replace")
        assert got.returncode == 1 and "Traceback" not in err, err
        assert 'line 2: bad-text: its "content" holds a lone surrogate (\\udfff)' in err
    history.write_bytes(b'{"role": "user", "content": "caf\xe9"}\n')
    got = subprocess.run([sys.executable, "-m", "tagengine", "preview", str(RULES), str(state), "--history",
                          str(history), "--json"], capture_output=True, timeout=120)
    assert got.returncode == 0 and b"caf\xe9" in got.stdout, got.stderr
