"""Issue 26 items 11 and 12 (decisions TR-5, TR-6): requests that are not a turn of the game move nothing the
pages show and are not taught the game; a chat played with `--hide-tags` keeps its state when the server is
started again without it, and says so.

A real server on loopback (make_app under uvicorn) in front of the scripted upstream (tests/serve_kit.py); the
requests are shaped as SillyTavern 1.19.0 sends them (the research notes: Test Message, Impersonate, an
extension's quiet prompt, `generateRaw`); tests/test_st_e2e.py sends them through SillyTavern's own server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running
from test_serve import make_campaigns

from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext

# Open WebUI's title task, as its default template writes it (the chat's history inside it)
TITLE_TASK = ("### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
              "### Output:\nJSON format: { \"title\": \"your concise title here\" }\n### Chat History:\n"
              "<chat_history>\nUSER: TURN:one\nASSISTANT: The lock gives.\n</chat_history>")
SCRIPT = {
    "one": 'The lock gives. [clock: name="Alarm raised" size="6"]',
    "two": 'Boots on the stair. [clock: name="Alarm raised" tick="2"]',
    "three": 'The bells. [clock: name="Alarm raised" tick="4"]',
    "four": 'Quiet again. [clock: name="Alarm raised" tick="-1"]',
    "Hi": 'Hello! [clock: name="Alarm raised" tick="-6"]',  # a model that answers a test with a tag
    "raw": 'A summary. [clock: name="Alarm raised" size="4"]',
    TITLE_TASK: '{"title": "Bells at Midnight [clock: name="Alarm raised" tick="1"]"}',
}
GREETING = "The counting-house looms over the canal."
NOTE = '[tagengine: campaign="heist"]'
IMPERSONATE = ("[Write your next reply from the point of view of User, using the chat history so far as a guideline "
               "for the writing style of User. Don't write as GM or system. Don't describe actions of GM.]")
SUMMARIZE = "Ignore previous instructions. Summarize the most important facts and events in the story so far."


def chat(turns: list[str], replies: list[str], note: bool = True) -> list[dict[str, str]]:
    """SillyTavern's prompt for a one-character chat: main prompt, "[Start a new Chat]", the greeting, the chat,
    the Author's Note (the marker) four messages up."""
    msgs = [{"role": "assistant", "content": GREETING}]
    for i, t in enumerate(turns):
        msgs.append({"role": "user", "content": f"TURN:{t}"})
        if i < len(replies):
            msgs.append({"role": "assistant", "content": replies[i]})
    if note:
        msgs.insert(max(0, len(msgs) - 4), {"role": "system", "content": NOTE})
    return [{"role": "system", "content": "Write GM's next reply."},
            {"role": "system", "content": "[Start a new Chat]"}, *msgs]


@contextmanager
def serving(tmp_path: Path, fake: Fake, **options: Any) -> Iterator[tuple[str, ServerContext]]:
    data = tmp_path / "data"
    if not data.exists():
        make_campaigns(data)
    with Running(fake.app()) as up:
        app = make_app(Options(upstream=f"{up.url}/v1", data=data, **options))
        with Running(app) as srv:
            yield srv.url, app.state.context


def ask(url: str, messages: list[dict[str, str]], stream: bool = False,
        headers: dict[str, str] | None = None) -> tuple[httpx.Response, str]:
    body = {"model": "m", "messages": messages, "stream": stream}
    with httpx.Client(timeout=30) as h:
        if not stream:
            r = h.post(f"{url}/v1/chat/completions", json=body, headers=headers)
            assert r.status_code == 200, r.text
            return r, r.json()["choices"][0]["message"]["content"]
        with h.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as r:
            assert r.status_code == 200
            text = ""
            for line in r.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    text += "".join(c["delta"].get("content") or "" for c in json.loads(line[6:])["choices"])
            return r, text


def settled(ctx: ServerContext, turn: int) -> tuple[str, int, str]:
    """The pages' newest turn once the turn numbered `turn` has kept it (after its answer went, S-24)."""
    for _ in range(500):  # bounded: 5 s
        head = ctx.store.head("heist")
        if head is not None and head[1] == turn:
            return head
        time.sleep(0.01)
    raise AssertionError(f"turn {turn} kept no head: {ctx.store.head('heist')}")


def play(url: str, ctx: ServerContext, turns: list[str], note: bool = True) -> list[str]:
    replies: list[str] = []
    for n in range(len(turns)):
        _, text = ask(url, chat(turns[:n + 1], replies, note), stream=n % 2 == 1)
        replies.append(text)
        settled(ctx, n + 1)
    return replies


