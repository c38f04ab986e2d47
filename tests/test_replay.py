"""`tagengine replay`: order, bad lines named, parallel equals serial, and replaying the output is a no-op."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import corpus_kit
import pytest

from conftest import SAMPLES
from tagengine._internal.batch import replay
from tagengine._internal.cli import run

RULES = str(SAMPLES / "rulesets" / "blades-like.json")


def corpus(tmp_path, n=12):
    """`n` generated chats and the crew-night chat last (tests/corpus_kit.py)."""
    path = corpus_kit.write(tmp_path / "in.jsonl", n)
    return path, path.read_text(encoding="utf-8").splitlines()


def do(path, workers=1):
    sink = io.StringIO()
    with open(path, encoding="utf-8") as src:
        summary = replay(RULES, src, sink, workers=workers)
    return sink.getvalue(), summary


def test_output_in_input_order_with_receipts(tmp_path):
    path, lines = corpus(tmp_path)
    out, summary = do(path)
    docs = [json.loads(x) for x in out.splitlines()]
    assert [d["id"] for d in docs] == [json.loads(x)["id"] for x in lines]
    last = docs[-1]
    assert set(last) == {"id", "characters", "messages", "state", "receipts"}
    assert last["receipts"] == {"ok": 8, "refused": 2}
    assert 'result="ok" now="0/6"' in last["messages"][1]["content"]
    assert summary.chats == len(lines) and not summary.errors


def test_two_workers_equal_one(tmp_path):
    path, _ = corpus(tmp_path, 30)
    assert do(path, 2)[0] == do(path, 1)[0]


def test_replaying_the_output_gives_identical_output(tmp_path):
    path, _ = corpus(tmp_path)
    first, _ = do(path)
    again = tmp_path / "again.jsonl"
    again.write_text(first)
    assert do(again)[0] == first  # DEC-5


@pytest.mark.parametrize("workers", [1, 2])
def test_a_ruleset_edited_between_two_replays_of_one_process_is_read_again(tmp_path, workers):
    path, _ = corpus(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_bytes((SAMPLES / "rulesets" / "blades-like.json").read_bytes())

    def again() -> str:
        with open(path, "rb") as src, open(tmp_path / "out.jsonl", "wb") as sink:
            replay(str(rules), src, sink, workers=workers, processes=workers > 1)
        return (tmp_path / "out.jsonl").read_text(encoding="utf-8")

    first = again()
    assert again() == first
    edited = json.loads(rules.read_text(encoding="utf-8"))
    edited["clocks"]["sizes"] = [4]  # the crew-night chat makes a clock of 6 segments: now refused
    rules.write_text(json.dumps(edited), encoding="utf-8")
    receipts = [json.loads(x)["receipts"] for x in (first.splitlines()[-1], again().splitlines()[-1])]
    assert receipts == [{"ok": 8, "refused": 2}, {"ok": 5, "refused": 5}]
    rules.write_bytes((SAMPLES / "rulesets" / "blades-like.json").read_bytes())
    assert again() == first


def test_pool_workers_replay_with_the_rules_the_parent_loaded_whatever_the_file_holds_by_then(tmp_path, monkeypatch):
    from tagengine._internal import batch

    path, _ = corpus(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_bytes((SAMPLES / "rulesets" / "blades-like.json").read_bytes())
    edited = json.loads(rules.read_text(encoding="utf-8"))
    edited["clocks"]["sizes"] = [4]
    built = batch.parser

    def built_then_edited():  # after the parent loaded the rules, before the workers start
        built()
        rules.write_text(json.dumps(edited), encoding="utf-8")

    monkeypatch.setattr(batch, "parser", built_then_edited)
    sink = io.BytesIO()
    replay(str(rules), io.BytesIO(path.read_bytes()), sink, workers=2)  # a stream: its lines go through a pool
    last = json.loads(sink.getvalue().splitlines()[-1])
    assert last["id"] == "crew-night" and last["receipts"] == {"ok": 8, "refused": 2}


def test_bad_lines_are_named_and_the_rest_go_on(tmp_path):
    good = (SAMPLES / "transcripts" / "crew-night.jsonl").read_text().strip()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good, "{not json", '{"id": "x", "messages": []}', "[1, 2]",
                               '{"id": "y", "characters": ["$party"], "messages": []}',
                               '{"id": "z", "characters": ["A"], "messages": [{"role": "assistant"}]}', good]) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert run(["replay", RULES, str(path)], out, err) == 1  # a bad line means exit 1 (F-4); the rest still go out
    docs = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [("error" in d) for d in docs] == [False, True, True, True, True, True, False]
    summary = err.getvalue()
    assert "5 bad line(s)" in summary
    for n in (2, 3, 4, 5, 6):
        assert f"line {n}:" in summary
    assert "reserved-name" in docs[4]["error"]


def test_output_file_and_stdin(tmp_path, monkeypatch):
    path = SAMPLES / "transcripts" / "crew-night.jsonl"
    target = tmp_path / "out.jsonl"
    assert run(["replay", RULES, str(path), "-o", str(target), "--workers", "2"], io.StringIO(), io.StringIO()) == 0
    assert json.loads(target.read_text())["id"] == "crew-night"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    out = io.StringIO()
    assert run(["replay", RULES, "-"], out, io.StringIO()) == 0
    assert out.getvalue() == target.read_text()


def test_new_user_path_replay_then_preview_the_final_state(tmp_path):
    out_file, states = tmp_path / "out.jsonl", tmp_path / "states"
    err = io.StringIO()
    assert run(["replay", RULES, str(SAMPLES / "transcripts" / "crew-night.jsonl"), "-o", str(out_file),
                "--states-dir", str(states)], io.StringIO(), err) == 0
    assert "wrote 1 final state(s)" in err.getvalue()
    out = io.StringIO()
    assert run(["preview", RULES, str(states / "crew-night.json"), "--json"], out, io.StringIO()) == 0
    doc = json.loads(out.getvalue())
    assert "Alarm raised: 6/6 (complete)" in doc["reminder"]
    assert run(["replay", RULES, "-", "--states-dir", str(states)], io.StringIO(), io.StringIO()) == 2


def test_two_workers_from_a_stream_equal_one(tmp_path):
    path, _ = corpus(tmp_path, 9)
    sink = io.StringIO()
    replay(RULES, io.StringIO(path.read_text()), sink, workers=2)  # not a file: lines go to the workers
    assert sink.getvalue() == do(path, 1)[0]


def test_two_workers_into_a_file_after_what_was_written_before(tmp_path):
    """PF-13: the processes write their batches straight to the output's descriptor, in turn; what the caller
    wrote before (still in the stream's buffer) goes first, what it writes after goes after."""
    path, _ = corpus(tmp_path, 30)
    expected = do(path, 1)[0].encode()
    target = tmp_path / "out.jsonl"
    with open(path, encoding="utf-8") as src, open(target, "w", encoding="utf-8") as sink:
        sink.write("written before\n")
        summary = replay(RULES, src, sink, workers=2)
        sink.write("written after\n")
    assert target.read_bytes() == b"written before\n" + expected + b"written after\n"
    assert summary.chats == 31 and not summary.errors


def test_a_full_disk_is_named_and_the_exit_is_1(tmp_path):
    path, _ = corpus(tmp_path, 30)
    err = io.StringIO()
    with open("/dev/full", "w", encoding="utf-8") as out:
        assert run(["replay", RULES, str(path), "--workers", "2"], out, err) == 1
    assert err.getvalue() == "tagengine: <stdout>: No space left on device\n"


@pytest.mark.slow
def test_standard_input_from_a_file_or_a_pipe_equals_one_worker(tmp_path):
    """`replay R - --workers 2 < FILE` reads the file by offsets as a named input is (PF-13); from a pipe the
    lines travel through the parent: the same bytes either way."""
    path, _ = corpus(tmp_path, 30)
    expected = do(path, 1)[0].encode()
    command = [sys.executable, "-m", "tagengine", "replay", RULES, "-", "--workers", "2"]
    with open(path, "rb") as f:
        from_file = subprocess.run(command, stdin=f, capture_output=True, timeout=120)
    from_pipe = subprocess.run(command, input=path.read_bytes(), capture_output=True, timeout=120)
    assert from_file.returncode == from_pipe.returncode == 0, (from_file.stderr, from_pipe.stderr)
    assert from_file.stdout == from_pipe.stdout == expected
