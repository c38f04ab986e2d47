"""Processes that take tasks in order and write their outputs in that order: the local replay's pool (PF-13).

`run_ordered` shares one sequence of tasks between this process and `workers - 1` forked children, forked once
this process has done the first task alone (so they inherit what a first task warms, PF-30). Each
process takes the next task with `take` (under a lock, so tasks are numbered in the order they are taken),
runs `work` on it with no lock held, and writes the output straight to the sink's file descriptor once the
output of every earlier task is out. A task finished before its turn is held while its process goes on
with the next one, at most WINDOW_PER_WORKER tasks per process ahead of the output, so no process waits
while there is work and memory stays bounded. Each task's small result (counts, errors) is written in the
same turn to a temporary file, which this process reads back in task order. So no byte of the input or
the output passes through a process that does not work on it, and two workers are two processes, not three:
a `multiprocessing.Pool`'s parent moved every byte and took a sixth of two cores (PF-9).

Nothing hangs: every wait has a time limit after which the waiter looks whether the others still live. A
child that dies (killed) makes the run raise ChildProcessError; a parent that dies makes its children stop.
An exception in any process (a write or a read that fails) stops the others and is raised here.
"""

from __future__ import annotations

import gc
import io
import mmap
import multiprocessing as mp
import os
import pickle
import signal
import struct
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WINDOW_PER_WORKER = 4  # tasks taken per process beyond the last one written, at most
POLL = 0.25  # seconds a wait lasts at most before the waiter looks whether the other processes live
CURSOR_INTS = 4  # the shared integers `take` keeps its place in
_TAKEN, _WRITTEN, _ENDED, _FAILED, _RESULTS, _WAITERS = range(6)  # the shared integers of the run
_HEAD = struct.Struct("<Q")  # a result record's length


def file_descriptor(stream: Any) -> int | None:
    """The stream's file descriptor, or None (text in memory, a wrapper without one)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None
    return fd if isinstance(fd, int) else None


def writes_ordered(sink: Any) -> bool:
    """Whether processes can write `sink` in turn: bytes to a file descriptor (a file, a pipe, a terminal),
    forked here (children inherit the descriptors and the loaded engine). Text in memory cannot."""
    out = getattr(sink, "buffer", sink)
    text = isinstance(getattr(out, "wrapped", out), io.TextIOBase)  # `wrapped`: files.NamedStream
    return sys.platform.startswith("linux") and not text and file_descriptor(out) is not None


def shared_ints(n: int) -> memoryview:
    """`n` 64-bit integers, all 0, in memory that processes forked after share (an anonymous shared mapping).
    `RawArray` would do the same through ctypes and a file-backed heap, whose imports and set-up were some
    2.5 ms of a run's serial start (PF-54)."""
    return memoryview(mmap.mmap(-1, n * 8)).cast("q")


class _Stopped(Exception):
    """Another process failed, or the parent is gone: this one stops."""


class _Turns(Generic[T, R]):
    """What the processes of one run share: the lock, the integers, `take`'s cursor, the results file."""

    def __init__(self, take: Callable[[Any], T | None], work: Callable[[T], tuple[bytes, R]], fd: int,
                 name: str, workers: int) -> None:
        ctx = mp.get_context("fork")
        self.take, self.work, self.fd, self.name = take, work, fd, name
        self.window = WINDOW_PER_WORKER * workers
        self.lock = ctx.Lock()
        self.wake = ctx.Semaphore(0)
        self.ints = shared_ints(6)
        self.cursor = shared_ints(CURSOR_INTS)
        self.results = tempfile.TemporaryFile(prefix="tagengine-turns-")  # noqa: SIM115 - closed by run_ordered
        self.read_at = 0  # the parent's place in the results file
        self.alive: Callable[[], None] = lambda: None  # raises when the other processes cannot go on

    @contextmanager
    def locked(self) -> Iterator[None]:
        while not self.lock.acquire(timeout=POLL):
            self.alive()
        try:
            yield
        finally:
            self.lock.release()

    def serve(self, after: Callable[[], None], first_only: bool = False) -> None:
        """Take, work and write until no task is left and every output of this process is out; `after()`
        follows each task and each wait (the parent reads the results there). `first_only`: return once the
        first task is written (the parent, alone, before the fork)."""
        held: deque[tuple[int, bytes, R]] = deque()
        while True:
            task: T | None = None
            number = -1
            with self.locked():
                if self.ints[_FAILED]:
                    raise _Stopped
                self._write(held)
                if first_only and self.ints[_WRITTEN]:
                    return
                if not self.ints[_ENDED] and self.ints[_TAKEN] < self.ints[_WRITTEN] + self.window:
                    task = self.take(self.cursor)
                    if task is None:
                        self.ints[_ENDED] = 1
                    else:
                        number = self.ints[_TAKEN]
                        self.ints[_TAKEN] = number + 1
                if task is None:
                    if self.ints[_ENDED] and not held:
                        return
                    self.ints[_WAITERS] += 1  # woken by the next write
            if task is None:
                self.wake.acquire(timeout=POLL)
                self.alive()
            else:
                data, result = self.work(task)
                held.append((number, data, result))
            after()

    def _write(self, held: deque[tuple[int, bytes, R]]) -> None:
        """The held outputs whose turn has come, with their results; then the waiters are woken."""
        if not held or held[0][0] != self.ints[_WRITTEN]:
            return
        while held and held[0][0] == self.ints[_WRITTEN]:
            number, data, result = held.popleft()
            _write_all(self.fd, data, self.name)
            self._record(("ok", result))
            self.ints[_WRITTEN] = number + 1
        for _ in range(self.ints[_WAITERS]):
            self.wake.release()
        self.ints[_WAITERS] = 0

    def _record(self, item: tuple[str, Any]) -> None:
        record = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(self.results.fileno(), _HEAD.pack(len(record)) + record, "the results file")
        self.ints[_RESULTS] += _HEAD.size + len(record)

    def fail(self, error: BaseException) -> None:
        """Stop every process; `error` goes to the results for the parent to raise (it gives up the lock
        when the lock cannot be had: the parent then raises ChildProcessError)."""
        self.ints[_FAILED] = 1
        if self.lock.acquire(timeout=POLL):
            try:
                try:
                    self._record(("error", error))
                except Exception:  # an error that does not pickle, or a full disk: its words at least
                    self._record(("error", RuntimeError(f"{type(error).__name__}: {error}")))
            except Exception:  # pragma: no cover - the results file cannot be written either
                pass
            finally:
                self.lock.release()
        for _ in range(64):  # whoever waits wakes up and sees the failure
            self.wake.release()

    def results_ready(self) -> Iterator[tuple[str, Any]]:
        """The records written since the last call, in task order (parent only)."""
        with self.locked():
            end = self.ints[_RESULTS]
        fd = self.results.fileno()
        while self.read_at < end:
            (size,) = _HEAD.unpack(os.pread(fd, _HEAD.size, self.read_at))
            record = os.pread(fd, size, self.read_at + _HEAD.size)
            self.read_at += _HEAD.size + size
            yield pickle.loads(record)


