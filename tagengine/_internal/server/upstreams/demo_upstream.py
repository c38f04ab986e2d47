"""`--upstream demo`: a scripted upstream in this process that answers with the bundled transcript's replies
(no model, no key), reached through httpx's ASGI transport."""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ...tags import scan
from ..options import Options
from ..upstream import UpstreamKind
from ..wire.openai import chat_completion, content_chunk, model_list
from ..wire.sse import DONE_EVENT, data_event

DEMO = "demo"
BASE = "http://demo.invalid/v1"
SAMPLES = Path(__file__).resolve().parents[4] / "samples"


def _is_demo(url: str) -> bool:
    return url == DEMO


def _in_process(url: str, opts: Options) -> tuple[str, httpx.AsyncBaseTransport | None]:
    return BASE, httpx.ASGITransport(app=demo_app(opts.samples))


KIND = UpstreamKind("demo", _is_demo, _in_process)


def demo_replies(samples: Path | None) -> list[str]:
    path = (samples or SAMPLES) / "transcripts" / "crew-night.jsonl"
    doc = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return [m["content"] for m in doc["messages"] if m["role"] == "assistant"]


def demo_app(samples: Path | None = None) -> Starlette:
    """A scripted OpenAI-compatible model: reply n is the transcript's reply n (n = the replies in the
    request, so regenerating gives the same reply again), streamed in small random pieces. A last user
    message that says roll gets the demo's check reply, which it continues from a prefill (DemoCheck)."""
    replies = demo_replies(samples)
    check = DemoCheck.load(samples)

    async def models(request: Request) -> Response:
        return JSONResponse(model_list("tagengine-demo", owner="tagengine"))

    async def chat(request: Request) -> Response:
        body = await request.json()
        n = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        text = check.answer(body.get("messages", []))
        text = replies[n % len(replies)] if text is None else text
        base: dict[str, Any] = {"id": f"demo-{n}", "created": 0, "model": body.get("model") or "tagengine-demo"}
        if body.get("stream") is not True:
            return JSONResponse(chat_completion(text, **base))

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


_ROLL = re.compile(r"\broll", re.IGNORECASE)
_OUTCOME = re.compile(r'\boutcome="(\w+)"')


@dataclass(frozen=True)
class DemoCheck:
    """samples/transcripts/demo-check.json: a reply that ends with a check, and what follows the check for
    each outcome when the demo is asked to continue it (serve --settle-checks), or without a receipt."""

    reply: str
    after: dict[str, str]
    unsettled: str

    @classmethod
    def load(cls, samples: Path | None) -> DemoCheck:
        doc = json.loads(((samples or SAMPLES) / "transcripts" / "demo-check.json").read_text(encoding="utf-8"))
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
        if isinstance(user, str) and _ROLL.search(user):
            return self.reply + self.unsettled
        return None
