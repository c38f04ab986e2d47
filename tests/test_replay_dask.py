"""`tagengine replay --dask` (issue 16): partitions own the lines that start in them; the parts of an input,
concatenated, are the local replay's bytes; a killed worker loses and doubles no chat; a bad input is named
and the rest go on; the progress bar only on a terminal. One LocalCluster (2 worker processes) for the module."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import random
import signal
import subprocess
import sys

import corpus_kit
import pytest

from conftest import ROOT, SAMPLES
from tagengine._internal import batch_dask
from tagengine._internal.cli import run
from tagengine._internal.files import BOM

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a Dask LocalCluster of two worker processes

RULES = str(SAMPLES / "rulesets" / "blades-like.json")


def make_corpus(path, chats, turns=3, extra=()):
    """`chats` generated chats, the crew-night chat, then `extra` lines (tests/corpus_kit.py)."""
    return corpus_kit.write(path, chats, turns, extra)


def local(path):
    """The local replay's output, as `tagengine replay IN -o OUT` writes it."""
    out = path.parent / (path.name + ".local")
    assert run(["replay", RULES, str(path), "-o", str(out)], io.StringIO(), io.StringIO()) in (0, 1)
    return out.read_bytes()


def parts_of(out_dir, i, name):
    folder = out_dir / f"{i:04d}-{name}"
    return b"".join((folder / p).read_bytes() for p in sorted(os.listdir(folder)))


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as c, \
            distributed.Client(c) as cl:
        yield cl


def spans_by_lines(data: bytes):
    """The reference: (number, line) of the non-blank lines, as `tagengine replay` numbers them."""
    out = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if n == 1 and line.startswith(BOM):
            line = line[3:]
        if line.strip():
            out.append((n, line))
    if data.endswith(b"\n"):
        assert data.split(b"\n")[-1] == b""
    return out


@pytest.mark.parametrize("seed", range(6))
def test_partitions_own_each_line_once_with_its_number(tmp_path, seed):
    """Any cut of a file into byte ranges: every non-blank line is in exactly one partition, with the line
    number the local replay gives it; a line over the limit is None, not read (F-5, F-6)."""
    rnd = random.Random(seed)
    pieces = [rnd.choice([b"", b" ", b"x" * rnd.randint(1, 40), b"{}\r", b"y" * 90]) for _ in range(60)]
    data = (BOM if seed % 2 else b"") + b"\n".join(pieces) + (b"\n" if seed % 3 else b"")
    path = tmp_path / "f"
    path.write_bytes(data)
    expected = [(n, None if len(x) > 80 else x) for n, x in spans_by_lines(data)]
    size = rnd.randint(1, 200)
    got = []
    for start in range(0, max(len(data), 1), size):
        end = min(len(data), start + size)
        before = data[:max(start - 1, 0)].count(b"\n")
        with open(path, "rb") as f:
            f.seek(max(start - 1, 0))
            got += list(batch_dask.owned_lines(f, start, end, before, limit=80))
    assert got == expected


def test_dask_output_is_the_local_replay_byte_for_byte(tmp_path, client):
    """Many inputs (a path, a file:// glob), small partitions: each input's parts concatenated equal the
    local replay; a malformed and a missing input are named in summary.json, the rest go on."""
    src = tmp_path / "in"
    src.mkdir()
    a = make_corpus(src / "a.jsonl", 25, extra=["not json", "", '{"id": "x", "characters": ["Mira"]}'])
    b = make_corpus(src / "b.jsonl", 10)
    bad = src / "c.jsonl"
    bad.write_bytes(b"\x00\xff\xfe garbage\n\x89PNG\r\n")
    out = tmp_path / "out"
    summary = batch_dask.replay_dask(RULES, [str(a), f"file://{src}/[bc].jsonl", str(src / "missing.jsonl")],
                                     str(out), client, partition_bytes=3000)
    assert parts_of(out, 0, "a.jsonl") == local(a)
    assert parts_of(out, 1, "b.jsonl") == local(b)
    assert parts_of(out, 2, "c.jsonl") == local(bad)
    doc = json.loads((out / "summary.json").read_text())
    assert len(doc["partitions"]) > 6  # the inputs were really cut
    assert doc["chats"] == summary.chats == sum(len(local(p).splitlines()) for p in (a, b, bad))
    assert any("missing.jsonl" in e for e in doc["bad_inputs"])
    assert any(e.startswith(f"{a}: line ") and "not JSON" in e for e in doc["errors"])
    assert any("c.jsonl: line 1: not JSON" in e for e in doc["errors"])
    assert [i["input"] for i in doc["inputs"]] == [str(a), f"file://{b}", f"file://{bad}"]


