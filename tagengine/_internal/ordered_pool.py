"""Processes that take tasks in order and write their outputs in that order: the local replay's pool (PF-13).

`run_ordered` shares one sequence of tasks between this process and `workers - 1` forked children, forked once this
process has done the first task alone (so they inherit what a first task warms, PF-30), or at once when the caller
says this process is warm already (PF-56). Each process takes the next task with `take` (under a lock, so tasks are
numbered in the order they are taken), runs `work` on it with no lock held, and writes the output straight to the
sink's file descriptor once the output of every earlier task is out. A task finished before its turn is held while
its process goes on with the next one, at most WINDOW_PER_WORKER tasks per process ahead of the output, so no
process waits while there is work and memory stays bounded. Each task's small result (counts, errors) is written in
the same turn to a file with no name (`anonymous_file`), which this process reads back in task order. So no byte of
the input or the output passes through a process that does not work on it, and two workers are two processes, not
three: a `multiprocessing.Pool`'s parent moved every byte and took a sixth of two cores (PF-9).

Nothing hangs: every wait has a time limit after which the waiter looks whether the others still live. A
child that dies (killed) makes the run raise ChildProcessError; a parent that dies makes its children stop.
An exception in any process (a write or a read that fails) stops the others and is raised here.

The processes are forked with `os.fork` and share two eventfd semaphores, not `multiprocessing`'s processes and
locks: those import its synchronize, util and subprocess modules (5.5-8 ms of a process's first run with workers on
the machine of PF-56) and set up a bootstrap in every child (1-2 ms more than a bare fork). A run returns once every
output is written, while its children are still ending (their exit, the kernel freeing what they copied, is some
milliseconds); the next run waits for them, or the system once this process ends. One switch away from the library:
`TAGENGINE_WORKERS=multiprocessing` in the environment makes them `multiprocessing`'s processes and semaphores.
"""

from __future__ import annotations

import gc
import io
import math
import mmap
import os
import pickle
import select
import signal
import struct
import sys
import time
from _thread import allocate_lock  # what threading.Lock is, without importing threading (PF-44)
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WINDOW_PER_WORKER = 4  # tasks taken per process beyond the last one written, at most
POLL = 0.25  # seconds a wait lasts at most before the waiter looks whether the other processes live
CURSOR_INTS = 4  # the shared integers `take` keeps its place in
_TAKEN, _WRITTEN, _ENDED, _FAILED, _RESULTS, _WAITERS, _FINISHED = range(7)  # the shared integers of the run
_HEAD = struct.Struct("<Q")  # a result record's length
LIBRARY = os.environ.get("TAGENGINE_WORKERS") == "multiprocessing"  # the library's processes and semaphores


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


