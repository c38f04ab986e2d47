"""Mistral's SentencePiece tokenizer files (v1, v2, v3, v7: Mistral 7B, Mixtral, Mistral Large 2407/2411,
Codestral 2405...), read with `sentencepiece` without importing mistral-common (K-15).

mistral-common ships them as `mistral_common/data/*.model.v*` and its `SentencePieceTokenizer.encode(text,
bos=False, eos=False)` is `SentencePieceProcessor(model_file=...).encode(text)`
(mistral_common/tokens/tokenizers/sentencepiece.py); this module gives the same ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..records import frozen
from .tokens import EncodingError


@cache
def processor(path: str) -> Any:
    """A `sentencepiece.SentencePieceProcessor` over the file, once per process per path."""
    if not Path(path).is_file():
        raise EncodingError(f"tokenizer file {path!r} does not exist or is not a file")
    try:
        import sentencepiece  # here, not at the top: a cold start stays light
    except ImportError as e:
        raise EncodingError(f"reading {path!r} needs sentencepiece: pip install 'tagengine[mistral]' ({e})") from e
    try:
        return sentencepiece.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as e:
        raise EncodingError(f"{path!r} is not a SentencePiece model ({e})") from e


@frozen
class SentencePieceTokenizer:
    """A Tokenizer over a SentencePiece `.model` file: the model's ids without BOS/EOS (the chat format
    counts those)."""

    path: str

    @property
    def name(self) -> str:
        return self.path

    def encode(self, text: str) -> list[int]:
        ids: list[int] = processor(self.path).encode(text)
        return ids

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        text: str = processor(self.path).decode(list(tokens))
        return text.encode("utf-8", errors="surrogatepass")

    def cut(self, text: str, keep_tokens: int) -> str:
        """The longest prefix of `text`, whole characters, that counts at most `keep_tokens` (a binary
        search over character positions: SentencePiece's decode may normalise, so the text itself is cut)."""
        if keep_tokens <= 0:
            return ""
        if len(self.encode(text)) <= keep_tokens:
            return text
        lo, hi = 0, len(text)  # text[:lo] fits, text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if len(self.encode(text[:mid])) <= keep_tokens:
                lo = mid
            else:
                hi = mid
        return text[:lo]
