"""`--upstream demo`: a scripted upstream in this process (no model, no key), reached through httpx's ASGI
transport. It plays the demo game (samples/transcripts/demo-game.json): a night's heist for the sample campaign,
every tag valid, a regenerate or a swipe answered with another version of the reply (STX-9). Any other campaign
it plays from what the server's reminder says of it (demo_table.py, STX-15): its characters, with the tags the
engine teaches for its ruleset."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import OrderedDict
from collections.abc import AsyncIterator
from functools import cached_property
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ...records import frozen
from ...samples import samples_dir
from ...tags import scan
from ..options import Options
from ..turn.quiet import TYPE_HEADER, is_task
from ..wire.answers import json_response
from ..wire.chat_completions import chat_completion, content_chunk, model_list
from ..wire.sse import DONE_EVENT, data_event
from .client import UpstreamKind
from .demo_table import ROLL, Table

DEMO = "demo"
BASE = "http://demo.invalid/v1"
# Open WebUI's background tasks reach the demo through the server, quiet (OW-2): each is answered in the shape its
# default template asks for, so a demo chat gets a title, tags and follow-ups rather than a game reply (OW-9). The
# task is named by the request's X-Tagengine-Type (the connection's {{TASK}}, passed on), else by the second line
# of Open WebUI 0.12.4's template ("### Task:" then this).
TASK_ANSWERS = {
    "title_generation": '{"title": "\U0001f5dd\ufe0f A night at the counting-house"}',
    "tags_generation": '{"tags": ["Roleplay", "Tabletop", "Heist"]}',
    "follow_up_generation": '{"follow_ups": ["What do we see from the rooftop?", "We wait for the guard to pass.", '
                            '"Lurk picks the lock."]}',
    "query_generation": '{"queries": []}',
    "image_prompt_generation": '{"prompt": "A rain-slick canal at night below a dark counting-house, lanterns"}',
    "autocomplete_generation": '{"text": ""}',
    "emoji_generation": "\U0001f3b2",
}
TASK_OPENINGS = {"Generate a concise": "title_generation", "Generate 1-3 broad tags": "tags_generation",
                 "Predict 3-5 useful messages": "follow_up_generation",
                 "Analyze the chat history to determine the necessity": "query_generation",
                 "Generate a detailed prompt for am image": "image_prompt_generation",
                 "You are an autocompletion system": "autocomplete_generation",
                 "Your task is to reflect the speaker's likely facial expression": "emoji_generation"}


def _is_demo(url: str) -> bool:
    return url == DEMO


def _in_process(url: str, opts: Options) -> tuple[str, httpx.AsyncBaseTransport | None]:
    return BASE, httpx.ASGITransport(app=demo_app(opts.samples))


KIND = UpstreamKind("demo", _is_demo, _in_process)


@frozen
class DemoGame:
    """samples/transcripts/demo-game.json: a night's heist for the sample campaign, one reply for each message
    the player sends, each reply in two versions; then the end of the script (STX-9)."""

    replies: tuple[tuple[str, ...], ...]
    end: str
    ruleset: str = ""
    characters: tuple[str, ...] = ()

    @classmethod
    def load(cls, samples: Path | None) -> DemoGame:
        where = samples or samples_dir()  # the package's own, installed or in a checkout (PK-1)
        doc = json.loads((where / "transcripts" / "demo-game.json").read_text(encoding="utf-8"))
        return cls(tuple(tuple(r) for r in doc["replies"]), doc["end"], doc.get("ruleset", ""),
                   tuple(doc.get("characters", ())))

    def plays(self, table: Table | None) -> bool:
        """Whether the script is this campaign's: no reminder read, or the script's characters playing rules whose
        name holds the script's ruleset's (the system prompt says "Blades-like Crew" for blades-like)."""
        return table is None or (set(table.characters) == set(self.characters)
                                 and self.ruleset.lower() in table.rules.lower())

    def reply(self, turn: int, version: int) -> str:
        """The reply to the player's `turn`-th message (from 1), its `version`-th asking (from 0)."""
        if 1 <= turn <= len(self.replies):
            versions = self.replies[turn - 1]
            return versions[version % len(versions)]
        return self.end.format(last=len(self.replies), turn=turn)