QUIET = [  # (name, messages after a three-turn chat, stream, headers, the reason the answer gives)
    ("test message", lambda replies: [{"role": "user", "content": "Hi"}], False, {}, "Test Message"),
    ("test message, a stale type", lambda replies: [{"role": "user", "content": "Hi"}], False,
     {"x-tagengine-type": "normal"}, "Test Message"),
    ("impersonate", lambda replies: [*chat(["one", "two", "three"], replies),
                                     {"role": "system", "content": IMPERSONATE}], True, {}, "an impersonation"),
    ("summarize", lambda replies: [*chat(["one", "two", "three"], replies),
                                   {"role": "system", "content": SUMMARIZE}], False, {}, "quiet prompt"),
    ("impersonate, by the header", lambda replies: [*chat(["one", "two", "three"], replies),
                                                    {"role": "system", "content": "Write as the player."}], True,
     {"X-Tagengine-Type": "impersonate"}, "x-tagengine-type: impersonate"),
    ("quiet, by the header", lambda replies: [*chat(["one", "two", "three"], replies),
                                              {"role": "user", "content": "TURN:raw"}], False,
     {"x-tagengine-type": "Quiet"}, "x-tagengine-type: quiet"),
    ("open webui's title task, by its prompt", lambda replies: [{"role": "user", "content": TITLE_TASK}], False,
     {}, "### Task:"),
    ("open webui's tags task, by {{TASK}}", lambda replies: [*chat(["one", "two", "three"], replies),
                                                              {"role": "user", "content": "TURN:raw"}], True,
     {"x-tagengine-type": "tags_generation"}, "x-tagengine-type: tags_generation"),
]


@pytest.mark.parametrize(("name", "messages", "stream", "headers", "why"), QUIET, ids=[q[0] for q in QUIET])
def test_a_request_that_is_not_a_turn_moves_nothing_and_is_not_taught_the_game(tmp_path, caplog, name, messages,
                                                                               stream, headers, why):
    """Issue 26 item 11: with `--campaign heist` (the documented command), after three turns (Alarm raised
    6/6, turn 3) SillyTavern's Test Message reset the sheet (0/6, turn 4) and Impersonate moved it. Now such a
    request goes to the model as the app sent it (markers out), its answer comes back as the model wrote it,
    and the pages' turn, state and prompt stay."""
    caplog.set_level(logging.INFO, "tagengine.serve")
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        replies = play(url, ctx, ["one", "two", "three"])
        assert 'now="6/6"' in replies[2]
        head, prompt = settled(ctx, 3), ctx.latest.prompts["heist"]
        sent = messages(replies)
        r, text = ask(url, sent, stream, headers)
        assert why in r.headers["x-tagengine-quiet"] and "x-tagengine-campaign" not in r.headers
        assert "result=" not in text  # the model's text as it wrote it: nothing applied
        got = json.loads(fake.bodies[-1])
        assert got["messages"] == [m for m in sent if m["content"] != NOTE]  # as sent, the marker out: not taught
        time.sleep(0.2)  # bounded: what a turn keeps after its answer would have been kept by now
        assert ctx.store.head("heist") == head and ctx.latest.prompts["heist"] is prompt
        # a turn after it plays on from turn 3, and moves the pages: the checks above could fail
        _, fourth = ask(url, chat(["one", "two", "three", "four"], replies))
        assert 'now="5/6"' in fourth and settled(ctx, 4)[0] != head[0]
        assert ctx.latest.prompts["heist"] is not prompt
    assert any("not a turn of the game passes through" in rec.getMessage() for rec in caplog.records)


def test_a_raw_prompt_with_no_chat_is_played_but_leaves_the_pages(tmp_path):
    """An extension's `generateRaw` ([system, user], no chat, no Author's Note, a stale type header) cannot be told
    from a new chat's first message: it is played (the default campaign), but while the pages show later turns
    they stay as they are."""
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        replies = play(url, ctx, ["one", "two", "three"], note=False)
        head, prompt = settled(ctx, 3), ctx.latest.prompts["heist"]
        r, text = ask(url, [{"role": "system", "content": "You summarize."}, {"role": "user", "content": "TURN:raw"}],
                      headers={"x-tagengine-type": "normal"})
        assert r.headers["x-tagengine-campaign"] == "heist" and 'size="4" result="ok"' in text  # played
        time.sleep(0.2)  # bounded: what the turn keeps after its answer is kept by now
        assert ctx.store.head("heist") == head and ctx.latest.prompts["heist"] is prompt
        _, fourth = ask(url, chat(["one", "two", "three", "four"], replies, note=False))
        assert 'now="5/6"' in fourth and settled(ctx, 4)


def test_a_chat_whose_replies_were_deleted_is_a_turn_that_shows(tmp_path):
    """TR-5's one structural sign is narrow: two user messages and no reply are a chat whose GM replies were
    deleted (ED-6: back before a player's edit), not a raw prompt. It is played and moves the pages."""
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        play(url, ctx, ["one", "two", "three"], note=False)
        head, prompt = settled(ctx, 3), ctx.latest.prompts["heist"]
        r, text = ask(url, [{"role": "system", "content": "You are the GM."}, {"role": "user", "content": "TURN:x"},
                            {"role": "user", "content": "TURN:one"}])
        assert r.headers["x-tagengine-campaign"] == "heist" and "result=" in text
        time.sleep(0.2)  # bounded: what the turn keeps after its answer is kept by now
        assert ctx.store.head("heist") != head and ctx.latest.prompts["heist"] is not prompt


