"""Issue 15: `tagengine serve --count-with-upstream`. The scripted upstream (tests/serve_kit.py) tokenizes like
llama.cpp, vLLM or KoboldCpp with a toy tokenizer; the server's counts must be that tokenizer's, its fits must
follow them, it must ask for each text once, and without a tokenize endpoint it must fall back and say so."""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import contextmanager

import httpx
import pytest
from serve_kit import Fake, Running, toy_tokens

from conftest import SAMPLES, load_sample
from tagengine._internal.prompt import Budget, Prompt
from tagengine._internal.prompt.budget import CUT_MARKER
from tagengine._internal.prompt.registry import CHATML_CHAT
from tagengine._internal.prompt.tokens import TiktokenTokenizer
from tagengine._internal.prompt.upstream_tokens import NotCounted, UpstreamTokenizer
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.upstream.client import Upstream
from tagengine._internal.server.upstream.counting import ENDPOINTS, PROBE, UpstreamCounts, root_of
from tagengine._internal.state import GameState

MODEL = "qwen2.5-7b-instruct"  # ChatML: 4 per message + the role as text, 3 to prime (K-2)
SCRIPT = {"one": "The lantern gutters. Nothing moves in the yard.", "two": "Rain, and the bell again."}
PROSE = ("The wardens walk the wall at dusk, counting graves by lantern light, and the rain keeps falling on "
         "the yard while the bell tolls for someone nobody remembers. ")


@contextmanager
def serving(tmp_path, fake, **kw):
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), ["Mira", "Bram"])
    store.close()
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data, campaign="vault",
                                                             **kw))) as srv:
        yield srv


def chat(srv, messages, max_tokens=300, model=MODEL):
    r = httpx.post(f"{srv.url}/v1/chat/completions", timeout=30,
                   json={"model": model, "messages": messages, "max_tokens": max_tokens})
    assert r.status_code == 200, r.text
    return r


def header(r):
    """x-tagengine-tokens as (total, context, {key: value})."""
    head, *rest = r.headers["x-tagengine-tokens"].split(" ")
    total, context = head.split("/")
    return int(total), int(context), dict(part.split("=", 1) for part in rest)


def toy_total(messages, response):
    """The prompt's count in the toy tokenizer with ChatML's overhead: what the upstream itself would say."""
    chat_ = CHATML_CHAT
    return sum(chat_.per_message + len(toy_tokens(m["role"])) + len(toy_tokens(m["content"])) for m in messages) \
        + chat_.priming + response


def turns(n):
    msgs = [{"role": "system", "content": "You are the GM."}]
    for i in range(n):
        msgs += [{"role": "user", "content": f"Turn {i}: " + PROSE}, {"role": "assistant", "content": PROSE + str(i)}]
    return [*msgs, {"role": "user", "content": "TURN:one"}]


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "koboldcpp"])
def test_counts_are_the_upstreams_own(tmp_path, kind):
    fake = Fake(SCRIPT, tokenize=kind)
    with serving(tmp_path, fake, count_with_upstream=True, context=8192) as srv:
        r = chat(srv, turns(2))
        total, context, fields = header(r)
        assert fields["tokenizer"] == f"upstream:{kind}" and fields["exact"] == "true"
        assert "upstream-count" not in fields
        sent = json.loads(fake.bodies[-1])["messages"]
        assert total == toy_total(sent, int(fields["response"])) and context == 8192
        for m in sent:  # every text of the prompt was counted by the upstream
            assert m["content"] in fake.tokenized


def test_the_fit_follows_the_upstreams_count(tmp_path):
    """A history that fits by o200k's count but not by the upstream's: the oldest turns are dropped."""
    plain = Fake(SCRIPT)
    with serving(tmp_path, plain, context=3000) as srv:
        local = chat(srv, turns(8))
    assert len(json.loads(plain.bodies[-1])["messages"]) == len(turns(8)) + 2  # o200k: everything fits
    fake = Fake(SCRIPT, tokenize="vllm")
    with serving(tmp_path / "b", fake, context=3000, count_with_upstream=True) as srv:
        r = chat(srv, turns(8))
    total, context, fields = header(r)
    sent = json.loads(fake.bodies[-1])["messages"]
    assert len(sent) < len(turns(8)) + 2  # the upstream's count drops turns o200k would have kept
    assert total == toy_total(sent, int(fields["response"])) <= context == 3000
    assert header(local)[2]["tokenizer"] == "o200k_base" and header(local)[2]["exact"] == "false"


