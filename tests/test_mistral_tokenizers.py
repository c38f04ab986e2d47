"""Issue 15, `tagengine[mistral]` (K-14, K-15): Mistral's tekken and SentencePiece files, shipped by
mistral-common and read without importing it, count what mistral-common's own tokenizers count."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, examples
from tagengine._internal.cli import run
from tagengine._internal.prompt import registry
from tagengine._internal.prompt.registry import MISTRAL_CHAT, MISTRAL_V1_CHAT, choose
from tagengine._internal.prompt.tokens import cut_text

TEXTS = ["Wardens judge the dark by lantern light and count every grave twice.",
         "Der Wächter zählt jedes Grab zweimal, bevor die Nacht beginnt. Größe, Übermaß, ß.",
         "番人は墓を二度数え、夜明けまで灯りを守る。カタカナとひらがな、漢字。",
         "def spend(pool, amount):\n    return pool - amount  # rolls\n\n\tif x:\n\t\tpass\n",
         "emoji: 🎲🙂👩‍👩‍👧 🇫🇷 and ✨✨✨",
         "long runs:          \n\n\n\n        end\t\t\t\t   .",
         " leading space, trailing space ",
         ""]

# (model name, file kind) per mistral-common's MODEL_NAME_TO_TOKENIZER_CLS (mistral_common/tokens/tokenizers/mistral.py)
MODELS = [("ministral-8b-2410", "tekken_240718.json"), ("open-mistral-nemo-2407", "tekken_240718.json"),
          ("mistral-small-2409", "tekken_240718.json"), ("pixtral-12b-2409", "tekken_240911.json"),
          ("mistral-large", "mistral_instruct_tokenizer_241114.model.v7"),
          ("mistral-large-2411", "mistral_instruct_tokenizer_241114.model.v7"),
          ("pixtral-large-2411", "mistral_instruct_tokenizer_241114.model.v7m1"),
          ("mistral-large-2407", "mistral_instruct_tokenizer_240323.model.v3"),
          ("codestral-2405", "mistral_instruct_tokenizer_240323.model.v3"),
          ("open-mixtral-8x22b-2404", "mistral_instruct_tokenizer_240323.model.v3"),
          ("mistralai/Mistral-7B-Instruct-v0.3", "mistral_instruct_tokenizer_240323.model.v3"),
          ("mistral-small-2402", "mistral_instruct_tokenizer_240216.model.v2"),
          ("mistral-medium-2312", "tokenizer.model.v1"), ("mistralai/Mixtral-8x7B-Instruct-v0.1", "tokenizer.model.v1")]


def own_tokenizer(path: str):  # mistral-common's own, imported here only
    if path.endswith(".json"):
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        return Tekkenizer.from_file(path)
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

    return SentencePieceTokenizer(path)


@pytest.mark.parametrize(("model", "file"), MODELS)
def test_counts_equal_mistral_commons_own(model, file):
    pytest.importorskip("mistral_common")
    chosen = choose(model)
    assert (chosen.exact, chosen.margin, chosen.family) == (True, 0.0, "mistral")
    assert chosen.name.endswith("mistral_common/data/" + file)
    assert chosen.chat == (MISTRAL_V1_CHAT if file.endswith(".v1") else MISTRAL_CHAT)
    ours, own = chosen.build(), own_tokenizer(chosen.name)
    for text in TEXTS:
        assert ours.encode(text) == own.encode(text, bos=False, eos=False), text


def test_later_mistral_models_without_a_shipped_file_are_estimated():
    for model in ("magistral-medium-2506", "devstral-small-2505", "mistral-small-2503", "mistral-large-2512"):
        chosen = choose(model)
        assert (chosen.exact, chosen.name, chosen.family) == (False, "o200k_base", "mistral"), model


@pytest.mark.parametrize("model", ["ministral-8b-2410", "mistral-large-2407"])
@settings(max_examples=examples(60), deadline=None)
@given(text=st.text(max_size=120), keep=st.integers(-1, 60))
def test_mistral_cuts_never_split_a_character_and_fit(model, text, keep):
    pytest.importorskip("mistral_common")
    tok = choose(model).build()
    cut = cut_text(tok, text, keep)
    assert text.startswith(cut)  # whole characters of the text, nothing else
    assert len(tok.encode(cut)) <= max(0, keep) or cut == text
    if keep >= len(tok.encode(text)):
        assert cut == text


def preview(args: list[str]) -> tuple[int, dict]:
    out = io.StringIO()
    code = run(["preview", str(SAMPLES / "rulesets" / "gravewatch.json"),
                str(SAMPLES / "states" / "gravewatch.json"), *args, "--json"], out, io.StringIO())
    return code, json.loads(out.getvalue())["report"]


def test_preview_mistral_large_is_exact_with_the_extra_and_an_estimate_without(monkeypatch):
    pytest.importorskip("mistral_common")
    code, rep = preview(["--model", "mistral-large"])
    assert code == 0 and rep["exact"] is True and rep["margin"] == 0.0
    assert rep["tokenizer"].endswith("mistral_instruct_tokenizer_241114.model.v7")
    monkeypatch.setattr(registry, "package_dir", lambda name: None)  # as if the extra were not installed
    registry._choose.cache_clear()
    try:
        code, rep = preview(["--model", "mistral-large"])
    finally:
        registry._choose.cache_clear()
    assert code == 0 and (rep["tokenizer"], rep["exact"]) == ("o200k_base", False) and rep["margin"] > 0
