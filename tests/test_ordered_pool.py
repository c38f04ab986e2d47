"""`ordered_pool.run_ordered`, the local replay's pool (PF-13): outputs in the order taken whoever did the task, results
in the same order, memory bounded by the window, and nothing hangs: a killed child, a child's error, a write that
fails and Ctrl-C each end the run with the error, no process left behind."""

from __future__ import annotations

import errno
import gc
import inspect
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal import ordered_pool


def counter(count: int):
    """`take` for tasks 0..count-1, its place kept in the shared cursor."""

    def take(cursor):
        i = cursor[0]
        if i >= count:
            return None
        cursor[0] = i + 1
        return i

    return take


def output(i: int, size: int) -> bytes:
    return f"<{i}>".encode() * size + b"\n"


def children() -> set[int]:
    """The process ids of this process's children not yet waited for (zombies included), as Linux lists them."""
    return {int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()}


def none_left(before: set[int]) -> bool:
    """Whether every child forked since `before` has ended: a run returns while its children end (PF-56),
    so this waits for them, 30 s at most; one ended may be a zombie until the next run waits for it."""
    deadline = time.monotonic() + 30
    while any("zombie" not in _state(pid) for pid in children() - before):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
    except (OSError, IndexError):
        return "zombie"


def run(path: Path, sizes: list[int], workers: int, work=None) -> list[int]:
    results: list[int] = []
    with open(path, "wb") as sink:
        ordered_pool.run_ordered(counter(len(sizes)), work or (lambda i: (output(i, sizes[i]), i)), sink, workers,
                            results.append)
    return results


@pytest.fixture(params=[False, True], ids=["own", "multiprocessing"])
def library(request, monkeypatch):
    """Each test below twice: with our processes and semaphores, and with the library's
    (`TAGENGINE_WORKERS=multiprocessing`, PF-56)."""
    monkeypatch.setattr(ordered_pool, "LIBRARY", request.param)
    return request.param


@settings(max_examples=examples(25))
@given(sizes=st.lists(st.integers(0, 3000), max_size=60), workers=st.integers(1, 3), library=st.booleans())
def test_outputs_and_results_in_the_order_taken(tmp_path_factory, sizes, workers, library):
    path = tmp_path_factory.mktemp("turns") / "out"
    before = children()
    with patch.object(ordered_pool, "LIBRARY", library):
        assert run(path, sizes, workers) == list(range(len(sizes)))
    assert path.read_bytes() == b"".join(output(i, n) for i, n in enumerate(sizes))
    assert none_left(before)


def test_the_work_is_shared_and_the_collector_left_as_it_was(tmp_path, library):
    """Both processes take tasks (a task that names its process shows who did it); the objects frozen for the
    fork are the collector's again after the run."""
    gc.unfreeze()
    pids: list[int] = []
    with open(tmp_path / "out", "wb") as sink:
        ordered_pool.run_ordered(counter(40), lambda i: (b"x", (time.sleep(0.005), os.getpid())[1]), sink, 2,
                                 pids.append)
    assert len(set(pids)) == 2 and os.getpid() in pids
    assert gc.get_freeze_count() == 0


def test_no_process_runs_more_than_the_window_ahead(tmp_path, library):
    """Task 1 is slow (task 0 runs alone before the fork): the other process goes on with tasks 2, 3, ... but
    takes none at or past the window (WINDOW_PER_WORKER per process, counted from the one task written) until
    task 1 is written, so what is held waiting stays bounded."""
    log = tmp_path / "log"
    window = ordered_pool.WINDOW_PER_WORKER * 2

    def work(i: int):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"start {i} {time.monotonic()}\n".encode())
        if i == 1:
            time.sleep(1.0)
        os.write(fd, f"end {i} {time.monotonic()}\n".encode())
        os.close(fd)
        return b"%d\n" % i, i

    assert run(tmp_path / "out", [0] * 40, 2, work) == list(range(40))
    events = [line.split() for line in log.read_text().splitlines()]
    slow_done = next(float(t) for kind, i, t in events if kind == "end" and i == "1")
    ahead = [int(i) for kind, i, t in events if kind == "start" and float(t) < slow_done and int(i) > 1]
    assert ahead and max(ahead) == window  # it went on, and stopped at the window