def _write_all(fd: int, data: bytes, name: str) -> None:
    """All of `data` to `fd` (a pipe may take part of it), an error naming the output."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise OSError(e.errno, e.strerror, name) from None  # EPIPE makes a BrokenPipeError


def _child(turns: _Turns[Any, Any], parent: int) -> None:
    """A forked worker: serve until done, or until the parent is gone or another process failed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the children

    def parent_alive() -> None:
        if os.getppid() != parent:
            raise _Stopped

    turns.alive = parent_alive
    try:
        turns.serve(lambda: None)
    except _Stopped:
        os._exit(1)
    except BaseException as e:
        turns.fail(e)
        os._exit(1)


def run_ordered(take: Callable[[Any], T | None], work: Callable[[T], tuple[bytes, R]], sink: Any, workers: int,
                on_result: Callable[[R], None]) -> None:
    """Run every task `take(cursor)` gives (None: no more; `cursor` is CURSOR_INTS shared integers, all 0 at
    first, which `take` may use to keep its place) through `work(task) -> (output, result)` in this process
    and `workers - 1` forked children, writing the outputs to `sink` (`writes_ordered`) in the order the tasks were
    taken and calling `on_result(result)` here in the same order. Raises what failed in any process (a write
    error names the sink); ChildProcessError when a child died without a word (killed)."""
    out = getattr(sink, "buffer", sink)
    fd = file_descriptor(out)
    if fd is None:
        raise ValueError("run_ordered writes to a file descriptor")
    sink.flush()  # what was written before goes first
    out.flush()
    name = getattr(out, "name", None)
    turns: _Turns[T, R] = _Turns(take, work, fd, name if isinstance(name, str) else "<output>", workers)
    children: list[Any] = []

    def report() -> None:
        for kind, item in turns.results_ready():
            if kind == "error":
                raise item
            on_result(item)

    def children_alive() -> None:
        for p in children:
            if p.exitcode not in (None, 0) and not turns.ints[_FAILED]:
                raise ChildProcessError(f"a replay worker (process {p.pid}) ended with {_ended(p.exitcode)} "
                                        "before its work was done")

    turns.alive = children_alive
    thawed = gc.get_freeze_count() == 0
    try:
        if workers > 1:
            # The first task here, alone, before the fork: what a process pays once on its first task (the command
            # families imported, each per-ruleset compile, patterns built) is paid once and inherited, not again
            # by every child (decision PF-30). In a small batch that once was most of a child's work.
            turns.serve(report, first_only=True)
        if workers > 1 and not turns.ints[_ENDED]:
            gc.freeze()  # the collector would touch, and so copy, every page the children share with us
            ctx = mp.get_context("fork")
            for _ in range(workers - 1):
                p = ctx.Process(target=_child, args=(turns, os.getpid()), daemon=True)
                p.start()
                children.append(p)
        try:
            turns.serve(report)
        except _Stopped:  # a child failed: its error is in the results
            report()
            raise ChildProcessError("a replay worker stopped without saying why") from None
        for p in children:  # each has written its last output: they end now
            while p.exitcode is None:
                p.join(POLL)
                children_alive()
            children_alive()
        report()
        if turns.ints[_FAILED]:
            raise ChildProcessError("a replay worker stopped without saying why")
    except BaseException:
        turns.ints[_FAILED] = 1
        for p in children:
            if p.exitcode is None:
                p.terminate()
        raise
    finally:
        for p in children:
            p.join()
        turns.results.close()
        if children and thawed:
            gc.unfreeze()  # the caller's objects are the collector's again


def _ended(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