def anonymous_file() -> int:
    """A new file with no name, as a descriptor that processes forked after share (their writes go to its one
    offset): a memfd, which needs no folder, so a temporary folder that is full or missing cannot stop a run. A
    temporary file looked for the temporary folder on a process's first run, some 0.4 ms of the run's serial start
    against 0.03 for a memfd (PF-57); it stays the way where memfd is missing."""
    try:
        return os.memfd_create("tagengine-turns", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # a system without memfd
        import tempfile

        with tempfile.TemporaryFile(prefix="tagengine-turns-") as f:
            return os.dup(f.fileno())  # the file lives while a descriptor does


def shared_ints(n: int) -> memoryview:
    """`n` 64-bit integers, all 0, in memory that processes forked after share (an anonymous shared mapping).
    `RawArray` would do the same through ctypes and a file-backed heap, whose imports and set-up were some
    2.5 ms of a run's serial start (PF-54)."""
    return memoryview(mmap.mmap(-1, n * 8)).cast("q")


class Semaphore:
    """A counting semaphore that this process and the children it forks share: a Linux eventfd in semaphore
    mode (each read takes one, a write of n gives n). Like `multiprocessing`'s, it is not given back when a
    process holding it dies, so every wait has a time limit."""

    def __init__(self, value: int) -> None:
        self.fd = os.eventfd(value, os.EFD_SEMAPHORE | os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def acquire(self, timeout: float) -> bool:
        """Take one within `timeout` seconds; False if none came."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.eventfd_read(self.fd)
                return True
            except BlockingIOError:
                pass
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            poller.poll(math.ceil(left * 1000))

    def release(self, n: int = 1) -> None:
        os.eventfd_write(self.fd, n)

    def close(self) -> None:
        os.close(self.fd)


class Child:
    """A forked worker: its process id, and its exit code (negative: the signal) once it is seen to have ended."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode: int | None = None

    def poll(self, block: bool = False) -> int | None:
        """Its exit code, None while it runs (`block`: wait until it ends); an ended child is waited for, so it
        is not left a zombie."""
        if self.exitcode is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:  # waited for elsewhere (SIGCHLD ignored): it has ended, how is not known;
                self.exitcode = 0  # whether its work was done is the run's count of finished children
            else:
                if pid:
                    self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode


class LibrarySemaphore:
    """`Semaphore` made of `multiprocessing`'s (`TAGENGINE_WORKERS=multiprocessing`)."""

    def __init__(self, value: int) -> None:
        import multiprocessing as mp

        self.semaphore = mp.get_context("fork").Semaphore(value)

    def acquire(self, timeout: float) -> bool:
        return self.semaphore.acquire(timeout=timeout)

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.semaphore.release()

    def close(self) -> None:
        pass


class LibraryChild(Child):
    """`Child` as a `multiprocessing` process (`TAGENGINE_WORKERS=multiprocessing`)."""

    def __init__(self, process: Any) -> None:
        super().__init__(process.pid)
        self.process = process

    def poll(self, block: bool = False) -> int | None:
        if block:
            self.process.join()
        code = self.process.exitcode
        self.exitcode = code if isinstance(code, int) else None  # as `Child` keeps it, for the run's callers
        return self.exitcode


_ENDING: list[Child] = []  # children of runs that have returned, still ending: `reap` waits for them
_REAPING = allocate_lock()


def reap(block: bool = False) -> None:
    """Wait for the children of earlier runs that have ended since (`block`: for all of them, to count their
    CPU time, as a benchmark does). Each run calls it when it starts and when it returns; a process that ends
    leaves its children to the system, which waits for them."""
    with _REAPING:  # one thread at a time: a child waited for twice could take another's reused process id
        for c in list(_ENDING):  # removed one by one: a run in another thread may add its own meanwhile
            if c.poll(block) is not None:
                _ENDING.remove(c)


class _Stopped(Exception):
    """Another process failed, or the parent is gone: this one stops."""


class _Turns(Generic[T, R]):
    """What the processes of one run share: the lock, the integers, `take`'s cursor, the results file."""

    def __init__(self, take: Callable[[Any], T | None], work: Callable[[T], tuple[bytes, R]], fd: int,
                 name: str, workers: int) -> None:
        self.take, self.work, self.fd, self.name = take, work, fd, name
        self.window = WINDOW_PER_WORKER * workers
        semaphore = LibrarySemaphore if LIBRARY else Semaphore
        self.lock: Semaphore | LibrarySemaphore = semaphore(1)
        self.wake: Semaphore | LibrarySemaphore = semaphore(0)
        self.ints = shared_ints(7)
        self.cursor = shared_ints(CURSOR_INTS)
        try:
            self.results = anonymous_file()  # closed by run_ordered
        except BaseException:  # no file to be had (no descriptor left): the semaphores are closed too
            self.lock.close()
            self.wake.close()
            raise
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

    def serve(self, after: Callable[[], None], first_only: bool = False, every_output: bool = False) -> None:
        """Take, work and write until no task is left and every output of this process is out (`every_output`:
        of every process); `after()` follows each task and each wait (the parent reads the results there).
        `first_only`: return once the first task is written (the parent, alone, before the fork)."""
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
                    if not held and (self.all_written() if every_output else self.ints[_ENDED]):
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
        if self.ints[_WAITERS]:
            self.wake.release(self.ints[_WAITERS])
            self.ints[_WAITERS] = 0

    def _record(self, item: tuple[str, Any]) -> None:
        record = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(self.results, _HEAD.pack(len(record)) + record, "the results file")
        self.ints[_RESULTS] += _HEAD.size + len(record)

    def fail(self, error: BaseException) -> None:
        """Stop every process; `error` goes to the results for the parent to raise (it gives up the lock
        when the lock cannot be had: the parent then raises ChildProcessError)."""
        if self.lock.acquire(timeout=POLL):
            try:
                try:
                    self._record(("error", error))
                except Exception:  # an error that does not pickle, or a full disk: its words at least
                    self._record(("error", RuntimeError(f"{type(error).__name__}: {error}")))
            except Exception:  # pragma: no cover - the results file cannot be written either
                pass
            finally:
                self.ints[_FAILED] = 1  # after the record: whoever sees the flag finds the error
                self.lock.release()
        else:
            self.ints[_FAILED] = 1
        self.wake.release(64)  # whoever waits wakes up and sees the failure

    def all_written(self) -> bool:
        """No task is left and every output is written: nothing a process ending now could lose."""
        return bool(self.ints[_ENDED]) and self.ints[_WRITTEN] == self.ints[_TAKEN]

    def close(self) -> None:
        os.close(self.results)
        self.lock.close()
        self.wake.close()

    def results_ready(self) -> Iterator[tuple[str, Any]]:
        """The records written since the last call, in task order (parent only)."""
        with self.locked():
            end = self.ints[_RESULTS]
        fd = self.results
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


def _fork(turns: _Turns[Any, Any]) -> Child:
    """A child that serves `turns` and ends; it never returns into the caller's code."""
    if LIBRARY:
        import multiprocessing as mp

        process = mp.get_context("fork").Process(target=_library_child, args=(turns, os.getpid()), daemon=True)
        process.start()
        return LibraryChild(process)
    _flush_standard_streams()  # what the caller printed is not printed again by the child
    parent, pid, code = os.getpid(), -1, 1
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            code = _child(turns, parent)
    finally:
        if pid == 0:  # pragma: no cover - whatever happened in the child (a signal right after the fork too)
            _flush_standard_streams()  # what `work` printed, as the library's children do
            os._exit(code)
    return Child(pid)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(AttributeError, OSError, ValueError):  # closed, replaced, or not a stream
            stream.flush()


def _library_child(turns: _Turns[Any, Any], parent: int) -> None:
    code = _child(turns, parent)
    if code:
        os._exit(code)


def _child(turns: _Turns[Any, Any], parent: int) -> int:
    """A forked worker: serve until done, or until the parent is gone or another process failed; its exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the children
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's SIGTERM ends a child, whatever the caller set

    def parent_alive() -> None:
        if os.getppid() != parent:
            raise _Stopped

    turns.alive = parent_alive
    try:
        turns.serve(lambda: None)
        with turns.locked():
            turns.ints[_FINISHED] += 1  # its work is done: its end, however it comes, loses nothing
    except _Stopped:
        return 1
    except BaseException as e:
        turns.fail(e)
        return 1
    return 0


def run_ordered(take: Callable[[Any], T | None], work: Callable[[T], tuple[bytes, R]], sink: Any, workers: int,
                on_result: Callable[[R], None], warm: bool = False) -> None:
    """Run every task `take(cursor)` gives (None: no more; `cursor` is CURSOR_INTS shared integers, all 0 at
    first, which `take` may use to keep its place) through `work(task) -> (output, result)` in this process
    and `workers - 1` forked children, writing the outputs to `sink` (`writes_ordered`) in the order the tasks were
    taken and calling `on_result(result)` here in the same order. `warm`: this process has run such work before,
    so the children are forked at once (else the first task runs here alone first, PF-30). Raises what failed in
    any process (a write error names the sink); ChildProcessError when a child died without a word (killed)."""
    reap()
    out = getattr(sink, "buffer", sink)
    fd = file_descriptor(out)
    if fd is None:
        raise ValueError("run_ordered writes to a file descriptor")
    sink.flush()  # what was written before goes first
    out.flush()
    name = getattr(out, "name", None)
    turns: _Turns[T, R] = _Turns(take, work, fd, name if isinstance(name, str) else "<output>", workers)
    children: list[Child] = []

    def report() -> None:
        for kind, item in turns.results_ready():
            if kind == "error":
                raise item
            on_result(item)

    def children_alive() -> None:
        if turns.all_written() or turns.ints[_FAILED]:
            return
        ended = [(p, code) for p in children if (code := p.poll()) is not None]
        for p, code in ended:
            if code != 0 or len(ended) > turns.ints[_FINISHED]:  # a 0 not told (SIGCHLD ignored): unknown
                how = _ended(code) if code != 0 else "an exit not known"
                raise ChildProcessError(f"a replay worker (process {p.pid}) ended with {how} before its work was "
                                        "done")

    turns.alive = children_alive
    thawed = gc.get_freeze_count() == 0
    try:
        if workers > 1 and not warm:
            # The first task here, alone, before the fork: what a process pays once on its first task (the command
            # families imported, each per-ruleset compile, patterns built) is paid once and inherited, not again
            # by every child (decision PF-30). In a small batch that once was most of a child's work. A warm
            # process has nothing to pay, and a task run alone would only be serial (PF-56).
            turns.serve(report, first_only=True)
        if workers > 1 and not turns.ints[_ENDED]:
            gc.freeze()  # the collector would touch, and so copy, every page the children share with us
            for _ in range(workers - 1):
                children.append(_fork(turns))
        try:
            turns.serve(report, every_output=True)
        except _Stopped:  # a child failed: its error is in the results
            report()
            raise ChildProcessError("a replay worker stopped without saying why") from None
        report()
        if turns.ints[_FAILED]:
            raise ChildProcessError("a replay worker stopped without saying why")
        # Every output is written and every result read: the children are ending. Waiting for them here would
        # make their exit (the kernel freeing the pages each copied, some milliseconds) the run's last step
        # (PF-56).
        _ENDING.extend(children)
        reap()
    except BaseException:
        turns.ints[_FAILED] = 1
        try:
            _stop(children)
        finally:  # a second Ctrl-C while they are stopped: the next run waits for them
            _ENDING.extend(c for c in children if c.exitcode is None and c not in _ENDING)
        raise
    finally:
        turns.close()
        if children and thawed:
            gc.unfreeze()  # the caller's objects are the collector's again


def _stop(children: list[Child]) -> None:
    """End the children of a failed run and wait for them: SIGTERM, then SIGKILL for one still there after a
    while (a handler the caller set for SIGTERM is the children's too)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for c in children:
            if c.poll() is None:
                with suppress(ProcessLookupError):  # ended meanwhile
                    os.kill(c.pid, sig)
        deadline = time.monotonic() + POLL * 4
        while any(c.poll() is None for c in children) and time.monotonic() < deadline:
            time.sleep(0.005)
    for c in children:
        c.poll(block=True)


def _ended(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
