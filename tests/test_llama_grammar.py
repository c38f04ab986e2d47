"""The reply's grammar on a real local model server: llama.cpp's (llama-cpp-python's `llama_cpp.server`, built once
into the cache by `./dev test`, tests/llama_kit.py) serving a tiny model with random weights that the test writes
itself (tests/llama_model.py, GR-13), first alone, then behind `tagengine serve`.

The model babbles in tag shapes (a bigram prior over bytes and the tag syntax's pieces under its random weights), so
without a grammar it writes malformed tags; with the reply's GBNF grammar sent by `tagengine serve --grammar gbnf`,
none (GR-15). What the replies held and their time are printed (`-s`) and written in docs/testing.md.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from llama_kit import LlamaServer, complete, llama_server, missing, write_model
from serve_kit import Served

from conftest import SAMPLES
from tagengine._internal.server.memory.campaigns import Campaigns, new_campaign
from tagengine._internal.server.memory.chain import Chain
from tagengine._internal.server.memory.store import Store

pytestmark = pytest.mark.slow  # each test starts llama.cpp's server, and the last two `tagengine serve` too

# A hand-written GBNF grammar, the shape of one clock tag (llama.cpp's GBNF: literals in double quotes).
CLOCK_GRAMMAR = r'root ::= "[clock: name=\"" [a-z]+ "\" tick=\"1\"]"'
CLOCK_TAG = re.compile(r'\[clock: name="[a-z]+" tick="1"\]')
CHATS, TURNS = 5, 10  # 50 replies: five chats of ten turns, each turn on the state the ones before it left
MAX_TOKENS = 400  # a byte or a piece of tag syntax each; the model ends a reply after a line, ~80 bytes (GR-13)
CONTEXT = 3000  # `tagengine serve --context`, in o200k tokens: at most ~4.5 bytes each fits llama's 16384
USER = ["The crew moves in.", "Cutter tries the door.", "Lurk climbs.", "We run.", "What do we see?"]
RECEIPT = re.compile(r'\[[^\[\]]*?\sresult="([a-z-]+)"[^\[\]]*\]')  # a tag the server answered, up to its `]`
REASON = re.compile(r'\sreason="([^"]*)"')  # the party's: "Cutter: insufficient; Lurk: insufficient"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    why = missing()
    if why is not None:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("llama")
    with llama_server(write_model(tmp / "tiny.gguf"), tmp) as server:
        yield server


def test_llama_follows_a_hand_written_gbnf_grammar(llama: LlamaServer) -> None:
    """The server, the model and its byte vocabulary work together: every completion under the grammar is the one
    tag it allows, whole, and the model ends it (`</s>`, the only token the finished grammar allows)."""
    for seed in range(5):
        got = complete(llama, "The guard turns the corner. ", CLOCK_GRAMMAR, seed=seed, max_tokens=200)
        text = got["choices"][0]["text"]
        assert CLOCK_TAG.fullmatch(text), (seed, text)
        assert got["choices"][0]["finish_reason"] == "stop"


def test_without_the_grammar_the_model_writes_bytes_of_its_own(llama: LlamaServer) -> None:
    """The contrast: the same requests with no grammar are not that tag; the seed makes each one repeatable."""
    texts = [complete(llama, "The guard turns the corner. ", seed=seed, max_tokens=200)["choices"][0]["text"]
             for seed in range(5)]
    print("without a grammar:", *map(repr, texts), sep="\n  ")
    assert not any(CLOCK_TAG.fullmatch(t) for t in texts)
    assert len(set(texts)) == 5  # random: five seeds, five texts
    again = complete(llama, "The guard turns the corner. ", seed=0, max_tokens=200)["choices"][0]["text"]
    assert again == texts[0]


def receipts(text: str) -> list[tuple[str, str]]:
    """(result, reason or "") of each receipt the server wrote into a reply."""
    return [(m.group(1), r.group(1) if (r := REASON.search(m.group())) else "") for m in RECEIPT.finditer(text)]


def play(url: str, chats: int, turns: int) -> tuple[list[tuple[str, str]], list[list[dict[str, str]]], float]:
    """`chats` chats of `turns` turns through `tagengine serve`, each reply kept in its chat's history as a chat
    app keeps it: every (reply, finish_reason), every chat's messages, and the seconds it took."""
    replies, histories = [], []
    start = time.monotonic()
    with httpx.Client(base_url=url, timeout=300.0) as c:
        for chat in range(chats):
            messages: list[dict[str, str]] = []
            for turn in range(turns):
                messages.append({"role": "user", "content": USER[(chat + turn) % len(USER)]})
                body: dict[str, Any] = {"model": "tiny", "messages": messages, "max_tokens": MAX_TOKENS,
                                        "temperature": 1.0, "seed": 1000 * chat + turn}
                got = c.post("/v1/chat/completions", json=body)
                assert got.status_code == 200, got.text[:2000]
                choice = got.json()["choices"][0]
                replies.append((choice["message"]["content"], choice["finish_reason"]))
                messages.append({"role": "assistant", "content": choice["message"]["content"]})
            histories.append(messages)
    return replies, histories, time.monotonic() - start


