"""Reading a chat request: the bounded body, its JSON, the campaign marker, the plain history the engine
replays, the token budget. Shared by the chat completions route (app.py) and the checks endpoint (checks.py)."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from ..history import ROLES
from ..prompt import Budget
from ..prompt.contexts import context_of
from .errors import Refused
from .relay import loads

MAX_MODEL_NAME = 256  # characters
MAX_BODY = 32 * 1024 * 1024  # one request: far above any context window's worth of chat
DEFAULT_CONTEXT = 8192
DEFAULT_RESPONSE = 1024
MARKER = re.compile(r'\[tagengine:[ \t]*campaign[ \t]*=[ \t]*"([^"\n]*)"[ \t]*\]')


async def read_body(request: Request) -> bytes:
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY:
            raise Refused(400, f"the request body is over {MAX_BODY} bytes", "request_too_large")
        parts.append(part)
    return b"".join(parts)


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request as JSON; a body that is not an object with a list of messages is a 400 naming why."""
    try:
        body = loads(raw)
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"the request body is not JSON: {e}", "invalid_json") from None
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object", "invalid_request")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "`messages` must be a non-empty list of messages", "invalid_messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise Refused(400, f"messages[{i}] is not a message: expected {{\"role\", \"content\"}}",
                          "invalid_messages")
    return body


def text_of(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
    return None


def marked_campaign(messages: list[dict[str, Any]]) -> str | None:
    """The last `[tagengine: campaign="NAME"]` marker in a system or user message (the Author's Note is per
    chat); a model's reply cannot switch the campaign."""
    found = None
    for m in messages:
        if str(m.get("role")).lower() not in ("system", "user"):
            continue
        text = text_of(m.get("content"))
        if text and "[tagengine:" in text:  # the marker's own start: most messages are skipped without the regex
            for hit in MARKER.finditer(text):
                found = hit.group(1)
    return found


def plain_history(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Role and text of each message, markers stripped; a message left empty by its marker is dropped."""
    out = []
    for i, m in enumerate(messages):
        text = text_of(m.get("content"))
        if text is None:
            if m.get("content") is None and m["role"].lower() == "assistant":
                continue  # a tool-call turn: nothing for the engine
            raise Refused(400, f"messages[{i}].content must be text", "invalid_messages")
        stripped = MARKER.sub("", text) if "[tagengine:" in text else text
        if stripped != text and not stripped.strip():
            continue
        role = m["role"].lower()  # F-10: roles without case, as everywhere else
        role = role if role in ROLES else "system"
        out.append({"role": role, "content": stripped})
    return out


def with_replies(history: list[dict[str, str]], replies: tuple[str, ...]) -> list[dict[str, str]]:
    """The history with its assistant messages replaced, in order, by `replies`."""
    it = iter(replies)
    return [{"role": "assistant", "content": next(it, m["content"])} if m["role"] == "assistant" else m
            for m in history]


def budget_of(body: dict[str, Any], context: int | None) -> Budget:
    response = body.get("max_completion_tokens", body.get("max_tokens"))
    if not isinstance(response, int) or isinstance(response, bool) or response <= 0:
        response = DEFAULT_RESPONSE
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if model is not None and len(model) > MAX_MODEL_NAME:  # a model name keys caches: a long one names no family
        model = None
    return Budget(context=context or context_of(model)[0], response=response, response_min=min(256, response),
                  model=model)