def test_the_cli_replays_on_local_2_and_on_an_address_and_refuses_a_full_output_dir(tmp_path, client):
    a = make_corpus(tmp_path / "a.jsonl", 8)
    for address in ("local:2", client.scheduler.address):
        out, err = tmp_path / f"out-{address[:5]}", io.StringIO()
        code = run(["replay", RULES, str(a), "--dask", address, "-o", str(out), "--partition-size", "2000"],
                   io.StringIO(), err)
        assert code == 0, err.getvalue()
        assert parts_of(out, 0, "a.jsonl") == local(a)
        assert "partition(s) of 1 input(s)" in err.getvalue()
    again = io.StringIO()
    assert run(["replay", RULES, str(a), "--dask", client.scheduler.address, "-o", str(out)],
               io.StringIO(), again) == 2
    assert "not empty" in again.getvalue()
    assert run(["replay", RULES, str(a), str(a), "-o", str(tmp_path / "x")], io.StringIO(), io.StringIO()) == 2


def test_a_killed_worker_loses_no_chat_and_writes_none_twice(tmp_path, client):
    """One worker process is killed (SIGKILL) while tasks run; Dask runs its task again elsewhere. The
    outputs are still the local replay's bytes, and no temporary file is left."""
    a = make_corpus(tmp_path / "a.jsonl", 60, turns=6)
    out = tmp_path / "out"
    killed: list[int] = []

    def kill_one(result):
        busy = [w for w, keys in client.processing().items() if keys]
        if not killed and busy:  # a worker with a task on it right now
            pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    summary = batch_dask.replay_dask(RULES, [str(a)], str(out), client, partition_bytes=4000, on_done=kill_one)
    assert killed and killed[0] not in client.run(os.getpid).values()
    expected = local(a)
    assert parts_of(out, 0, "a.jsonl") == expected
    assert summary.chats == len(expected.splitlines())
    assert not [p for p in os.listdir(out / "0000-a.jsonl") if p.endswith(".tmp")]


