"""A tiny GGUF language model with random weights, written for llama.cpp's server (tests/llama_kit.py; GR-13).

Run with the Python of the llama-cpp-python cache venv (it has `gguf` and `numpy`; the project's own venv has
neither): `python tests/llama_model.py OUT.gguf [SEED]`. No weights are downloaded, ever: every number is made
here from the seed, so the same seed writes the same file.

The shape (GR-13):
- llama architecture, 2 layers, width 320, 4 heads of 80, feed-forward 640, context 32768: what llama.cpp loads
  with every code path of a real model (attention, RoPE, RMSNorm, SwiGLU), about 2.2 M weights (8.9 MB as F32),
  so a token's arithmetic costs microseconds and a reply's time is llama.cpp's per-token overhead and the grammar.
- A byte-level vocabulary: the 256 bytes as GPT-2's byte-to-unicode tokens (llama.cpp's `gpt2` tokenizer), so
  any text, and any bytes, tokenizes and can be generated; 14 pieces of the tag syntax as tokens of their own
  (WORDS), as a real tokenizer has; `<s>` and `</s>`; and one merge (two NUL bytes, a pair no text holds) because
  llama.cpp will not load a BPE vocabulary without a merge list and GGUF has no empty array.
- Random weights with a bigram prior: the one-hot of the current token runs down the residual stream, and the
  output matrix holds, besides its random part, the log-probabilities of the next token counted from a few lines
  of tagged narration. So the model babbles in tag shapes (`[sheet: who="Cola ick. w,`): left alone it writes
  malformed tags, which is the contrast the grammar is measured against; pure random weights write uniform bytes
  that almost never open a tag, and would prove nothing. The random parts (layers, noise on the embeddings and
  the output) make each next token depend on the context, as a model's does.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import gguf
import numpy as np

LAYERS, WIDTH, HEADS, FEED_FORWARD, CONTEXT = 2, 320, 4, 640, 32768
BYTES = 256
# Pieces of the tag syntax as tokens of their own, as a real tokenizer has `[`, `clock` and ` name="` among its
# tokens: a bigram over bytes alone cannot spell `[clock:`, so it would almost never open a tag.
WORDS = ("[clock:", "[sheet:", "[check:", ' name="', ' who="', ' op="', ' tick="', ' size="', ' pool="',
         ' amount="', ' skill="', ' condition="', ' to="', '"]')
MERGED = BYTES  # then the words, then `<s>` and `</s>`
BOS = BYTES + 1 + len(WORDS)
EOS, VOCAB = BOS + 1, BOS + 2
# The chat template: each message on its own lines after its role, then the assistant's turn.
CHAT_TEMPLATE = ("{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
                 "<|assistant|>\n")
# What the bigram prior is counted from: narration with tags in the shapes a Game Master's reply has. A reply
# ends (`</s>`) after a line break as often as the corpus's lines do.
CORPUS = """\
The guard turns the corner. [clock: name="Alarm" tick="1"] Lurk slips past him.
Cutter takes the blow. [sheet: who="Cutter" op="spend" pool="stress" amount="2"] The door gives way.
[clock: name="Patrol returns" size="4"] Somewhere below, boots on stone.
Lurk studies the lock. [check: who="Lurk" skill="Prowl"] It clicks open.
[sheet: who="party" op="restore" pool="coin" amount="1"] A purse, heavier than it looks.
The bells ring out. [clock: name="Alarm" tick="2"] [clock: name="Patrol returns" tick="1"]
[sheet: who="Lurk" op="condition" condition="Wanted" to="on"] Posters with your face on them.
Cutter leans in. [check: who="Cutter" skill="Command"] The clerk talks.
[sheet: who="Cutter" op="restore" pool="stress" amount="1"] A drink, a laugh, a quiet hour.
[clock: name="Next score" size="8"] The job is set for tomorrow night.
The night is quiet. Nothing moves in the street.
"""
SCALE = float(np.sqrt(WIDTH))  # the one-hot's size on the residual stream: RMSNorm leaves it whole


def gpt2_bytes() -> list[str]:
    """GPT-2's byte-to-unicode table: byte b's token text, by byte value (printable bytes stand for themselves)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(BYTES):
        if b not in chars:
            chars[b] = chr(BYTES + extra)
            extra += 1
    return [chars[b] for b in range(BYTES)]


