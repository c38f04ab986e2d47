"""`tagengine replay` finishes (issue 17): every bad line is named and the rest go on, exit 1 when any was bad,
roles without case, collision-free state files, an input that changes underneath (decisions F-4, F-10, F-11, F-13)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, examples
from tagengine._internal import batch, ordered_pool
from tagengine._internal.cli import run

RULES = str(SAMPLES / "rulesets" / "blades-like.json")
GOOD = (SAMPLES / "transcripts" / "crew-night.jsonl").read_text().strip()
TAG = '[clock: name="Alarm raised" size="6"]'


def chat(cid, content=TAG, role="assistant"):
    return json.dumps({"id": cid, "characters": ["Cutter"], "messages": [{"role": role, "content": content}]})


def replay(tmp_path, lines, *extra):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out, err = io.StringIO(), io.StringIO()
    code = run(["replay", RULES, str(path), *extra], out, err)
    return code, [json.loads(x) for x in out.getvalue().splitlines()], err.getvalue()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_lone_surrogate_and_a_huge_integer_are_bad_lines_and_the_rest_go_on(tmp_path, workers):
    """F-4, TR-9 (issue 26 item 13): a lone surrogate written as a JSON escape is no character: its chat is named
    and left out of the output (it was replayed and written ASCII-escaped, exit 0), in a message's text, in a key
    or in the id; a pair of escapes is one character and replays."""
    lines = [GOOD, chat("s", "x\ud800 " + TAG), '{"id": "n", "characters": ["Cutter"], "messages": [], "x": '
             + "1" * 5000 + "}", '{"id": ' + "7" * 5000 + "}", GOOD, chat("k\udfff"),
             chat("p", "\U0001f600 " + TAG).replace("\\ud83d\\ude00", "\\uD83D\\uDE00"),
             json.dumps({"id": "q", "characters": ["Cutter"], "messages": [], "x": {"a\udc00": 1}})]
    code, docs, err = replay(tmp_path, lines, "--workers", workers)
    assert code == 1  # F-4: a bad line means exit 1
    assert [d.get("id") for d in docs] == ["crew-night", "s", None, None, "crew-night", None, "p", "q"]
    assert docs[1] == {"id": "s", "error": "line 2: messages[0].content: a lone surrogate (\\ud800) is no character"}
    assert "line 3: not JSON: a number has more digits" in docs[2]["error"]
    assert "line 4:" in docs[3]["error"]
    assert docs[5] == {"id": None, "error": "line 6: id: a lone surrogate (\\udfff) is no character"}
    assert docs[6]["receipts"] == {"ok": 1} and docs[6]["messages"][0]["content"].startswith("\U0001f600")
    assert docs[7] == {"id": "q", "error": "line 8: x.a\\udc00: a lone surrogate (\\udc00) is no character"}
    assert "5 bad line(s)" in err and "Traceback" not in err
    assert "\\ud800" not in json.dumps(docs[:1] + docs[4:5] + docs[6:7])


def test_a_bug_in_one_line_is_named_and_the_rest_go_on(tmp_path, monkeypatch):
    real = batch.apply_reply

    def flaky(rs, state, text):
        if "boom" in text:
            raise RuntimeError("boom")
        return real(rs, state, text)

    monkeypatch.setattr(batch, "apply_reply", flaky)
    code, docs, _ = replay(tmp_path, [chat("a"), chat("b", "boom"), chat("c")])
    assert code == 1
    assert docs[1] == {"id": "b", "error": "line 2: RuntimeError: boom"}
    assert docs[2]["receipts"] == {"ok": 1}


def test_roles_match_without_case(tmp_path):
    code, docs, _ = replay(tmp_path, [chat("a", role="ASSISTANT"), chat("b", role="Assistant"), chat("c", role="USER")])
    assert code == 0
    assert [d["receipts"] for d in docs] == [{"ok": 1}, {"ok": 1}, {}]
    assert docs[0]["messages"][0]["role"] == "ASSISTANT"  # kept as written
    assert 'result="ok"' in docs[0]["messages"][0]["content"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_state_files_never_collide_and_the_count_is_true(tmp_path, workers):
    ids = ["a/b", "a_b", "a\x00b", "A_B", "a_b", 5, "5", "..", ""]
    lines = [chat(i) for i in ids]
    states = tmp_path / "states"
    code, _, err = replay(tmp_path, lines, "-o", str(tmp_path / "out.jsonl"), "--states-dir", str(states),
                          "--workers", workers)
    assert code == 0, err
    files = sorted(p.name for p in states.iterdir())
    assert len(files) == len(ids) and len({f.casefold() for f in files}) == len(ids)
    assert f"wrote {len(ids)} final state(s)" in err
    assert "a_b.json" in files and "5.json" in files  # a plain id keeps its plain name
    assert "line 5: chat id 'a_b' was on line 2 too" in err
    assert not any(f.startswith(".") for f in files)


def test_a_line_over_the_limit_is_named_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "MAX_CHAT_BYTES", 300)
    long = chat("long", "x" * 400)
    for workers in ("1", "2"):
        code, docs, _ = replay(tmp_path, [chat("a"), long, chat("b")], "--workers", workers)
        assert code == 1
        assert [d["id"] for d in docs] == ["a", None, "b"]
        assert "line 2: longer than 300 bytes" in docs[1]["error"]
    sink = io.StringIO()
    summary = batch.replay(RULES, io.StringIO("\n".join([chat("a"), long, chat("b")]) + "\n"), sink)
    assert len(summary.errors) == 1 and summary.chats == 3


def takes(path, size=batch.BATCH_PER_WORKER, workers=2):
    """The batches `_take` cuts a file into, one call after another as the processes of a replay make them."""
    cursor = [0] * ordered_pool.CURSOR_INTS
    with open(path, "rb") as f:
        end = os.fstat(f.fileno()).st_size
        while (got := batch._take(f.fileno(), 0, size, end, batch.TAIL_SHARES * workers, cursor)) is not None:
            yield got


def test_tiny_chats_go_to_the_workers_in_large_batches(tmp_path):
    """100k tiny chats took 13 s on two workers against 4 s on one: batches of 4 chats meant 25,000 round
    trips, each a temporary file and an IPC message. A batch now holds at least BATCH_BYTES of input."""
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(chat(f"c{i}") + "\n" for i in range(10_000)))
    sizes = [len(b) for b in takes(path)]
    assert sum(sizes) == 10_000 and len(sizes) <= 40  # it was 2,500
    assert [len(b) for b in batch._batches(((i, b"x" * 200) for i in range(10_000)), 4)] == [328] * 30 + [160]



def test_the_first_batch_is_one_chat_and_the_rest_are_cut_as_before(tmp_path):
    """PF-50: the first batch runs alone before the children are forked (PF-30), so it
    holds one chat, not four: a small corpus's serial part shrinks. The batches after it are F-14's."""
    path = tmp_path / "big.jsonl"
    path.write_text("\n" + "".join(chat(f"c{i}", "x" * 30_000) + "\n" for i in range(11)))  # a blank line first
    sizes = [len(b) for b in takes(path, workers=1)]
    assert sizes == [1, 4, 4, 2]  # 4 chats of 30 KB pass BATCH_BYTES (64 KiB); the tail is a half of what is left
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text("".join(chat(f"c{i}") + "\n" for i in range(1000)))
    sizes = [len(b) for b in takes(tiny)]
    assert sizes[0] == 1 and sum(sizes) == 1000 and len(sizes) <= 16  # then 64 KiB at a time, and the tail


def test_near_the_end_a_batch_holds_a_share_of_what_is_left_down_to_one_chat(tmp_path):
    """PF-56: a batch near the end holds at most 1/(TAIL_SHARES x workers) of the input left (one chat more
    at most: it stops at the chat that reaches the share), down to one chat or TAIL_BYTES, so the processes
    end together instead of one finishing a batch of four while the other waits."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(chat(f"c{i}", "x" * 20_000) + "\n" for i in range(40)))
    line = len(chat("c10", "x" * 20_000))  # its bytes without the newline, as a batch counts them
    for workers in (2, 3):
        left, sizes = path.stat().st_size, []
        for b in takes(path, workers=workers):
            share = max(batch.TAIL_BYTES, left // (batch.TAIL_SHARES * workers))
            assert len(b) == 1 or (len(b) - 1) * line < share
            sizes.append(len(b))
            left -= sum(len(data) + 1 for _, data in b)
        assert sizes[:3] == [1, 4, 4] and sizes[-3:] == [1, 1, 1] and sum(sizes) == 40, sizes
    assert [len(b) for b in takes(path, workers=1)][-2:] != [1, 1]  # one worker: a half of what is left


def test_a_process_that_replayed_with_the_ruleset_forks_its_workers_at_once(tmp_path, monkeypatch):
    """PF-56: the first chat runs alone before the fork only to warm what the workers inherit (PF-30); once this
    process has replayed with the ruleset, it is warm and the workers are forked at once."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(chat(f"c{i}") + "\n" for i in range(6)))
    other = tmp_path / "other.json"
    other.write_bytes(Path(RULES).read_bytes())
    said: list[bool] = []
    real = ordered_pool.run_ordered
    monkeypatch.setattr(ordered_pool, "run_ordered", lambda *a, warm: (said.append(warm), real(*a, warm=warm)))
    monkeypatch.setattr(batch, "_REPLAYED_WITH", None)
    for ruleset, workers in ((RULES, 2), (RULES, 2), (str(other), 1), (str(other), 2), (RULES, 2)):
        with open(path, "rb") as src, open(tmp_path / "out", "wb") as sink:
            batch.replay(ruleset, src, sink, workers)
    assert said == [False, True, True, False]  # a ruleset loaded anew is cold, however often replayed before


LINE = st.one_of(st.sampled_from([b"", b" ", b"\t", b"\r", b"{}", b"[1]", b"{not json", b"x" * 40, b"\xef\xbb\xbf",
                                  b"\xff\xfe", chat("a").encode(), chat("b", TAG + "\r").encode()]),
                 st.binary(max_size=60).filter(lambda b: b"\n" not in b))


@settings(max_examples=examples(200))
@given(lines=st.lists(LINE, max_size=30), bom=st.booleans(), last_newline=st.booleans(),
       limit=st.integers(1, 80), size=st.integers(1, 5))
def test_batches_taken_by_offset_are_the_lines_a_stream_gives(tmp_path_factory, lines, bom, last_newline, limit,
                                                              size):
    """What the processes of a replay read by offsets (`_take`, PF-13) is, line for line, number for number,
    what one worker reads from a stream (`_lines`): blank lines skipped but counted, a BOM dropped from line 1
    only, `\r` kept, a line over the limit None, the last line with or without its newline."""
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    path = tmp_path_factory.mktemp("take") / "in.jsonl"
    path.write_bytes(data)
    with patch.object(batch, "MAX_CHAT_BYTES", limit), patch.object(batch, "BATCH_BYTES", 50):
        taken = [item for b in takes(path, size) for item in b]
        with open(path, "rb") as f:
            assert taken == list(batch._lines(f))


@settings(max_examples=examples(30))
@given(lines=st.lists(LINE, max_size=24), workers=st.integers(2, 3), limit=st.sampled_from([60, 400, 1 << 20]))
def test_workers_in_turn_write_what_one_worker_writes(tmp_path_factory, lines, workers, limit):
    """Any input, any number of workers: the same bytes and the same summary (chats, errors in order, receipts)
    as one worker, with batches small enough that every process takes several."""
    folder = tmp_path_factory.mktemp("turns")
    path = folder / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with patch.object(batch, "MAX_CHAT_BYTES", limit), patch.object(batch, "BATCH_BYTES", 100):
        with open(path, "rb") as src:
            one_out = io.BytesIO()
            one = batch.replay(RULES, src, one_out, 1)
        with open(path, "rb") as src, open(folder / "out", "wb") as sink:
            many = batch.replay(RULES, src, sink, workers)
    assert (folder / "out").read_bytes() == one_out.getvalue()
    assert (many.chats, many.errors, many.receipts) == (one.chats, one.errors, one.receipts)


def test_an_input_that_shrinks_during_the_run_gives_bad_lines_not_a_crash(tmp_path):
    """Two workers once died with a bus error (exit 135): the parent mapped the input, which then shrank."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(chat(f"c{i}") + "\n" for i in range(20_000)))  # several MiB
    script = textwrap.dedent(f"""
        import io, os, sys
        from tagengine._internal import batch
        real = batch._take
        def shrinking(fd, start, size, end, shares, cursor):
            if cursor[1] and os.fstat(fd).st_size > cursor[0] + 1000:  # the second batch: cut in a line
                os.truncate({str(path)!r}, cursor[0] + 1000)
            return real(fd, start, size, end, shares, cursor)
        batch._take = shrinking
        from tagengine._internal.cli import run
        sys.exit(run(["replay", {RULES!r}, {str(path)!r}, "--workers", "2", "-o", {str(tmp_path / "out.jsonl")!r}],
                     io.StringIO(), io.StringIO()))
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr[-2000:]  # the line cut short is a bad line, named
    assert "Traceback" not in p.stderr
    docs = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert "error" in docs[-1] and "not JSON" in docs[-1]["error"] and not any("error" in d for d in docs[:-1])