def test_the_progress_bar_only_on_a_terminal(tmp_path, client):
    """tqdm draws on a terminal, locally (chats) and on Dask (input bytes, chats); otherwise it is not even
    imported (a fresh interpreter checks)."""
    a = make_corpus(tmp_path / "a.jsonl", 5)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    assert run(["replay", RULES, str(a), "-o", str(tmp_path / "o.jsonl")], io.StringIO(), err) == 0
    assert "replay: " in err.getvalue() and f"{5 + 1}chat" in err.getvalue().replace(" ", "")
    err = Tty()
    assert run(["replay", RULES, str(a), "--dask", client.scheduler.address, "-o", str(tmp_path / "d"),
                "--partition-size", "1000"], io.StringIO(), err) == 0
    assert f"{a.stat().st_size / 1024:.1f}k/" in err.getvalue() and "chats=6" in err.getvalue(), err.getvalue()
    argv = ["replay", RULES, str(a), "-o", str(tmp_path / "p.jsonl")]
    code = ("import io, sys; from tagengine._internal.cli import run; "
            f"run({argv!r}, io.StringIO(), io.StringIO()); "
            "print('tqdm' in sys.modules, 'distributed' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["False", "False"]


def test_an_input_gone_before_its_task_runs_is_named_and_writes_no_part(tmp_path):
    """The task itself (no cluster): a read that fails is returned as data naming the input and the part."""
    from fsspec.implementations.local import LocalFileSystem

    fs = LocalFileSystem()
    text = (SAMPLES / "rulesets" / "blades-like.json").read_bytes()
    out = tmp_path / "part-00000.jsonl"
    part = batch_dask.Partition(0, 0, "gone.jsonl", fs, str(tmp_path / "gone.jsonl"), 0, 100, str(out))
    got = batch_dask.replay_partition(text, "d", part, 0, fs)
    assert set(got) == {"unreadable"} and got["unreadable"].startswith("gone.jsonl (partition 0, bytes 0-100")
    assert not out.exists() and not os.listdir(tmp_path)


def test_a_storage_failure_of_any_kind_is_named_not_raised(tmp_path):
    """The tasks themselves (no cluster): an input gone before its lines are counted gives -1, and its
    partitions are named unreadable; a backend that raises something other than OSError is named too."""
    from fsspec.implementations.local import LocalFileSystem

    class Flaky(LocalFileSystem):  # a storage backend whose reads fail with its own exception type
        def open(self, *a, **kw):
            raise RuntimeError("token expired")

    fs = LocalFileSystem()
    assert batch_dask.count_newlines(fs, str(tmp_path / "gone.jsonl"), 0, 100) == -1
    assert batch_dask.count_newlines(Flaky(), str(tmp_path / "gone.jsonl"), 0, 100) == -1
    text = (SAMPLES / "rulesets" / "blades-like.json").read_bytes()
    src = make_corpus(tmp_path / "a.jsonl", 2)
    out = tmp_path / "part-00000.jsonl"
    part = batch_dask.Partition(0, 0, "a.jsonl", fs, str(src), 0, src.stat().st_size, str(out))
    got = batch_dask.replay_partition(text, "d", part, -1, fs)
    assert set(got) == {"unreadable"} and "could not be counted" in got["unreadable"]
    flaky = batch_dask.Partition(0, 0, "a.jsonl", Flaky(), str(src), 0, src.stat().st_size, str(out))
    got = batch_dask.replay_partition(text, "d", flaky, 0, fs)
    assert set(got) == {"unreadable"} and "RuntimeError: token expired" in got["unreadable"]
    assert not out.exists()


def test_only_bad_inputs_still_write_the_summary(tmp_path, client):
    """No input can be read: no partition, but the output directory and summary.json still say why (it used
    to end on `summary.json: No such file or directory`)."""
    out = tmp_path / "out"
    err = io.StringIO()
    code = run(["replay", RULES, str(tmp_path / "missing.jsonl"), str(tmp_path / "none-*.jsonl"), "--dask",
                client.scheduler.address, "-o", str(out)], io.StringIO(), err)
    assert code == 1, err.getvalue()
    doc = json.loads((out / "summary.json").read_text())
    assert doc["chats"] == 0 and doc["partitions"] == [] and len(doc["bad_inputs"]) == 2
    assert "missing.jsonl" in doc["bad_inputs"][0] and "no file matches" in doc["bad_inputs"][1]


@pytest.mark.skipif(importlib.util.find_spec("s3fs") is not None, reason="s3fs is installed here")
def test_an_output_url_whose_package_is_missing_is_a_usage_error(tmp_path):
    """`-o s3://...` without s3fs: a usage message naming the package, not an ImportError traceback."""
    err = io.StringIO()
    code = run(["replay", RULES, str(tmp_path / "a.jsonl"), "--dask", "local:1", "-o", "s3://bucket/out"],
               io.StringIO(), err)
    assert code == 2 and "s3://bucket/out" in err.getvalue() and "s3fs" in err.getvalue()


def test_a_line_cut_short_reads_the_same_with_one_worker_two_and_dask(tmp_path, client):
    """A chat cut off mid-line (no closing brace): its error names the same place however it is replayed. One
    worker used to parse the line with its newline (`at line 2 column 1`), two workers and Dask without it."""
    src = make_corpus(tmp_path / "a.jsonl", 3, extra=['{"id": "cut", "characters": ["Cutter"]', '{"id": 7'])
    one = local(src)
    two = tmp_path / "two.jsonl"
    assert run(["replay", RULES, str(src), "--workers", "2", "-o", str(two)], io.StringIO(), io.StringIO()) == 1
    out = tmp_path / "out"
    batch_dask.replay_dask(RULES, [str(src)], str(out), client, partition_bytes=500)
    assert b"at line 1 column" in one and b"at line 2 column" not in one
    assert two.read_bytes() == one
    assert parts_of(out, 0, "a.jsonl") == one


# --- SillyTavern chat files on Dask (DK-10..) ----------------------------------------------------------------

ST_FIXTURES = ROOT / "tests" / "fixtures" / "st"
CREW = ["--character", "Cutter", "--character", "Lurk"]


def st_inputs(folder, copies=1):
    """The chat fixtures (`copies` times each) and a malformed chat file among them, in a fixed order."""
    folder.mkdir()
    paths = []
    for k in range(copies):
        for src in sorted(ST_FIXTURES.glob("*.jsonl")):
            dst = folder / f"{k:03d}-{src.name}"
            dst.write_bytes(src.read_bytes())
            paths.append(str(dst))
    bad = folder / "zz-bad.jsonl"
    bad.write_bytes(b'{"chat_metadata": {}}\n{"name": "Ana", "is_user": "yes", "mes": 3}\nnot json\n')
    paths.insert(2, str(bad))
    return paths


def all_parts(out_dir):
    """Every part, in the inputs' order: what `cat OUT/*/part-*.jsonl` gives."""
    return b"".join((out_dir / d / p).read_bytes() for d in sorted(os.listdir(out_dir)) if d != "summary.json"
                    for p in sorted(os.listdir(out_dir / d)))


def st_local(paths, out, *start):
    assert run(["replay", RULES, *paths, "--format", "st", *start, "-o", str(out)], io.StringIO(),
               io.StringIO()) == 1  # the malformed file
    return out.read_bytes()


def test_st_chat_files_on_dask_are_the_local_replay_byte_for_byte(tmp_path, client):
    """DK-10: one chat file, one task; `replay --format st --dask` writes the local `replay --format st` lines,
    in input order across the parts; `--character` and `--start` are honoured; the format is told from the
    first file without `--format`; a malformed chat is named in summary.json and the rest go on."""
    paths = st_inputs(tmp_path / "in")
    expected = st_local(paths, tmp_path / "local.jsonl", *CREW)
    for fmt in (["--format", "st"], []):
        out, err = tmp_path / f"out{len(fmt)}", io.StringIO()
        code = run(["replay", RULES, *paths, *fmt, *CREW, "--dask", client.scheduler.address, "-o", str(out)],
                   io.StringIO(), err)
        assert code == 1, err.getvalue()  # the malformed file
        assert all_parts(out) == expected
    doc = json.loads((out / "summary.json").read_text())
    assert [i["input"] for i in doc["inputs"]] == paths and len(doc["partitions"]) == len(paths)
    assert doc["chats"] == len(paths) and len(doc["errors"]) == 1
    assert doc["errors"][0].startswith(f"{paths[2]}:2: ") and "is_user" in doc["errors"][0]
    assert f"{paths[2]}:3: $: not-json" in doc["errors"][0] and "zz-bad.jsonl" in err.getvalue()
    assert [i["bad_lines"] for i in doc["inputs"]] == [0, 0, 1, 0, 0]
    # --start: a state file instead of the characters; the receipts follow it exactly as locally
    from tagengine._internal.ruleset import Ruleset
    from tagengine._internal.state import GameState

    state = tmp_path / "start.json"
    state.write_text(GameState.new(Ruleset.load(RULES), ["Cutter"]).dumps())
    expected = st_local(paths, tmp_path / "local2.jsonl", "--start", str(state))
    out = tmp_path / "out-start"
    assert run(["replay", RULES, *paths, "--start", str(state), "--format", "st", "--dask", client.scheduler.address,
                "-o", str(out)], io.StringIO(), io.StringIO()) == 1
    assert all_parts(out) == expected and b'"start"' in expected
    # usage: a JSONL input with --character, and --partition-size with chat files
    crew = str(SAMPLES / "transcripts" / "crew-night.jsonl")
    err = io.StringIO()
    assert run(["replay", RULES, crew, *CREW, "--dask", client.scheduler.address, "-o", str(tmp_path / "u")],
               io.StringIO(), err) == 2 and "--character and --start" in err.getvalue()
    err = io.StringIO()
    assert run(["replay", RULES, *paths, "--partition-size", "100", "--dask", client.scheduler.address, "-o",
                str(tmp_path / "v")], io.StringIO(), err) == 2 and "one chat, one task" in err.getvalue()


def test_st_chat_files_a_killed_worker_loses_no_chat_and_writes_none_twice(tmp_path, client):
    """DK-10 with DK-4: a worker busy with a chat file is SIGKILLed; every part is still the local line."""
    from functools import partial

    from tagengine._internal.sillytavern.chatreplay import Start, replay_on_fs

    paths = st_inputs(tmp_path / "in", copies=15)
    expected = st_local(paths, tmp_path / "local.jsonl", *CREW)
    out = tmp_path / "out"
    killed: list[int] = []

    def kill_one(result):
        busy = [w for w, keys in client.processing().items() if keys]
        if not killed and busy:
            pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    per_file = partial(replay_on_fs, given=Start(characters=("Cutter", "Lurk")))
    summary = batch_dask.replay_dask(RULES, paths, str(out), client, on_done=kill_one, per_file=per_file)
    assert killed and killed[0] not in client.run(os.getpid).values()
    assert all_parts(out) == expected
    assert summary.chats == len(paths) == len(expected.splitlines())
    assert not [p for d in os.listdir(out) if d != "summary.json" for p in os.listdir(out / d) if p.endswith(".tmp")]


def test_st_export_on_dask_writes_the_local_export_byte_for_byte(tmp_path, client):
    """DK-13: `st export --dask` runs one task per chat; each file equals the local export's; the malformed
    chat is named and not written; --in-place is refused with --dask."""
    paths = st_inputs(tmp_path / "in")
    runs = {}
    for name, extra in (("local", []), ("dask", ["--dask", client.scheduler.address])):
        err = io.StringIO()
        code = run(["st", "export", RULES, *paths, *CREW, "--out-dir", str(tmp_path / name), *extra],
                   io.StringIO(), err)
        assert code == 1 and "zz-bad.jsonl:2: " in err.getvalue(), err.getvalue()
        runs[name] = (err.getvalue(), {p: (tmp_path / name / p).read_bytes()
                                       for p in sorted(os.listdir(tmp_path / name))})
    assert runs["dask"] == runs["local"]
    assert len(runs["dask"][1]) == len(paths) - 1 and "zz-bad.jsonl" not in runs["dask"][1]
    err = io.StringIO()
    assert run(["st", "export", RULES, *paths, *CREW, "--in-place", "--dask", client.scheduler.address],
               io.StringIO(), err) == 2 and "--in-place" in err.getvalue()


def test_dk_15_states_dir_on_dask_writes_what_the_local_replay_writes(tmp_path, client):
    """--states-dir on Dask: each chat's final state read back from the parts in order, so the folder is the
    local replay's of the same lines, file for file, byte for byte; an id met twice (here: in both inputs)
    keeps both states, the later named by its line in the whole output (F-11)."""
    a, b = make_corpus(tmp_path / "a.jsonl", 6), make_corpus(tmp_path / "b.jsonl", 6)
    both = tmp_path / "both.jsonl"
    both.write_bytes(a.read_bytes() + b.read_bytes())
    assert run(["replay", RULES, str(both), "-o", str(tmp_path / "local.jsonl"), "--states-dir",
                str(tmp_path / "local-states")], io.StringIO(), io.StringIO()) == 0
    err = io.StringIO()
    assert run(["replay", RULES, str(a), str(b), "--dask", client.scheduler.address, "-o", str(tmp_path / "out"),
                "--partition-size", "2000", "--states-dir", str(tmp_path / "states")], io.StringIO(), err) == 0, \
        err.getvalue()
    want = {p.name: p.read_bytes() for p in (tmp_path / "local-states").iterdir()}
    got = {p.name: p.read_bytes() for p in (tmp_path / "states").iterdir()}
    assert got == want and any("~" in name for name in got)
    assert f"wrote {len(want)} final state(s)" in err.getvalue()
    assert "was on " in err.getvalue()  # the second of each id is named, with where the first was