def test_the_first_turn_of_a_campaign_still_shows(tmp_path):
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        ask(url, [{"role": "user", "content": "TURN:one"}])
        assert settled(ctx, 1) and "heist" in ctx.latest.prompts


def test_a_quiet_request_without_a_campaign_passes_through_as_before(tmp_path):
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake) as (url, _):
        r, text = ask(url, [{"role": "user", "content": "Hi"}])
        assert "x-tagengine-quiet" not in r.headers and text == SCRIPT["Hi"]


# -- item 12: --hide-tags, then a server without it (TR-6)

@pytest.mark.parametrize("stream", [False, True])
def test_a_hide_tags_chat_keeps_its_state_after_a_restart_without_hide_tags(tmp_path, caplog, stream):
    """Before: the narrations were replayed as they are (no tags), so the clock started again at 0/6, with no
    header and no log line. Now they are read back as the tagged replies the store keeps, and that is said."""
    caplog.set_level(logging.WARNING, "tagengine.serve")
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist", hide_tags=True) as (url, ctx):
        shown = play(url, ctx, ["one", "two"])
        assert all("[clock:" not in s for s in shown)  # the player saw narrations
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        r, third = ask(url, chat(["one", "two", "three"], shown), stream)
        assert 'tick="4" result="ok" now="6/6"' in third  # 2/6 before it: the clock kept
        assert r.headers["x-tagengine-history"].startswith("hidden: 2 narrated replies of a --hide-tags server")
        sent = json.loads(fake.bodies[-1])["messages"]
        assert any('tick="2" result="ok" now="2/6"' in m["content"] for m in sent)  # its tagged replies
    assert any("narrated replies of a --hide-tags server read back" in rec.getMessage() for rec in caplog.records)


def test_a_chat_never_hidden_reads_no_narrations(tmp_path):
    fake = Fake(dict(SCRIPT))
    with serving(tmp_path, fake, campaign="heist") as (url, ctx):
        play(url, ctx, ["one", "two"])
        assert ctx.chain.narrated() is False
        r, _ = ask(url, chat(["one", "two", "three"], ["The lock gives.", "Boots on the stair."]))
        assert "hidden" not in r.headers.get("x-tagengine-history", "")


def test_open_webuis_chat_turn_is_a_turn_by_its_empty_task_and_its_tasks_are_not():
    """TR-10: `X-Tagengine-Type: {{TASK}}` is empty on an Open WebUI chat's own turn (a turn, as without the header)
    and names the task otherwise; every `*_generation` task and function calling is quiet; without the header a
    last user or system message that starts Open WebUI's default task prompt is quiet, another is a turn."""
    from tagengine._internal.server.turn.quiet import quiet_reason

    turn = [{"role": "user", "content": "We slip in."}]
    assert quiet_reason({"x-tagengine-type": ""}, {}, turn) is None
    for task in ("title_generation", "tags_generation", "follow_up_generation", "query_generation",
                 "image_prompt_generation", "autocomplete_generation", "emoji_generation", "function_calling"):
        assert quiet_reason({"x-tagengine-type": task}, {}, turn) == f"x-tagengine-type: {task}"
    assert quiet_reason({"x-tagengine-type": "normal"}, {}, [{"role": "user", "content": TITLE_TASK}]) is None
    for role in ("user", "system"):
        assert quiet_reason({}, {}, [{"role": role, "content": "  " + TITLE_TASK}]) is not None
    assert quiet_reason({}, {}, [{"role": "assistant", "content": TITLE_TASK}]) is None
    assert quiet_reason({}, {}, [{"role": "user", "content": "### Tasks left: the vault"}]) is None


def test_sillytaverns_empty_generation_type_still_tells_its_own_quiet_prompts():
    """TR-5, OW-2: SillyTavern's `{{lastGenerationType}}` (docs/sillytavern.md's header) is empty from a chat's
    opening until its first generation (1.19.0's macros.js: '' on CHAT_CHANGED, set only by a generation that
    emits GENERATION_STARTED, which `generateRaw` does not), so an extension's raw quiet prompt sent then carries
    an empty `X-Tagengine-Type`. Open WebUI's empty `{{TASK}}` (a turn whatever its `### Task:` text) must not make
    SillyTavern's own quiet prompts and impersonation turns: they were quiet, and a summary played as a turn
    applies the tags it quotes."""
    from tagengine._internal.server.turn.quiet import IMPERSONATE, quiet_reason

    chat = [{"role": "user", "content": "We slip in."}, {"role": "assistant", "content": "The lock gives."}]
    for last in (SUMMARIZE, IMPERSONATE + "Cutter.]"):
        asked = [*chat, {"role": "system", "content": last}]
        assert quiet_reason({"x-tagengine-type": ""}, {}, asked) == quiet_reason({}, {}, asked) is not None
    file_turn = [*chat, {"role": "user", "content": "### Task:\nAnswer from the file, edited template.\nWe run."}]
    assert quiet_reason({"x-tagengine-type": ""}, {}, file_turn) is None  # OW-2 still: Open WebUI's turn