def served_turns(llama: LlamaServer, tmp: Path, *grammar: str) -> tuple[list[tuple[str, str]], float]:
    """Fifty replies through `tagengine serve ... --campaign heist` in front of the model; checks that the state the
    server keeps for each chat is the one its receipts say (replayed, they give the same receipts)."""
    data = tmp / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="s")
    store.close()
    with Served(data, f"{llama.url}/v1", "--campaign", "heist", "--context", str(CONTEXT), *grammar) as srv:
        replies, histories, took = play(srv.url, CHATS, TURNS)
    assert "Traceback" not in srv.log, srv.log[-3000:]
    store = Store(data)
    try:
        campaign = Campaigns(store).get("heist")
        for messages in histories:
            kept = Chain(store).state_of(campaign, [m for m in messages if m["role"] == "assistant"])
            assert kept.consistent
    finally:
        store.close()
    return replies, took


def tally(replies: list[tuple[str, str]]) -> tuple[Counter[str], Counter[str]]:
    """How the replies ended, and their receipts: `ok` or each refusal's reason."""
    ends = Counter(finish for _, finish in replies)
    seen = Counter(reason or result for text, _ in replies for result, reason in receipts(text))
    return ends, seen


def test_fifty_replies_without_the_grammar_hold_malformed_tags(llama: LlamaServer, tmp_path: Path) -> None:
    """The contrast: the model alone writes tag-shaped text and many of its tags are malformed, so the grammar's
    test below proves something."""
    replies, took = served_turns(llama, tmp_path)
    ends, seen = tally(replies)
    print(f"\nwithout the grammar: {len(replies)} replies in {took:.1f} s; ends {dict(ends)}; receipts {dict(seen)}")
    assert len(replies) == CHATS * TURNS
    assert seen["malformed"] >= 3  # 11 measured: a margin for a prompt the engine words otherwise one day


def test_fifty_replies_under_the_gbnf_grammar_hold_no_malformed_tag(llama: LlamaServer, tmp_path: Path) -> None:
    """`tagengine serve --grammar gbnf` sends each turn's grammar in llama.cpp's `grammar` field: fifty replies of
    the same model, and not one malformed tag among their receipts (a reply the token limit cuts may end inside a
    tag; MAX_TOKENS leaves room for the model to end each reply itself)."""
    replies, took = served_turns(llama, tmp_path, "--grammar", "gbnf")
    ends, seen = tally(replies)
    print(f"\nunder the grammar: {len(replies)} replies in {took:.1f} s; ends {dict(ends)}; receipts {dict(seen)}")
    assert len(replies) == CHATS * TURNS
    assert ends["length"] == 0, [t for t, f in replies if f == "length"]
    assert seen["malformed"] == 0, [t for t, _ in replies if 'reason="malformed"' in t]
    assert sum(seen.values()) >= 10  # the model did write tags: the grammar let them through whole