def test_the_first_task_runs_here_before_any_child_is_forked(tmp_path, library):
    """PF-30: what the first task warms (imports, per-ruleset compiles) is done once and inherited by the children:
    task 0 runs in this process while it has no child; the children start after it."""
    seen: list[tuple[int, int, int]] = []
    before = children()

    def work(i: int):
        return b"x", (i, os.getpid(), len(children() - before))

    with open(tmp_path / "out", "wb") as sink:
        ordered_pool.run_ordered(counter(10), work, sink, 3, seen.append)
    assert seen[0] == (0, os.getpid(), 0)
    assert [i for i, _, _ in seen] == list(range(10))
    seen.clear()  # warm (PF-56): nothing is left to warm, so the children are forked before any task runs
    ordered_pool.reap(block=True)  # the first run's children have ended
    before = children()
    with open(tmp_path / "out", "wb") as sink:
        ordered_pool.run_ordered(counter(10), work, sink, 3, seen.append, warm=True)
    assert seen[0][1] != os.getpid() or seen[0][2] == 2
    assert [i for i, _, _ in seen] == list(range(10))


def isolated(script: str, tmp_path: Path, library: bool) -> subprocess.CompletedProcess[str]:
    """A run in a process of its own, so that a hang fails this test instead of stalling the suite."""
    code = textwrap.dedent("""
        import os, signal, sys, time
        from pathlib import Path
        from tagengine._internal import ordered_pool
    """) + "".join(inspect.getsource(f) for f in (counter, children, none_left, _state)) + \
        "PARENT = os.getpid()\n" + textwrap.dedent(script)
    env = {**os.environ, "TAGENGINE_WORKERS": "multiprocessing" if library else "own"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env)


KILLED = """
    def work(i):
        if os.getpid() != PARENT and i >= 3:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)
        return b"x", i
    try:
        with open("out", "wb") as sink:
            ordered_pool.run_ordered(counter(100), work, sink, 2, lambda r: None)
    except ChildProcessError as e:
        print("raised:", e, "left:", sorted(children()))
"""  # a run whose child is killed at its fourth task


def test_a_killed_child_is_an_error_not_a_hang(tmp_path, library):
    p = isolated(KILLED, tmp_path, library)
    assert p.returncode == 0, p.stderr
    assert "raised: a replay worker (process" in p.stdout and "signal SIGKILL" in p.stdout, p.stdout
    assert "left: []" in p.stdout


def test_a_child_killed_where_its_end_cannot_be_told_is_an_error_not_a_hang(tmp_path):
    """With SIGCHLD ignored, the system waits for a child itself and its exit code is never known: a child that
    ended without saying its work was done (killed) still ends the run with an error (PF-56)."""
    p = isolated("signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n" + textwrap.dedent(KILLED), tmp_path, False)
    assert p.returncode == 0, p.stderr
    assert "raised: a replay worker (process" in p.stdout and "an exit not known" in p.stdout, p.stdout


def test_an_error_in_a_child_is_raised_here_and_stops_every_process(tmp_path, library):
    def work(i: int):
        if os.getpid() != parent and i >= 7:
            raise ValueError(f"boom {i}")
        time.sleep(0.01)
        return b"x", i

    parent, before = os.getpid(), children()
    with pytest.raises(ValueError, match="boom"):
        run(tmp_path / "out", [0] * 200, 2, work)
    assert children() <= before  # a failed run waits for its children


def test_ctrl_c_here_ends_the_children(tmp_path, library):
    def work(i: int):
        if os.getpid() == parent and i >= 5:
            raise KeyboardInterrupt
        time.sleep(0.01)
        return b"x", i

    parent, before = os.getpid(), children()
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "out", [0] * 200, 2, work)
    assert children() <= before


@pytest.mark.parametrize("workers", [1, 2])
def test_a_write_that_fails_names_the_output(workers, library):
    before = children()
    with open("/dev/full", "wb") as sink, pytest.raises(OSError) as e:  # warm: the children are forked first
        ordered_pool.run_ordered(counter(20), lambda i: (b"x" * 1000, i), sink, workers, lambda r: None, warm=True)
    assert e.value.errno == errno.ENOSPC and e.value.filename == "/dev/full"
    assert children() <= before


