"""A tokenizer built in a forked process, for a cold command-line start (decision P-6).

A cold `tagengine preview` has two slow halves that do not depend on each other: importing the stack and
loading the ruleset (pydantic, jinja2), and building the tokenizer (for o200k_base: 200,000 ranks, then
tiktoken's own constructor). Each holds the GIL, so threads cannot overlap them; a child forked before
the imports builds the tokenizer on the other core and then answers `encode` / `decode_bytes` over two
pipes. It is the same tokenizer, one process away: the counts are identical (tests compare).

This module owns all of it. Only a process that says it is a fresh command that exits afterwards
(`allow()`, called by the command line's `main`) forks; a library user's process builds its tokenizer
once and keeps it (DEC-33), and `start` then answers None.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from .tokens import Tokenizer, TokenizerChoice

# pickle and tokens.py are imported by the functions that use them: every command's `main` imports this
# module to call `allow()`, and only `preview` forks (decision PF-4).

_allowed = False


def allow() -> None:
    """Let `start` fork from now on: for a process that runs one command and exits (the command line)."""
    global _allowed
    _allowed = True


def start(choice: TokenizerChoice) -> ForkedTokenizer | None:
    """A child already building `choice`'s tokenizer, or None where forking is not allowed or not possible
    (the caller then builds it in process)."""
    if not _allowed or not hasattr(os, "fork"):
        return None
    try:
        forked = ForkedTokenizer(choice.name, choice.build)
    except OSError:  # no process to spare
        return None
    forked.choice = choice  # the budget reads its margin, exactness and chat format from it
    return forked


class ForkedTokenizer:
    """The Tokenizer protocol, served by a child process that starts building the encoding at once.

    Use it as a context manager: leaving it ends the child, whether or not it has finished building."""

    def __init__(self, name: str, build: Callable[[], Tokenizer]) -> None:
        self.name = name
        self.choice: TokenizerChoice | None = None
        from_parent, to_child = os.pipe()  # (read end, write end)
        from_child, to_parent = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (from_parent, to_child, from_child, to_parent):
                os.close(fd)
            raise
        if pid == 0:  # the child never returns: os._exit skips the parent's finally blocks and atexit work
            code = 1
            try:
                os.close(to_child)
                os.close(from_child)
                _serve(build, os.fdopen(from_parent, "rb"), os.fdopen(to_parent, "wb"))
                code = 0
            finally:
                os._exit(code)
        os.close(from_parent)
        os.close(to_parent)
        self._pid = pid
        self._requests: BinaryIO = os.fdopen(to_child, "wb")
        self._answers: BinaryIO = os.fdopen(from_child, "rb")

    def _ask(self, op: str, arg: Any) -> Any:
        import pickle

        from .tokens import EncodingError

        try:
            pickle.dump((op, arg), self._requests, pickle.HIGHEST_PROTOCOL)
            self._requests.flush()
            ok, value = pickle.load(self._answers)
        except (OSError, EOFError, ValueError) as e:
            raise EncodingError(f"the process building {self.name} ended early ({e!r})") from e
        if not ok:
            raise EncodingError(value)
        return value

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._ask("encode", text)
        return ids

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        data: bytes = self._ask("decode_bytes", list(tokens))
        return data

    def cut(self, text: str, keep_tokens: int) -> str:
        """The child's tokenizer cuts: by its offsets where it has them, else by decoding, as in process."""
        head: str = self._ask("cut", (text, keep_tokens))
        return head

    def close(self) -> None:
        """End the child now: killing it is instant, where waiting could mean waiting for the build."""
        if self._pid == 0:
            return
        for f in (self._requests, self._answers):
            with suppress(OSError):
                f.close()
        with suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        os.waitpid(self._pid, 0)
        self._pid = 0

    def __enter__(self) -> ForkedTokenizer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _serve(build: Callable[[], Tokenizer], requests: BinaryIO, answers: BinaryIO) -> None:
    """The child: build the tokenizer, then answer each request until the parent closes the pipe.
    A failed build is answered, request by request, with its message."""
    import pickle

    from .tokens import cut_text

    failure: str | None = None
    try:
        tokenizer = build()
        tokenizer.encode("")  # builds a lazily loaded tokenizer now, before the first question arrives
        ops: dict[str, Callable[[Any], Any]] = {
            "encode": tokenizer.encode, "decode_bytes": tokenizer.decode_bytes,
            "cut": lambda arg: cut_text(tokenizer, *arg)}
    except Exception as e:  # any failure goes back to the parent as data
        failure = str(e) or repr(e)
    while True:
        try:
            op, arg = pickle.load(requests)
        except EOFError:
            return
        answer: tuple[bool, Any]
        if failure is not None:
            answer = (False, failure)
        else:
            try:
                answer = (True, ops[op](arg))
            except Exception as e:
                answer = (False, f"{op}: {e!r}")
        pickle.dump(answer, answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()