class Asked:
    """How often each chat was asked for its next reply (by the chat's own messages: a regenerate or a swipe
    sends the same ones), so asking again gives the other version. Bounded: the oldest chats are forgotten."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.counts: OrderedDict[str, int] = OrderedDict()

    def next(self, messages: list[Any]) -> int:
        chat = [(m.get("role"), m.get("content")) for m in messages if isinstance(m, dict)
                and m.get("role") in ("user", "assistant")]
        key = hashlib.sha256(json.dumps(chat, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
        n = self.counts.pop(key, -1) + 1
        self.counts[key] = n
        while len(self.counts) > self.size:
            self.counts.popitem(last=False)
        return n


def player_turn(messages: list[Any]) -> int:
    """The player's messages in a request: the turn the reply answers (a greeting, the engine's reminder and
    the app's system prompts do not count)."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")


def task_asked(header: str | None, messages: list[Any]) -> str | None:
    """The Open WebUI task a request is, by its header or its default template's opening; None: a turn."""
    kind = (header or "").strip().lower()
    if is_task(kind):  # every TASK_ANSWERS key is one
        return kind
    last = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
    if not isinstance(last, str):
        return None
    text = last.lstrip().removeprefix("### Task:").lstrip()
    return next((task for opening, task in TASK_OPENINGS.items() if text.startswith(opening)), None)


def demo_app(samples: Path | None = None) -> Starlette:
    """A scripted OpenAI-compatible model: the reply to the player's n-th message is the demo game's reply n
    (a regenerate or a swipe of it gets its other version), streamed in small random pieces. A last user
    message that says roll gets the demo's check reply, which it continues from a prefill (DemoCheck)."""
    game = DemoGame.load(samples)
    check = DemoCheck.load(samples)
    asked = Asked()

    async def models(request: Request) -> Response:
        return json_response(model_list("tagengine-demo", owner="tagengine"))

    async def chat(request: Request) -> Response:
        body = await request.json()
        messages = body.get("messages", [])
        n = player_turn(messages)
        table = Table.read(messages)
        task = task_asked(request.headers.get(TYPE_HEADER), messages)
        if task is not None:
            text = TASK_ANSWERS.get(task, "")
        elif table is not None and not game.plays(table):
            text = table.answer(messages, n)
        else:
            said = check.answer(messages)
            text = game.reply(n, asked.next(messages)) if said is None else said
        base: dict[str, Any] = {"id": f"demo-{n}", "created": 0, "model": body.get("model") or "tagengine-demo"}
        if body.get("stream") is not True:
            return json_response(chat_completion(text, **base))

        async def pieces() -> AsyncIterator[bytes]:
            rng = random.Random(n)
            i = 0
            while i < len(text):
                j = i + rng.randint(1, 9)
                yield data_event(content_chunk(text[i:j], **base, object="chat.completion.chunk"))
                i = j
            yield data_event(content_chunk("", finish_reason="stop", **base, object="chat.completion.chunk"))
            yield DONE_EVENT

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])


_OUTCOME = re.compile(r'\boutcome="(\w+)"')


@frozen
class DemoCheck:
    """samples/transcripts/demo-check.json: a reply that ends with a check, and what follows the check for
    each outcome when the demo is asked to continue it (serve --settle-checks), or without a receipt."""

    reply: str
    after: dict[str, str]
    unsettled: str

    @classmethod
    def load(cls, samples: Path | None) -> DemoCheck:
        where = samples or samples_dir()  # the package's own, installed or in a checkout (PK-1)
        doc = json.loads((where / "transcripts" / "demo-check.json").read_text(encoding="utf-8"))
        return cls(doc["reply"], doc["after"], doc["unsettled"])

    @cached_property
    def opening(self) -> str:
        """The reply up to its check tag."""
        tags = scan(self.reply)
        return self.reply[:tags[-1].start] if tags else self.reply

    def answer(self, messages: list[Any]) -> str | None:
        """The reply with the check (a last user message that says roll); the part after the check for a
        prefill that holds its receipt (its outcome read from the receipt); None for anything else."""
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        if last.get("role") == "assistant" and isinstance(last.get("content"), str):  # a prefill: continue it
            if not last["content"].startswith(self.opening):
                return ""  # not the demo's own reply: nothing to add
            outcomes = _OUTCOME.findall(last["content"])
            return self.after.get(outcomes[-1], "") if outcomes else self.unsettled
        user = next((m.get("content") for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"),
                    None)  # the engine's reminder may come after it
        if isinstance(user, str) and ROLL.search(user):
            return self.reply + self.unsettled
        return None