def test_a_pipe_takes_the_outputs_in_order_and_a_closed_one_is_a_broken_pipe():
    sizes = [500, 0, 70000, 3, 20000] * 6  # some outputs larger than a pipe holds
    r, w = os.pipe()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(r, 1 << 16), b""))))
    reader.start()
    with open(w, "wb") as sink:
        ordered_pool.run_ordered(counter(len(sizes)), lambda i: (output(i, sizes[i]), i), sink, 2, lambda r: None)
    reader.join(60)
    os.close(r)
    assert got == [b"".join(output(i, n) for i, n in enumerate(sizes))]
    r, w = os.pipe()
    os.close(r)
    with open(w, "wb") as sink, pytest.raises(BrokenPipeError):
        ordered_pool.run_ordered(counter(20), lambda i: (b"x", i), sink, 2, lambda r: None)


def test_the_stream_goes_on_where_the_outputs_ended(tmp_path):
    """What the caller wrote before (still in the stream's buffer) goes first; what it writes after goes after."""
    path = tmp_path / "out"
    with open(path, "wb") as sink:
        sink.write(b"before\n")
        ordered_pool.run_ordered(counter(30), lambda i: (output(i, 100), i), sink, 2, lambda r: None)
        expected = b"before\n" + b"".join(output(i, 100) for i in range(30))
        assert sink.tell() == len(expected)
        sink.write(b"after\n")
    assert path.read_bytes() == expected + b"after\n"


def test_text_in_memory_is_not_writable_in_turn(tmp_path):
    import io

    assert not ordered_pool.writes_ordered(io.StringIO()) and not ordered_pool.writes_ordered(io.BytesIO())
    with open(tmp_path / "f", "w") as text_file:
        assert ordered_pool.writes_ordered(text_file)  # its bytes go to its descriptor


def test_children_stop_when_the_parent_is_gone(tmp_path, library):
    """A parent killed mid-run (SIGKILL: nothing of its own cleans up) leaves no child replaying the rest alone."""
    p = isolated("""
        def work(i):
            if os.getpid() == PARENT and i >= 3:
                print(*children(), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.01)
            return b"x", i
        with open("out", "wb") as sink:
            ordered_pool.run_ordered(counter(100_000), work, sink, 3, lambda r: None)
    """, tmp_path, library)
    assert p.returncode == -9
    orphans = [int(pid) for pid in p.stdout.split()]
    assert len(orphans) == 2
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in orphans):
        assert time.monotonic() < deadline, "a child outlived its parent by 30 s"
        time.sleep(0.05)



# -- the run's shared integers (PF-54) ---------------------------------------------------------------------------
def test_shared_integers_start_at_zero_and_a_forked_childs_writes_are_seen_here():
    ints = ordered_pool.shared_ints(3)
    assert list(ints) == [0, 0, 0]
    ints[0] = 2**62  # 64-bit: a byte offset into a large file fits
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ints[1] = ints[0] + 1
        ints[2] -= 5
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    assert list(ints) == [2**62, 2**62 + 1, -5]


# -- processes of our own (PF-56) ----------------------------------------------------------------------------------
def test_a_run_returns_once_every_output_is_written_while_its_children_still_end(tmp_path, monkeypatch, library):
    """The run does not wait for a child's exit (the kernel freeing the pages it copied): a child made to linger
    after its last output is still there when the run has returned, and is then waited for, not left a zombie."""
    real = ordered_pool._child

    def lingering(turns, parent):
        code = real(turns, parent)
        deadline = time.monotonic() + 30  # the child only (the parent never calls _child): it ends when told
        while not (tmp_path / "end").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return code

    monkeypatch.setattr(ordered_pool, "_child", lingering)
    before = children()
    assert run(tmp_path / "out", [10] * 12, 2) == list(range(12))
    assert (tmp_path / "out").read_bytes() == b"".join(output(i, 10) for i in range(12))
    lingering_now = children() - before
    assert len(lingering_now) == 1 and all("zombie" not in _state(pid) for pid in lingering_now)
    (tmp_path / "end").touch()
    assert none_left(before)
    monkeypatch.setattr(ordered_pool, "_child", real)
    run(tmp_path / "out", [1], 1)  # the next run waits for the ended child: no zombie is left
    assert not children() - before


