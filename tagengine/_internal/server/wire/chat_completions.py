"""The OpenAI chat completions API's documents, written and read here only: a chat completion, a streamed
chunk, a model list, an error. What the server rewrites of an answer is choice 0's text; every other field
passes as it came, so these read and write only that much."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# a streamed chunk's fields that say which completion it belongs to: a chunk the server adds repeats them
_CHUNK_IDENTITY = ("id", "object", "created", "model")


def error_doc(message: str, code: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """`{"error": {"message", "type", "code"}}`: an error response's body, or a stream's error event."""
    return {"error": {"message": message, "type": kind, "code": code}}


def error_message(doc: Any) -> str | None:
    """The message of an error document (`{"error": {"message"}}`, or `{"error": "text"}` as some servers
    answer); None when it has none."""
    inner = doc.get("error") if isinstance(doc, dict) else None
    detail = inner.get("message") if isinstance(inner, dict) else inner
    return detail if isinstance(detail, str) and detail else None


def is_error_event(doc: dict[str, Any]) -> bool:
    """A streamed event that is the upstream's own error, not a chunk."""
    return "error" in doc and "choices" not in doc


def first_content(doc: Any) -> str | None:
    """choices[0].message.content of a chat completion, when it is text."""
    try:
        content = doc["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def set_first_content(doc: dict[str, Any], text: str) -> None:
    """Rewrite choices[0].message.content of a chat completion that `first_content` read."""
    doc["choices"][0]["message"]["content"] = text


def first_choice(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A streamed chunk's choice of index 0 (an index left out is 0); None when it has none, whatever its
    `choices` holds."""
    choices = doc.get("choices")
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


def delta_content(choice: dict[str, Any]) -> str | None:
    """A streamed choice's delta text, when it has one."""
    delta = choice.get("delta")
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else None


def set_delta_content(choice: dict[str, Any], text: str) -> None:
    """Rewrite a streamed choice's delta text (a choice with no delta object gets one)."""
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        delta = choice["delta"] = {}
    delta["content"] = text


def set_unfinished(choice: dict[str, Any]) -> None:
    """Mark a streamed choice as going on (a continuation of the reply follows it)."""
    choice["finish_reason"] = None


def chunk_content(doc: Any) -> tuple[str | None, bool]:
    """A streamed chunk's choice 0: its delta text, and whether the choice finished."""
    if not isinstance(doc, dict):
        return None, False
    choice = first_choice(doc)
    if choice is None:
        return None, False
    return delta_content(choice), choice.get("finish_reason") is not None


def content_chunk(text: str, *, like: Mapping[str, Any] | None = None, finish_reason: str | None = None,
                  **fields: Any) -> dict[str, Any]:
    """A streamed chunk whose choice 0 adds `text` (none: an empty delta), with the identity of `like` (a chunk
    of the same completion) and `fields`."""
    ident = {k: like[k] for k in _CHUNK_IDENTITY if k in like} if like is not None else {}
    return {**ident, **fields, "choices": [{"index": 0, "delta": {"content": text} if text else {},
                                            "finish_reason": finish_reason}]}


def stop_chunk() -> dict[str, Any]:
    """The chunk that ends a reply where it stands (finish_reason `stop`)."""
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def chat_completion(text: str, **fields: Any) -> dict[str, Any]:
    """A whole chat completion of one choice, `text` its message."""
    return {**fields, "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


def model_ids(doc: Any) -> list[str]:
    """The ids of a model list (`GET /v1/models`'s answer), in its order; none for what is not one."""
    listed = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(listed, list):
        return []
    return [m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)]


def with_models(doc: Any, ids: list[tuple[str, str]], owner: str) -> Any:
    """A model list with more models (`(id, name)` each) after its own; what is not a model list comes back as it
    is."""
    if not (isinstance(doc, dict) and isinstance(doc.get("data"), list)):
        return doc
    more = [{"id": i, "object": "model", "created": 0, "owned_by": owner, "name": name} for i, name in ids]
    return {**doc, "data": [*doc["data"], *more]}


def model_list(*names: str, owner: str) -> dict[str, Any]:
    """`GET /v1/models`'s answer."""
    return {"object": "list", "data": [{"id": n, "object": "model", "created": 0, "owned_by": owner} for n in names]}
