"""llama.cpp's own server for end-to-end tests of the reply's grammar: `llama_cpp.server` from llama-cpp-python,
built once from its sdist by `./dev test` into a venv in the cache folder (`ensure_llama_cpp`), serving a tiny
model with random weights that the tests write themselves (tests/llama_model.py, GR-13). No weights are
downloaded.

`missing()` says why the server cannot run here (no build, and the build's error kept beside it), or None;
`write_model(path)` writes the model with the venv's `gguf`; `llama_server(model, tmp)` is the server on a free
loopback port, stopped (its whole process group) whatever happens; `complete` asks it for a plain completion.

What the kit relies on in llama-cpp-python 0.3.36 (llama_cpp/server/app.py, types.py; llama_cpp/llama.py):
- `/v1/completions` and `/v1/chat/completions` take a GBNF `grammar` field (parsed by `LlamaGrammar.from_string`)
  and a `seed`; the grammar is the first sampler of the chain, before top-k and min-p, so a token it forbids is
  never drawn and the samplers after it only choose among the tokens it allows.
- Without `--chat_format` the chat template comes from the model file (`tokenizer.chat_template`).
- The server answers `GET /v1/models` once the model is loaded.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from st_kit import (  # the same process handling as SillyTavern's kit
    cached_install,
    free_port,
    install_error,
    log_tail,
    stop_group,
    until_answers,
)

LLAMA_CPP_VERSION = "0.3.36"  # the same pin as LLAMA_CPP_VERSION in ./dev
START_TIMEOUT = 120.0  # seconds: the tiny model loads in about a second; a busy machine's import of the server ~10 s
N_CTX = 16384  # tokens the server keeps for a request: a byte a token, so about 16 KB of prompt and reply
MODEL_WRITER = Path(__file__).with_name("llama_model.py")


def install_dir() -> Path:
    """The venv `./dev test` builds llama-cpp-python into (it exports TAGENGINE_LLAMA_CPP)."""
    return cached_install("TAGENGINE_LLAMA_CPP", f"llama-cpp-python-{LLAMA_CPP_VERSION}")


def python() -> Path:
    return install_dir() / "bin" / "python"


@functools.cache
def missing() -> str | None:
    """Why llama.cpp's server cannot run here, or None (asked once a session: the import takes a second)."""
    if not python().exists():
        why = install_error(install_dir())
        return (f"llama-cpp-python {LLAMA_CPP_VERSION} is not built at {install_dir()} (`./dev test` builds it from "
                f"its sdist on PyPI, once).{why}")
    try:
        got = subprocess.run([str(python()), "-c", "import llama_cpp.server, gguf, numpy"], capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return f"the llama-cpp-python venv at {install_dir()} does not run: {e}"
    if got.returncode != 0:
        return f"the llama-cpp-python venv at {install_dir()} cannot import its server: {got.stderr.strip()[-600:]}"
    return None


def write_model(path: Path, seed: int = 0) -> Path:
    """The tiny model (tests/llama_model.py) written at `path` by the venv's Python, which has `gguf`."""
    got = subprocess.run([str(python()), str(MODEL_WRITER), str(path), str(seed)], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert got.returncode == 0, f"writing the model failed: {got.stderr[-2000:]}"
    return path


@dataclass
class LlamaServer:
    url: str  # http://127.0.0.1:PORT, without /v1
    log: Path  # what it printed
    proc: subprocess.Popen[bytes]

    def tail(self, n: int = 40) -> str:
        return log_tail(self.log, n)


def _start(model: Path, log: Path, n_ctx: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # One thread: the model is tiny, and the machine's two cores are shared with the test and `tagengine serve`.
    cmd = [str(python()), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", "1", "--n_threads_batch", "1"]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=log.parent)
    return proc, f"http://127.0.0.1:{port}"


@contextmanager
def llama_server(model: Path, tmp: Path, n_ctx: int = N_CTX) -> Iterator[LlamaServer]:
    """`python -m llama_cpp.server` serving `model` on a free loopback port, its log under `tmp`; skips without
    a build."""
    why = missing()
    if why is not None:
        pytest.skip(why)
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "llama-server.log"
    deadline = time.monotonic() + START_TIMEOUT
    proc, url = _start(model, log, n_ctx)
    try:
        up = until_answers(proc, f"{url}/v1/models", deadline)
        if not up and proc.poll() is not None and b"address already in use" in log.read_bytes().lower():
            stop_group(proc)  # the free port was taken between our probe and its bind: one more try
            proc, url = _start(model, log, n_ctx)
            up = until_answers(proc, f"{url}/v1/models", deadline)
        if not up:
            raise AssertionError(f"llama.cpp's server did not start within {START_TIMEOUT:.0f} s (exit code "
                                 f"{proc.poll()}); its log:\n{log_tail(log)}")
        yield LlamaServer(url, log, proc)
    finally:
        stop_group(proc)


def complete(server: LlamaServer, prompt: str, grammar: str | None = None, *, seed: int = 0, max_tokens: int = 64,
             **extra: Any) -> dict[str, Any]:
    """POST /v1/completions (not streamed): the answer's JSON. Temperature 1: the model's own distribution."""
    body: dict[str, Any] = {"prompt": prompt, "max_tokens": max_tokens, "seed": seed, "temperature": 1.0, **extra}
    if grammar is not None:
        body["grammar"] = grammar
    got = httpx.post(f"{server.url}/v1/completions", json=body, timeout=300.0)
    assert got.status_code == 200, f"{got.status_code} {got.text[:500]}\n{server.tail()}"
    answer: dict[str, Any] = got.json()
    return answer


if __name__ == "__main__":  # a quick look by hand: `python tests/llama_kit.py [PROMPT]`
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        m = write_model(Path(d) / "tiny.gguf")
        with llama_server(m, Path(d)) as s:
            for i in range(3):
                print(repr(complete(s, sys.argv[1] if len(sys.argv) > 1 else "", seed=i)["choices"][0]["text"]))