def llama_cpp(asked: list[str]) -> httpx.MockTransport:
    """llama.cpp's /tokenize with the toy tokenizer, in this process."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/tokenize":
            return httpx.Response(404)
        text = json.loads(request.content)["content"]
        asked.append(text)
        return httpx.Response(200, json={"tokens": toy_tokens(text)})

    return httpx.MockTransport(answer)


def test_a_cut_system_prompt_is_counted_again_by_the_upstream():
    """The rules reference cut to fit (a local-tokenizer cut, K-12) over several rounds of fetching (K-11), then
    the text kept counted exactly: the fitted prompt's count is the upstream's."""
    rs = load_sample("gravewatch")
    state = GameState.new(rs, ["Mira", "Bram"])
    history = [{"role": "user", "content": "TURN:one"}]
    budget = Budget(context=1760, response=100, response_min=100, reserve=1000, model=MODEL)
    asked: list[str] = []

    async def go() -> tuple[Prompt, Budget, str | None]:
        up = Upstream("http://up.invalid/v1", forward_client_key=False, transport=llama_cpp(asked))
        try:
            return await UpstreamCounts(up).fitted_prompt(rs, state, history, budget, {})
        finally:
            await up.close()

    prompt, _, fallback = asyncio.run(go())
    assert fallback is None and prompt.report.encoding == "upstream:llama.cpp" and prompt.report.exact
    assert CUT_MARKER.split("{")[0] in prompt.system  # the reference was cut
    assert [c["part"] for c in prompt.report.cuts] == ["gmReference"]
    assert prompt.report.total == toy_total(prompt.messages, prompt.report.response) <= budget.context
    assert prompt.system in asked and len(asked) == len(set(asked))  # counted by the upstream, each text once


def test_each_text_is_asked_once_and_the_endpoint_detected_once(tmp_path):
    fake = Fake(SCRIPT, tokenize="llama.cpp")
    with serving(tmp_path, fake, count_with_upstream=True) as srv:
        first = turns(3)
        chat(srv, first)
        asked_first = list(fake.tokenized)
        assert asked_first.count(PROBE) == 1 and len(asked_first) == len(set(asked_first))
        second = [*first, {"role": "assistant", "content": SCRIPT["one"]}, {"role": "user", "content": "TURN:two"}]
        chat(srv, second)
        asked_second = fake.tokenized[len(asked_first):]
    assert PROBE not in asked_second  # detected once
    assert not set(asked_second) & {m["content"] for m in first}  # known contents are not asked again
    assert "TURN:two" in asked_second


def test_an_upstream_without_a_tokenize_endpoint_falls_back_and_says_so(tmp_path, caplog):
    fake = Fake(SCRIPT)  # no tokenize endpoint: every probe is a 404
    with caplog.at_level(logging.INFO, logger="tagengine.serve"), \
            serving(tmp_path, fake, count_with_upstream=True) as srv:
        r = chat(srv, turns(1))
        chat(srv, turns(2), model="gpt-4o")
    total, _, fields = header(r)
    assert fields == {"response": "300", "context-from": "table:qwen*", "tokenizer": "o200k_base", "exact": "false",
                      "upstream-count": "none"}
    assert total > 0 and fake.tokenized == []
    warned = [rec.getMessage() for rec in caplog.records if "tokenize endpoint" in rec.getMessage()
              or "tokencount" in rec.getMessage()]
    assert len(warned) == 1 and "counting with the tokenizer registry's choice" in warned[0]  # said once


def test_detection_is_asked_once_and_an_unreachable_upstream_decides_nothing():
    asked: list[str] = []
    down = [True]

    def answer(request: httpx.Request) -> httpx.Response:
        if down[0]:
            raise httpx.ConnectError("refused")
        asked.append(request.url.path)
        return httpx.Response(404, json={"error": "not found"})

    async def go() -> None:
        up = Upstream("http://up.invalid/v1", forward_client_key=False, transport=httpx.MockTransport(answer))
        counts = UpstreamCounts(up)
        assert await counts.detect(MODEL, {}) is None and not counts.detected  # unreachable: ask again later
        down[0] = False
        assert await counts.detect(MODEL, {}) is None and counts.detected
        assert await counts.detect(MODEL, {}) is None
        await up.close()

    asyncio.run(go())
    assert asked == [e.path for e in ENDPOINTS]  # one probe per kind, once
    assert root_of("http://h:8080/v1") == "http://h:8080" and root_of("http://h:5001") == "http://h:5001"


def test_the_upstream_tokenizer_counts_only_what_it_was_given_and_cuts_whole_characters():
    text = "番人は墓を二度数え、夜明けまで灯りを守る。 The wardens count every grave twice."
    known = {text: toy_tokens(text)}
    tok = UpstreamTokenizer("llama.cpp", MODEL, 1, known.get, TiktokenTokenizer("o200k_base"))
    assert tok.count(text) == len(toy_tokens(text)) and tok.encode(text) == toy_tokens(text)
    with pytest.raises(NotCounted) as e:
        tok.count("something else")
    assert e.value.text == "something else"
    assert tok == UpstreamTokenizer("llama.cpp", MODEL, 1, dict().get, TiktokenTokenizer("cl100k_base"))
    assert tok != UpstreamTokenizer("llama.cpp", MODEL, 2, known.get, TiktokenTokenizer("o200k_base"))
    assert tok.choice.exact and tok.choice.name == "upstream:llama.cpp" and tok.choice.chat is CHATML_CHAT
    for keep in range(0, tok.count(text) + 2):
        head = tok.cut(text, keep)
        assert text.startswith(head)  # whole characters of the text only
        assert (head == text) == (keep >= tok.count(text))


def test_the_command_line_flag_reaches_the_server(tmp_path, monkeypatch):
    from tagengine._internal.cli import run
    from tagengine._internal.server import main

    seen: list[Options] = []
    monkeypatch.setattr(main, "serve", lambda opts, host, port, err: seen.append(opts) or 0)
    args = ["serve", "--upstream", "http://127.0.0.1:9/v1", "--data", str(tmp_path)]
    assert run([*args, "--count-with-upstream"]) == 0 and run(args) == 0
    assert [o.count_with_upstream for o in seen] == [True, False]


def test_a_vllm_that_does_not_serve_the_model_name_is_asked_without_it():
    """vLLM answers 404 for a model it does not serve (a chat app's own name for it); a recent vLLM tokenizes
    with its served model when the request names none."""
    bodies: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "prompt" not in body:
            return httpx.Response(400, json={"object": "error", "message": "prompt: field required"})
        if "model" in body:
            return httpx.Response(404, json={"object": "error", "message": "The model does not exist."})
        ids = toy_tokens(body["prompt"])
        return httpx.Response(200, json={"count": len(ids), "max_model_len": 4096, "tokens": ids})

    rs = load_sample("gravewatch")
    state = GameState.new(rs, ["Mira", "Bram"])
    history = [{"role": "user", "content": "TURN:one"}]

    async def go() -> tuple[Prompt, Budget, str | None]:
        up = Upstream("http://up.invalid/v1", forward_client_key=False, transport=httpx.MockTransport(answer))
        try:
            return await UpstreamCounts(up).fitted_prompt(rs, state, history, Budget(model="my-rp-model"), {})
        finally:
            await up.close()

    prompt, _, fallback = asyncio.run(go())
    assert fallback is None and prompt.report.encoding == "upstream:vllm" and prompt.report.exact
    assert len(bodies) > 3 and all("model" not in b for b in bodies[3:])  # after the 3 probes: no name


def test_a_count_that_fails_mid_request_falls_back_for_that_request(caplog):
    """The endpoint found, then a count refused (the upstream restarting, say): this request is counted locally
    and says so; the endpoint stays, and the next request is counted by the upstream again."""
    broken = [False]

    def answer(request: httpx.Request) -> httpx.Response:
        text = json.loads(request.content)["content"]
        if broken[0] and text != PROBE:
            return httpx.Response(503, json={"error": "loading model"})
        return httpx.Response(200, json={"tokens": toy_tokens(text)})

    rs = load_sample("gravewatch")
    state = GameState.new(rs, ["Mira", "Bram"])

    async def go() -> list[tuple[Prompt, Budget, str | None]]:
        up = Upstream("http://up.invalid/v1", forward_client_key=False, transport=httpx.MockTransport(answer))
        counts = UpstreamCounts(up)
        fit = counts.fitted_prompt
        out = [await fit(rs, state, [{"role": "user", "content": "first"}], Budget(model=MODEL), {})]
        broken[0] = True
        out.append(await fit(rs, state, [{"role": "user", "content": "second"}], Budget(model=MODEL), {}))
        broken[0] = False
        out.append(await fit(rs, state, [{"role": "user", "content": "third"}], Budget(model=MODEL), {}))
        await up.close()
        return out

    with caplog.at_level(logging.WARNING, logger="tagengine.serve"):
        (ok, _, none), (local, _, why), (again, _, none2) = asyncio.run(go())
    assert none is None and ok.report.encoding == "upstream:llama.cpp"
    assert why == "failed" and local.report.encoding == "o200k_base" and not local.report.exact
    assert none2 is None and again.report.encoding == "upstream:llama.cpp"
    assert any("HTTP 503" in r.getMessage() for r in caplog.records)


def test_the_prompt_page_counts_each_message_as_the_fit_did(tmp_path):
    """Issue 14 x issue 15: with --count-with-upstream the prompt page's per-message figures are the upstream's
    counts the fit used (they were the local tokenizer's, so they did not add up to the report's parts)."""
    import re

    fake = Fake(SCRIPT, tokenize="llama.cpp")
    with serving(tmp_path, fake, count_with_upstream=True) as srv:
        r = chat(srv, turns(2))
        page = httpx.get(f"{srv.url}/ui/c/vault/prompt").text
    total, _, fields = header(r)
    figures = [int(n) for n in re.findall(r'<span class="tokens">(\d+) tokens</span>', page)]
    sent = json.loads(fake.bodies[-1])["messages"]
    assert len(figures) == len(sent)
    assert figures == [CHATML_CHAT.per_message + len(toy_tokens(m["role"])) + len(toy_tokens(m["content"]))
                       for m in sent]
    assert sum(figures) == total - CHATML_CHAT.priming - int(fields["response"])
