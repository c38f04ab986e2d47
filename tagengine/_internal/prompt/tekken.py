"""Mistral's tekken tokenizer files, read without importing mistral-common (K-14).

A tekken file (`mistral_common/data/tekken_*.json`, shipped by the optional `tagengine[mistral]` extra) is a
tiktoken-style byte-level BPE: `vocab` lists `{rank, token_bytes (base64), token_str}` in rank order,
`config` gives the pre-tokenizer `pattern`, `default_vocab_size` and `default_num_special_tokens`. As
mistral-common's `Tekkenizer.from_file` reads it (mistral_common/tokens/tokenizers/tekken.py): the first
`default_vocab_size - default_num_special_tokens` vocab entries are the mergeable ranks, and a text's ids
are tiktoken's ids plus `default_num_special_tokens` (the special tokens take the ids below). The chat
format counts the special tokens a template adds, so `encode` returns none.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..records import frozen
from .tokens import EncodingError

if TYPE_CHECKING:
    import tiktoken


@cache
def tekken_encoding(path: str) -> tuple[tiktoken.Encoding, int]:
    """The tiktoken encoding a tekken file defines and its number of special tokens, once per process."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        config = doc["config"]
        specials = int(config["default_num_special_tokens"])
        inner = int(config["default_vocab_size"]) - specials
        ranks = {base64.b64decode(t["token_bytes"]): int(t["rank"]) for t in doc["vocab"][:inner]}
        pattern = str(config["pattern"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EncodingError(f"{path!r} is not a readable tekken tokenizer file ({e})") from e
    import tiktoken  # here, not at the top: a cold start stays light

    name = Path(path).stem
    return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}), specials


@frozen
class TekkenTokenizer:
    """A Tokenizer over a tekken file: the ids mistral-common's `Tekkenizer.encode(text, bos=False,
    eos=False)` gives."""

    path: str

    @property
    def name(self) -> str:
        return self.path

    def encode(self, text: str) -> list[int]:
        enc, specials = tekken_encoding(self.path)
        return [t + specials for t in enc.encode(text, disallowed_special=())]

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        enc, specials = tekken_encoding(self.path)
        return enc.decode_bytes([t - specials for t in tokens if t >= specials])
