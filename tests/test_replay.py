"""`tagengine replay`: order, bad lines named, parallel equals serial, and replaying the output is a no-op."""

from __future__ import annotations

import errno
import io
import json
import os
import sys

import corpus_kit

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


def test_two_workers_into_a_file_equal_one_however_the_parts_are_copied(tmp_path, monkeypatch):
    """PF-9: a worker's part goes to an output file by `os.sendfile`; where sendfile stops part way or
    refuses, the rest is read and written: the same bytes as one worker, each time."""
    path, _ = corpus(tmp_path, 30)
    expected = do(path, 1)[0].encode()

    def into_a_file(name: str) -> bytes:
        target = tmp_path / name
        with open(path, encoding="utf-8") as src, open(target, "wb") as sink:
            sink.write(b"written before\n")  # still in the sink's buffer: it must go out first
            replay(RULES, src, sink, workers=2)
        return target.read_bytes().removeprefix(b"written before\n")

    assert into_a_file("sendfile.jsonl") == expected
    real = os.sendfile
    calls = []

    def stops_half_way(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        calls.append(count)
        if len(calls) % 2:
            return real(out_fd, in_fd, offset, max(1, count // 2))
        raise OSError(errno.EINVAL, "not here")

    monkeypatch.setattr(os, "sendfile", stops_half_way)
    assert into_a_file("half.jsonl") == expected and calls
    monkeypatch.delattr(os, "sendfile")
    assert into_a_file("none.jsonl") == expected