def test_the_semaphore_counts_times_out_and_is_shared_with_a_forked_child():
    sem = ordered_pool.Semaphore(2)
    try:
        assert sem.acquire(0.01) and sem.acquire(0.01)
        assert not sem.acquire(0.05)  # none left: a wait ends at its limit
        sem.release(3)
        assert all(sem.acquire(0.01) for _ in range(3)) and not sem.acquire(0)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                time.sleep(0.2)
                sem.release()
            finally:
                os._exit(0)
        assert sem.acquire(30)  # woken by the child's release
        assert os.waitpid(pid, 0)[1] == 0
    finally:
        sem.close()


def test_a_run_imports_no_ctypes_tempfile_threading_nor_multiprocessing_unless_switched_to_the_library(tmp_path):
    """The integers the processes share are an anonymous shared mapping: `RawArray`'s ctypes and file-backed heap
    (their imports alone some 2.3 ms of a run's serial start) are not loaded by a run (PF-54); nor is
    `multiprocessing`, whose processes and locks imported its synchronize, util and subprocess modules (PF-56),
    unless `TAGENGINE_WORKERS=multiprocessing` asks for the library's; nor `tempfile` and `threading`, 9 ms of a cold
    import (the results file is a memfd, PF-57; a caller that loads Lark has both). The outputs are the same."""
    code = textwrap.dedent("""
        import sys
        from tagengine._internal import ordered_pool

        def take(cursor):
            i = cursor[0]
            if i >= 30:
                return None
            cursor[0] = i + 1
            return i

        with open(sys.argv[1], "wb") as sink:
            ordered_pool.run_ordered(take, lambda i: (b"%d\\n" % i, i), sink, 3, lambda r: None)
        watched = ("ctypes", "subprocess", "tempfile", "threading", "multiprocessing.synchronize")
        print(ordered_pool.LIBRARY, sorted(m for m in sys.modules if m in watched))
    """)
    library = "True ['multiprocessing.synchronize', 'subprocess', 'tempfile', 'threading']"
    for value, expected in (("multiprocessing", library), ("", "False []"), ("fork", "False []")):
        out = tmp_path / f"out-{value}"
        done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TAGENGINE_WORKERS": value}, cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == expected
        assert out.read_bytes() == b"".join(b"%d\n" % i for i in range(30))


@pytest.mark.parametrize("memfd", [True, False], ids=["memfd", "no memfd"])
def test_the_results_file_has_no_name_and_a_system_without_memfd_gets_a_temporary_one(tmp_path, monkeypatch, memfd):
    """The run's results go to a file with no name (a memfd, PF-57); where the system has none, to a temporary
    file already unlinked. Either way every result comes back in order, and the file is gone with the run."""
    if not memfd:
        def missing(*args):
            raise OSError(errno.ENOSYS, "memfd_create is not implemented")

        monkeypatch.setattr(os, "memfd_create", missing)
    fd = ordered_pool.anonymous_file()
    try:
        assert os.fstat(fd).st_nlink == 0  # no name in any folder
        assert not os.get_inheritable(fd)
        made = os.readlink(f"/proc/self/fd/{fd}")
        assert made.startswith("/memfd:tagengine-turns") == memfd, made
    finally:
        os.close(fd)
    made_by_run: list[str] = []
    original = ordered_pool.anonymous_file

    def spy() -> int:
        got = original()
        made_by_run.append(os.readlink(f"/proc/self/fd/{got}"))
        return got

    monkeypatch.setattr(ordered_pool, "anonymous_file", spy)
    before = sorted(os.listdir("/proc/self/fd"))
    assert run(tmp_path / "out", [1, 2, 3] * 20, 3) == list(range(60))
    assert (tmp_path / "out").read_bytes() == b"".join(output(i, s) for i, s in enumerate([1, 2, 3] * 20))
    assert len(made_by_run) == 1 and made_by_run[0].startswith("/memfd:tagengine-turns") == memfd, made_by_run
    assert sorted(os.listdir("/proc/self/fd")) == before  # the file and the semaphores gone with the run


def test_a_run_that_cannot_have_its_results_file_says_so_and_keeps_no_descriptor(tmp_path, monkeypatch):
    """No file to be had for the results (every descriptor taken): the run raises that error, and the semaphores it
    had made are closed, not left open in a process that goes on."""
    def full(*args):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(ordered_pool, "anonymous_file", full)
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError, match="Too many open files"):
        run(tmp_path / "out", [1, 2, 3], 2)
    assert sorted(os.listdir("/proc/self/fd")) == before
