"""`tagengine` command line: `run(argv) -> int`, so tests call it directly; `main()` is the console script.

Exit 0 ok; 1 bad input, a bad replay line, a file or stream that cannot be read or written; 2 usage
(decisions P-7, F-1..F-14). Every file written goes through `files.atomic_writer`.

One module per group of commands (`ruleset.py`: check, schema; `state.py`; `apply.py`: apply, narrate;
`sheet.py`: sheet, roll; `preview.py`; `replay.py`; `serve.py`: campaign, serve; `st.py`; `demo.py`), each
command an `add_<command>(parser)` that declares its arguments and a `cmd_<command>(args, out, err) -> int`
that runs it; `arguments.py` lists them in `--help`'s order and imports only the module of the command named.
A command imports the engine when it runs, so `--help`, `--version` and each command load only what they
use (CL-1..CL-5).
"""

from __future__ import annotations

import gc
import io
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, TextIO, cast

from ..errors import ProblemsError
from ..files import NamedStream, TooLarge
from .conventions import Usage

if TYPE_CHECKING:
    from argparse import Namespace


def run(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command; returns its exit code (0 ok, 1 bad input, 2 usage)."""
    return _run(argv, out, err, one_shot=False)


def _run(argv: Sequence[str] | None, out: TextIO | None, err: TextIO | None, *, one_shot: bool) -> int:
    """`one_shot`: this process runs this one command and exits (`main`), so a command that says it `forks`
    may build its tokenizer in a child (P-6, A-9, CL-4), and only a command that says it is `short_lived` keeps
    the cyclic collector off (PF-18)."""
    from .arguments import arg_parser

    # write errors name the stream (F-12); NamedStream has every method the commands use of a TextIO
    out = cast(TextIO, NamedStream(out or sys.stdout or _ClosedStream(), "<stdout>"))
    err = cast(TextIO, NamedStream(err or sys.stderr or io.StringIO(), "<stderr>"))
    words = list(argv) if argv is not None else sys.argv[1:]
    try:
        args = arg_parser(words).parse_args(words)
    except Usage as e:
        err.write(f"{e}\n")
        return 2
    except SystemExit as e:  # --help and --version
        return int(e.code or 0)
    if args.version:
        from ..version import version_line

        out.write(version_line() + "\n")
        return 0
    if args.command is None:
        err.write("tagengine: a command is required (see tagengine --help)\n")
        return 2
    if one_shot and not getattr(args, "short_lived", False):
        gc.enable()  # `main` turned it off for the start; a long command (serve, replay) frees its cycles
    if one_shot and getattr(args, "forks", False):
        from ..prompt import forked

        forked.allow()
    func: Callable[[Namespace, TextIO, TextIO], int] = args.func
    try:
        return func(args, out, err)
    except Usage as e:
        err.write(f"{e}\n")
        return 2
    except ProblemsError as e:
        for p in e.problems:
            err.write(f"{e.source or 'input'}: {p}\n")
        return 1
    except TooLarge as e:
        return _say(err, f"tagengine: {e}")
    except BrokenPipeError:  # the reader stopped early (`tagengine preview ... | head`): nothing to say
        return 1
    except OSError as e:
        return _say(err, f"tagengine: {e.filename}: {e.strerror or e}" if e.filename else f"tagengine: {e}")


def _say(err: TextIO, message: str) -> int:
    """Exit 1 with a message; a stderr that cannot take it does not turn the exit into a traceback."""
    with suppress(OSError):
        err.write(message + "\n")
    return 1


class _ClosedStream(io.TextIOBase):
    """Standard output when the command was started with it closed (`>&-`): writing is an error (F-12)."""

    def write(self, s: str) -> int:
        raise OSError(9, "standard output is closed", "<stdout>")

    def isatty(self) -> bool:
        return False


def _buffered(stream: TextIO | None, *, line: bool = False) -> TextIO | None:
    """Under PYTHONUNBUFFERED (common in containers) a standard stream writes straight to the file, and
    Python's text layer drops the rest of a short write: output cut short at a closed pipe or a full
    disk, and exit 0. A buffered writer finishes every write or raises (F-12)."""
    raw = getattr(stream, "buffer", None)
    if stream is None or not isinstance(raw, io.RawIOBase):
        return stream
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors="surrogateescape",
                            line_buffering=line)


def main() -> None:
    # A short-lived command (apply, check, ...) ends before its cycles matter: without the collector its
    # imports and its work skip 60-70 collections (PF-11, PF-18). `_run` turns it on again for the others.
    gc.disable()
    for fd, stream in ((0, sys.stdin), (1, sys.stdout), (2, sys.stderr)):
        if stream is None:  # started with the descriptor closed: hold it with /dev/null so no file we
            with suppress(OSError):  # open lands on it and a stray write to it goes nowhere (F-12)
                os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="surrogateescape")
    sys.stdout, sys.stderr = _buffered(sys.stdout), _buffered(sys.stderr, line=True)
    code = _run(None, None, None, one_shot=True)  # this process runs one command and exits
    for name, stream in (("<stdout>", sys.stdout), ("<stderr>", sys.stderr)):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader stopped early (P-7): exit 1, nothing to say
            code = code or 1
        except OSError as e:  # a full disk: the output is cut short, so say so (F-12)
            code = code or 1
            if name == "<stdout>" and sys.stderr is not None:
                with suppress(OSError):
                    sys.stderr.write(f"tagengine: {name}: {e.strerror or e}\n")
                    sys.stderr.flush()
    # Skip the interpreter's teardown (decision P-7): freeing every object takes 0.1 s, and 0.1-0.2 s
    # more where an encoding was built in this process. Every file is closed and every worker joined
    # by now, and nothing registers atexit work.
    os._exit(code)