def tokens(text: str) -> list[int]:
    """`text` as the model's tokens, a word wherever one starts (the longest), else a byte. Only for counting the
    prior: llama.cpp tokenizes a prompt into bytes (the words have no merges), and the model may write either."""
    data, out, i = text.encode("utf-8"), [], 0
    words = sorted(((w.encode("utf-8"), BYTES + 1 + n) for n, w in enumerate(WORDS)), key=lambda p: -len(p[0]))
    while i < len(data):
        hit = next(((w, t) for w, t in words if data.startswith(w, i)), None)
        out.append(hit[1] if hit else data[i])
        i += len(hit[0]) if hit else 1
    return out


def bigram_logits() -> np.ndarray:
    """log P(next | current) over the vocabulary, from CORPUS with a little smoothing so no token is impossible
    (the grammar must always find some allowed token with a finite logit), and a unigram's worth of counts in each
    row so that after a byte the corpus never has the model goes back to its text. Row: current token; column:
    next."""
    counts = np.full((VOCAB, VOCAB), 0.002)
    for line in CORPUS.splitlines(keepends=True):
        seq = [BOS, *tokens(line), EOS] if line.endswith("\n") else [BOS, *tokens(line)]
        for a, b in itertools.pairwise(seq):
            counts[a, b] += 1.0
    counts += counts.sum(axis=0) / counts.sum()  # a byte never seen (a random one) is followed as any byte is
    counts[:, MERGED] = 1e-6  # never writes the merge's two NUL bytes
    counts[:, BOS] = 1e-6
    return np.log(counts / counts.sum(axis=1, keepdims=True))


def weights(seed: int) -> dict[str, np.ndarray]:
    """Every tensor, as numpy arrays shaped (rows, columns) = (out, in), as llama.cpp's converter writes them."""
    rng = np.random.default_rng(seed)

    def rand(*shape: int, std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    embed = rand(VOCAB, WIDTH, std=0.01)
    embed[np.arange(VOCAB), np.arange(VOCAB)] += SCALE  # token t is (mostly) the t-th axis
    output = rand(VOCAB, WIDTH, std=0.03)
    output[:, :VOCAB] += (bigram_logits().T / SCALE).astype(np.float32)  # logits ~ the bigram row of the token
    kv = WIDTH  # as many key/value heads as heads
    tensors = {"token_embd.weight": embed, "output_norm.weight": np.ones(WIDTH, np.float32),
               "output.weight": output}
    for i in range(LAYERS):
        tensors |= {
            f"blk.{i}.attn_norm.weight": np.ones(WIDTH, np.float32),
            f"blk.{i}.attn_q.weight": rand(WIDTH, WIDTH, std=0.02),
            f"blk.{i}.attn_k.weight": rand(kv, WIDTH, std=0.02),
            f"blk.{i}.attn_v.weight": rand(kv, WIDTH, std=0.02),
            f"blk.{i}.attn_output.weight": rand(WIDTH, WIDTH, std=0.02),
            f"blk.{i}.ffn_norm.weight": np.ones(WIDTH, np.float32),
            f"blk.{i}.ffn_gate.weight": rand(FEED_FORWARD, WIDTH, std=0.02),
            f"blk.{i}.ffn_up.weight": rand(FEED_FORWARD, WIDTH, std=0.02),
            f"blk.{i}.ffn_down.weight": rand(WIDTH, FEED_FORWARD, std=0.02),
        }
    return tensors


def write(out: Path, seed: int = 0) -> None:
    """The model file at `out`, written whole under a temporary name and then renamed."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name("tagengine-test-tiny")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(WIDTH)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FEED_FORWARD)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_rope_dimension_count(WIDTH // HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(VOCAB)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    nul = gpt2_bytes()[0]
    spelt = ["".join(gpt2_bytes()[b] for b in word.encode("utf-8")) for word in WORDS]  # a space is `Ġ`
    w.add_token_list([*gpt2_bytes(), nul + nul, *spelt, "<s>", "</s>"])
    w.add_token_types([gguf.TokenType.NORMAL] * BOS + [gguf.TokenType.CONTROL] * 2)
    w.add_token_merges([f"{nul} {nul}"])
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    for name, array in weights(seed).items():
        w.add_tensor(name, array)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
    finally:
        w.close()
    os.replace(tmp, out)


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
