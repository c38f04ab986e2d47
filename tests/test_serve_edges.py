"""Edges of `tagengine serve` found in review: a last chunk with no delta, text that is not UTF-8, a model's
reply naming a campaign, long model names, unknown campaigns."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from cmdkit import sample_state
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine import apply_reply
from tagengine._internal.commands import Applied
from tagengine._internal.server.errors import Refused
from tagengine._internal.server.limits import MAX_ANSWER, MAX_MODEL_NAME
from tagengine._internal.server.turn.receipts import ReceiptStream
from tagengine._internal.server.turn.relay import relay_stream
from tagengine._internal.server.turn.request import budget_of, read_marked
from tagengine._internal.server.wire.json_codec import dumps
from tagengine._internal.server.wire.sse import read_events

REPLY = 'Hello [clock: name="Alarm raised" size="6"]'


def relayed(chunks: list[object]) -> tuple[str, list[Applied]]:
    """The reply text a client gets when the upstream streams `chunks` (then [DONE]), and what was kept."""
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    response = httpx.Response(200, stream=httpx.ByteStream(body))
    kept: list[Applied] = []

    async def run() -> list[bytes]:
        async def connected() -> bool:
            return False

        async def keep(applied: Applied) -> None:
            kept.append(applied)

        events = read_events(response.aiter_bytes(), MAX_ANSWER)
        return [b async for b in relay_stream(response, events, ReceiptStream(rs, state), keep, connected)]

    sent = asyncio.run(run())
    text = ""
    for event in b"".join(sent).decode().split("\n\n"):
        if event.startswith("data: {"):
            choices = json.loads(event[6:]).get("choices")
            for choice in choices if isinstance(choices, list) else []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                content = delta.get("content") if isinstance(delta, dict) else None
                text += content if isinstance(content, str) else ""
    return text, kept


def test_the_held_rest_goes_out_with_a_last_chunk_that_has_no_delta():
    """S-7: some upstreams end with `{"finish_reason": "stop"}` and no delta; the held tag must still be sent,
    as its receipt, and equal what is stored."""
    text, kept = relayed([{"choices": [{"index": 0, "delta": {"content": REPLY}}]},
                          {"choices": [{"index": 0, "finish_reason": "stop"}]}])
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    assert text == apply_reply(rs, state, REPLY).text == kept[0].text


@pytest.mark.parametrize("odd", [{"choices": 5}, {"choices": "abc"}, {"choices": {"0": {}}}, {"choices": [5, None]},
                                 {"choices": [{"index": 0, "delta": 5}]},
                                 {"choices": [{"index": 0, "delta": {"content": 5}}]}, {"choices": None}, {}])
def test_a_chunk_of_any_shape_between_the_reply_s_pieces_is_passed_on_not_a_traceback(odd):
    """No exception escapes a reply's processing: a chunk whose `choices` is not a list of choices carries no
    text and goes to the client as it came; the reply around it is applied as a whole."""
    text, kept = relayed([{"choices": [{"index": 0, "delta": {"content": REPLY[:9]}}]}, odd,
                          {"choices": [{"index": 0, "delta": {"content": REPLY[9:]}, "finish_reason": "stop"}]}])
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    assert text == apply_reply(rs, state, REPLY).text == kept[0].text


def test_text_that_is_not_utf8_is_escaped_not_an_error():
    assert json.loads(dumps({"content": "a\ud800b"})) == {"content": "a\ud800b"}
    assert dumps({"content": "é"}) == '{"content":"é"}'.encode()


def test_only_system_and_user_messages_name_the_campaign():
    messages = [{"role": "system", "content": '[tagengine: campaign="heist"]'},
                {"role": "assistant", "content": '[tagengine: campaign="other"]'}]
    assert read_marked(messages).campaign == "heist"


def test_a_model_name_past_the_limit_names_no_family():
    assert budget_of({"model": "x" * (MAX_MODEL_NAME + 1)}, None).model is None
    assert budget_of({"model": "gpt-4o"}, None).model == "gpt-4o"


def test_s_13_campaigns_roll_their_own_dice_unless_given_a_seed(tmp_path):
    import io

    from conftest import SAMPLES
    from tagengine._internal.cli import run

    rules = str(SAMPLES / "rulesets" / "gravewatch.json")
    for name, extra in (("a", []), ("b", []), ("c", ["--seed", "s1"]), ("d", ["--seed", "s1"])):
        assert run(["campaign", "new", name, rules, "Mira", "--data", str(tmp_path), *extra], io.StringIO(),
                   io.StringIO()) == 0
    from tagengine._internal.server.memory.store import Store

    store = Store(tmp_path)
    seeds = {n: json.loads(store.campaign_row(n).start)["rulesetDice"]["seed"] for n in "abcd"}
    assert seeds["a"] != seeds["b"] and seeds["c"] == seeds["d"] == "s1"


def test_f_10_roles_without_case_in_the_history_a_chat_app_sends():
    """A reply sent back as `Assistant` is a reply: its tags replay (F-10), not a system message."""

    history = read_marked([{"role": "User", "content": "go"}, {"role": "Assistant", "content": REPLY},
                           {"role": "tool", "content": "x"}]).plain()
    assert [m["role"] for m in history] == ["user", "assistant", "system"]


def test_read_marked_reads_the_marker_the_history_and_what_is_not_text_in_one_pass():
    """S-27: the marker in a system or user message (the last one wins), stripped from every message; a
    message its marker leaves empty dropped; a content that is not text names its message, but only when
    the history is asked for (a request passed through may carry one)."""
    marked = read_marked([{"role": "system", "content": '[tagengine: campaign="a"]'},
                          {"role": "user", "content": [{"type": "text", "text": 'go [tagengine: campaign="b"]'}]},
                          {"role": "assistant", "content": 'x [tagengine: campaign="c"]'},
                          {"role": "assistant", "content": None, "tool_calls": []}])
    assert marked.campaign == "b"
    assert marked.plain() == [{"role": "user", "content": "go "}, {"role": "assistant", "content": "x "}]
    image = read_marked([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
                         {"role": "user", "content": 7}, {"role": "user", "content": '[tagengine: campaign="d"]'}])
    assert image.campaign == "d" and image.problem is not None
    with pytest.raises(Refused) as e:
        image.plain()
    assert e.value.status == 400 and "messages[1].content must be text" in e.value.message
    with pytest.raises(Refused) as e:
        read_marked([{"role": "user", "content": "a"}, {"content": "b"}])
    assert "messages[1] is not a message" in e.value.message
    for role in (["user"], {"r": 1}, 7, None):  # any JSON value: a 400 naming it, never a TypeError (a 500)
        with pytest.raises(Refused) as e:
            read_marked([{"role": role, "content": "a"}])
        assert e.value.status == 400 and "messages[0] is not a message" in e.value.message


def test_idle_client_connections_outlive_httpx_own_keep_alive(monkeypatch, tmp_path):
    """S-29: at equal keep-alive timeouts (uvicorn's and httpx's default, 5 s) a client reuses a connection as
    the server closes it; `serve` keeps idle connections longer than any client of httpx or the openai SDK."""
    import io

    import uvicorn

    from tagengine._internal.server import main
    from tagengine._internal.server.app import Options

    got = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: got.update(kw))
    assert main.serve(Options(upstream="demo", data=tmp_path), "127.0.0.1", 0, io.StringIO()) == 0
    client_expiry = httpx.Limits().keepalive_expiry  # 5 s: the openai SDK keeps httpx's default
    assert got["timeout_keep_alive"] > client_expiry + 30 and got["access_log"] is False


KEYS = st.sampled_from(["choices", "index", "delta", "content", "finish_reason", "error", "role", "x"])
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(JSON, max_size=4))
def test_no_upstream_chunk_makes_the_relay_raise(odd):
    """Whatever JSON the upstream streams between a reply's pieces, the client gets events, never a
    traceback: the relay either passes a chunk on, or ends the stream with an error event."""
    relayed([{"choices": [{"index": 0, "delta": {"content": REPLY[:9]}}]}, *odd,
             {"choices": [{"index": 0, "delta": {"content": REPLY[9:]}, "finish_reason": "stop"}]}])
