"""Nothing lost, nothing hangs (issue 17): atomic checked writes, exit codes, bounded inputs (decisions F-1..F-12)."""

from __future__ import annotations

import errno
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import SAMPLES
from tagengine._internal import files
from tagengine._internal.cli import inputs, run
from tagengine._internal.cli.replay import MAX_WORKERS
from tagengine._internal.state.model import MAX_STATE_BYTES

RULES = str(SAMPLES / "rulesets" / "blades-like.json")
REPLY = ('The lock gives.\n[clock: name="Alarm raised" size="6"]\n'
         '[sheet: who="Cutter" op="spend" pool="stress" amount="1"]\n')
TAGENGINE = [sys.executable, "-m", "tagengine"]


def call(*argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        saved = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        code = run(list(argv), out, err)
    finally:
        if stdin is not None:
            sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def game(tmp_path):
    """A state (Cutter, Lurk) and a reply that changes it."""
    state, reply = tmp_path / "state.json", tmp_path / "reply.md"
    assert call("state", "new", RULES, "Cutter", "Lurk", "-o", str(state))[0] == 0
    reply.write_text(REPLY)
    return state, reply


def no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


# -- F-1: all or nothing -------------------------------------------------------------------------
def test_a_failing_write_leaves_the_old_state_and_names_the_file(game, monkeypatch):
    state, reply = game
    old = state.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    code, _, err = call("apply", RULES, str(state), str(reply), "--state-out", str(state))
    assert code == 1
    assert err == f"tagengine: {state}: No space left on device\n"  # the file is named (not `tagengine: : ...`)
    assert state.read_bytes() == old
    assert no_temp_files(state.parent)


def _tmpfs(folder: Path) -> bool:
    folder.mkdir()
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_full_disk_leaves_the_old_state_and_exits_1(tmp_path):
    disk = tmp_path / "disk"
    if not _tmpfs(disk):
        pytest.skip("no tmpfs mount here (needs root); the fault-injected test above covers it")
    try:
        big = tmp_path / "big.json"  # a state larger than what the full disk can take
        names = [f"Crew member {i}" for i in range(40)]
        assert call("state", "new", RULES, *names, "-o", str(big))[0] == 0
        (tmp_path / "reply.md").write_text("[sheet: who=\"Crew member 1\" op=\"spend\" pool=\"stress\" amount=\"1\"]")
        out = disk / "out.json"
        call("state", "new", RULES, "Cutter", "-o", str(out))
        old = out.read_bytes()
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            with pytest.raises(OSError):
                while True:
                    os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
        code, _, err = call("apply", RULES, str(big), str(tmp_path / "reply.md"), "--state-out", str(out))
        assert code == 1
        assert f"{out}: No space left on device" in err
        assert out.read_bytes() == old
        assert no_temp_files(disk)
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_apply_may_write_over_its_own_input_state(game):
    state, reply = game
    assert call("apply", RULES, str(state), str(reply), "--state-out", str(state))[0] == 0
    assert json.loads(state.read_text())["rulesetClocks"] == [{"name": "Alarm raised", "size": 6, "filled": 0}]


def test_an_output_that_is_an_input_is_refused(game, tmp_path):
    state, reply = game
    before = reply.read_bytes(), Path(RULES).read_bytes()
    assert call("apply", RULES, str(state), str(reply), "--state-out", str(reply))[0] == 2
    assert call("state", "new", RULES, "Cutter", "-o", RULES)[0] == 2
    transcripts = tmp_path / "t.jsonl"
    transcripts.write_bytes((SAMPLES / "transcripts" / "crew-night.jsonl").read_bytes())
    code, _, err = call("replay", RULES, str(transcripts), "-o", str(transcripts))
    assert code == 2 and "is the transcripts file" in err
    assert transcripts.read_bytes() == (SAMPLES / "transcripts" / "crew-night.jsonl").read_bytes()
    assert (reply.read_bytes(), Path(RULES).read_bytes()) == before


def test_a_symbolic_link_is_not_written_through(game, tmp_path):
    state, reply = game
    old = state.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(state)
    code, _, err = call("apply", RULES, str(state), str(reply), "--state-out", str(link))
    assert code == 1 and f"{link}: is a symbolic link" in err
    assert link.is_symlink() and state.read_bytes() == old
    with pytest.raises(files.SymlinkRefused):
        files.write_atomic(link, b"{}")


def test_an_existing_file_keeps_its_permissions(game):
    state, reply = game
    state.chmod(0o640)
    assert call("apply", RULES, str(state), str(reply), "--state-out", str(state))[0] == 0
    assert state.stat().st_mode & 0o777 == 0o640


def _kill_at_random(cmds: list[list[str]], check, seed: int, spread: float) -> int:
    """Start each command, SIGKILL it after a random delay in [0, spread), run `check(i)`; returns how many
    were killed before they finished (so the test knows the kills landed mid-run)."""
    rng = random.Random(seed)
    killed = 0
    for start in range(0, len(cmds), 6):  # six at a time keeps the whole test to a few seconds
        group = [(i, subprocess.Popen(cmds[i], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                 for i in range(start, min(start + 6, len(cmds)))]
        delays = sorted((rng.random() * spread, i, p) for i, p in group)
        t0 = time.monotonic()
        for delay, _, p in delays:
            time.sleep(max(0.0, t0 + delay - time.monotonic()))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                killed += 1
        for i, p in group:
            p.wait()
            check(i)
    return killed


@pytest.mark.slow  # kills dozens of `tagengine apply` processes
def test_apply_killed_anywhere_leaves_the_old_state_or_the_new_one(game, tmp_path):
    state, reply = game
    old = state.read_bytes()
    expected = tmp_path / "expected.json"
    assert call("apply", RULES, str(state), str(reply), "--state-out", str(expected))[0] == 0
    new = expected.read_bytes()
    assert new != old
    outs = [tmp_path / f"out{i}.json" for i in range(6)]
    for o in outs:
        o.write_bytes(old)
    t0 = time.monotonic()
    subprocess.run([*TAGENGINE, "apply", RULES, str(state), str(reply), "--state-out", str(outs[0])], check=True,
                   stdout=subprocess.DEVNULL)
    spread = (time.monotonic() - t0) * 1.1  # kills spread over a whole run, the write at its end included
    outs[0].write_bytes(old)

    def check(i):
        assert outs[i].read_bytes() in (old, new)

    cmds = [[*TAGENGINE, "apply", RULES, str(state), str(reply), "--state-out", str(o)] for o in outs]
    assert _kill_at_random(cmds, check, 17, spread) > 0


def _writing(folder: Path, before: dict[str, tuple[int, int]]) -> bool:
    """The directory shows a write has begun: a new file (a temporary), or a file changed or truncated."""
    try:
        return _snapshot(folder) != before
    except FileNotFoundError:  # a temporary renamed between listing and stat: a write has begun
        return True


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


@pytest.mark.slow  # kills dozens of `tagengine replay` processes
def test_replay_killed_anywhere_leaves_the_old_output_or_the_new_one(tmp_path):
    """Each run is killed at a random point after it has begun writing (seen in its directory), so the kills
    land in the writing phase rather than in the imports."""
    chat = (SAMPLES / "transcripts" / "crew-night.jsonl").read_text().strip()
    doc = json.loads(chat)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({**doc, "id": f"c{i}"}) + "\n" for i in range(400)))
    old = b'{"id": "an earlier run"}\n'
    runs = [tmp_path / f"run{i}" for i in range(6)]
    for folder in runs:
        folder.mkdir()
        (folder / "out.jsonl").write_bytes(old)

    def start(folder):
        before = _snapshot(folder)
        p = subprocess.Popen([*TAGENGINE, "replay", RULES, str(src), "-o", str(folder / "out.jsonl")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and not _writing(folder, before):
            time.sleep(0.002)
        return p, time.monotonic()

    p, began = start(runs[0])  # the first runs to the end: how long the writing phase lasts, and the new output
    assert p.wait() == 0
    window = time.monotonic() - began
    new = (runs[0] / "out.jsonl").read_bytes()
    rng = random.Random(7)
    delays = [rng.random() * window for _ in runs[1:]]

    def kill(k):
        p, _ = start(runs[k + 1])
        time.sleep(delays[k])
        killed = p.poll() is None
        if killed:
            p.send_signal(signal.SIGKILL)
        p.wait()
        return killed

    with ThreadPoolExecutor(len(delays)) as pool:  # all at once: a few seconds in all
        killed = list(pool.map(kill, range(len(delays))))
    for folder in runs[1:]:
        assert (folder / "out.jsonl").read_bytes() in (old, new)
    assert any(killed)


# -- F-12: streams -------------------------------------------------------------------------------
def test_a_full_stdout_is_exit_1_with_a_message_naming_it(game):
    state, reply = game
    for argv in (["narrate", str(reply)], ["apply", RULES, str(state), str(reply)]):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([*TAGENGINE, *argv], stdout=full, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 1, argv
        assert p.stderr == "tagengine: <stdout>: No space left on device\n", argv


def test_a_full_stdout_mid_run_is_named(game):
    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

    err = io.StringIO()
    assert run(["narrate", str(game[1])], Full(), err) == 1
    assert err.getvalue() == "tagengine: <stdout>: No space left on device\n"


def test_a_closed_stdout_is_exit_1_with_a_message(game):
    p = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', *TAGENGINE, "narrate", str(game[1])],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr == "tagengine: <stdout>: standard output is closed\n"


ST_CHAT = str(Path(__file__).resolve().parent / "fixtures" / "st" / "hidden.jsonl")


@pytest.mark.parametrize("argv", [
    ["narrate", "-"],
    ["apply", RULES, "STATE", "-"],
    ["replay", RULES, "-"],
    ["st", "import", "-", "--character", "Cutter"],
    ["st", "import", ST_CHAT, "-", "--character", "Cutter", "-o", "OUT"],  # after a file that reads fine
    ["replay", "--format", "st", RULES, ST_CHAT, "-", "--character", "Cutter", "-o", "OUT"],
], ids=["narrate", "apply", "replay", "st-import", "st-import-second", "replay-st-second"])
def test_a_closed_stdin_read_as_dash_is_one_message_for_every_command(game, tmp_path, argv):
    """F-12: every command that reads `-` says the same thing, and writes nothing."""
    out = tmp_path / "out.jsonl"
    argv = [str(game[0]) if a == "STATE" else str(out) if a == "OUT" else a for a in argv]
    p = subprocess.run(["sh", "-c", 'exec "$0" "$@" <&-', *TAGENGINE, *argv], capture_output=True, text=True)
    assert (p.returncode, p.stderr, p.stdout) == (1, "tagengine: <stdin>: standard input is closed\n", "")
    assert not out.exists()


def test_reading_dash_without_stdin_raises_the_one_error_naming_it(monkeypatch):
    """The library's readers of `-` share `files.standard_input`: the same OSError, never an AttributeError."""
    from tagengine._internal.sillytavern.chatreplay import load

    monkeypatch.setattr("sys.stdin", None)
    for read in (files.standard_input, lambda: inputs.read_reply("-"), lambda: load("-")):
        with pytest.raises(OSError) as e:
            read()
        assert (e.value.errno, e.value.strerror, e.value.filename) == (errno.EBADF, "standard input is closed",
                                                                        "<stdin>")


def test_a_closed_stdout_does_not_stop_a_command_that_writes_a_file(tmp_path):
    out = tmp_path / "s.json"
    p = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', *TAGENGINE, "state", "new", RULES, "Cutter", "-o",
                        str(out)], capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(out.read_text())["format"] == "tagengine.state/1"


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_reader_that_stops_early_is_exit_1_without_a_message(tmp_path, unbuffered):
    """Also under PYTHONUNBUFFERED, where Python's text layer drops the rest of a short write."""
    reply = tmp_path / "long.md"
    reply.write_text("The rain keeps falling on the docks.\n" * 40000)  # far more than a pipe holds
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    p = subprocess.Popen([*TAGENGINE, "narrate", str(reply)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert p.stdout.read(10) == b"The rain k"
    p.stdout.close()
    assert p.wait() == 1  # P-7
    assert p.stderr.read() == b""
    p.stderr.close()


# -- F-5: bounded inputs -------------------------------------------------------------------------
def test_inputs_are_bounded(game, tmp_path):
    _, reply = game
    huge = tmp_path / "huge"
    with open(huge, "wb") as f:  # sparse: costs no disk
        f.truncate(MAX_STATE_BYTES + 1)
    code, _, err = call("narrate", str(huge))
    assert code == 1 and f"tagengine: {huge}: larger than {inputs.MAX_REPLY_BYTES} bytes" in err
    code, _, err = call("apply", RULES, str(huge), str(reply))
    assert code == 1 and f"{huge}: $: too-large" in err
    code, _, err = call("check", str(huge))
    assert code == 1 and "too-large" in err + _
    assert call("narrate", "-", stdin=b"x" * (inputs.MAX_REPLY_BYTES + 1))[0] == 1
    assert call("narrate", "-", stdin=b"x" * inputs.MAX_REPLY_BYTES)[0] == 0


def test_dev_zero_is_refused_after_reading_only_the_limit(game):
    state, _ = game
    code, _, err = call("apply", RULES, str(state), "/dev/zero")
    assert code == 1 and "/dev/zero: larger than" in err


def test_read_limited_reads_no_more_than_limit_plus_one():
    class Counting(io.BytesIO):
        taken = 0

        def read(self, n=-1):
            data = super().read(n)
            self.taken += len(data)
            return data

    src = Counting(b"x" * 1000)
    with pytest.raises(files.TooLarge):
        files.read_limited(src, 100, "<test>")
    assert src.taken == 101


# -- F-7: usage ----------------------------------------------------------------------------------
@pytest.mark.parametrize("flag,value", [("--response", "-1"), ("--response-min", "-4210"), ("--context", "-5"),
                                        ("--context", "0"), ("--response", "many")])
def test_negative_budgets_are_usage_errors(game, flag, value):
    code, _, err = call("preview", RULES, str(game[0]), flag, value)
    assert code == 2 and flag in err


@pytest.mark.parametrize("workers", ["0", "-1", str(MAX_WORKERS + 1), "99999999"])
def test_workers_out_of_range_are_usage_errors(workers):
    code, _, err = call("replay", RULES, str(SAMPLES / "transcripts" / "crew-night.jsonl"), "--workers", workers)
    assert code == 2 and "--workers" in err


# -- F-6: a BOM is dropped from every file -------------------------------------------------------
def test_a_bom_is_accepted_in_every_file(game, tmp_path):
    state, reply = game
    bom = b"\xef\xbb\xbf"
    rules = tmp_path / "rules.json"
    rules.write_bytes(bom + Path(RULES).read_bytes())
    state.write_bytes(bom + state.read_bytes())
    reply.write_bytes(bom + reply.read_bytes())
    history = tmp_path / "history.jsonl"
    history.write_bytes(bom + b'{"role": "user", "content": "We wait."}\n')
    assert call("check", str(rules))[0] == 0
    code, out, _ = call("apply", str(rules), str(state), str(reply))
    assert code == 0 and out.startswith("The lock gives.")
    assert call("narrate", str(reply))[1].startswith("The lock")
    assert call("narrate", "-", stdin=reply.read_bytes())[1].startswith("The lock")
    assert call("preview", str(rules), str(state), "--history", str(history), "--json")[0] == 0
    transcripts = tmp_path / "t.jsonl"
    transcripts.write_bytes(bom + (SAMPLES / "transcripts" / "crew-night.jsonl").read_bytes())
    for workers in ("1", "2"):
        code, out, err = call("replay", str(rules), str(transcripts), "--workers", workers)
        assert code == 0, err
        assert json.loads(out)["id"] == "crew-night"


# -- F-9: JSON that will not parse is named in words ---------------------------------------------
def test_a_huge_integer_is_named_in_words_with_its_file(game, tmp_path):
    state, reply = game
    doc = json.loads(state.read_text())
    text = json.dumps(doc).replace('"gamePartySheetRevision": 0', '"gamePartySheetRevision": ' + "9" * 5000)
    state.write_text(text)
    code, _, err = call("apply", RULES, str(state), str(reply))
    assert code == 1
    assert f"{state}: $: not-json: a number has more digits than tagengine reads" in err
    rules = tmp_path / "rules.json"
    rules.write_text(Path(RULES).read_text().replace("{", '{"x": ' + "1" * 5000 + ", ", 1))
    code, _, err = call("check", str(rules))
    assert code == 1 and "digits" in _ + err and "ValueError" not in _ + err


def test_history_roles_match_without_case(game, tmp_path):
    history = tmp_path / "h.jsonl"
    history.write_text('{"role": "USER", "content": "We wait."}\n{"role": "Assistant", "content": "Rain."}\n')
    code, out, err = call("preview", RULES, str(game[0]), "--history", str(history), "--json")
    assert code == 0, err
    roles = {m["content"]: m["role"] for m in json.loads(out)["messages"]}
    assert (roles["We wait."], roles["Rain."]) == ("user", "assistant")
