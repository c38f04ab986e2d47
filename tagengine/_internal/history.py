"""A chat history as the engine reads it: `{"role", "content"}` messages (DEC-29), checked in one place.

`build_prompt`, `Chat.from_history` and `tagengine preview --history` read a history through here, so
they agree on what a message is: a role of system, user or assistant matched without case (F-10), and
text content. Every bad message is named at once.

Two readers keep rules of their own, because what they read is not a bare history: the server's
`server.chat_request.read_marked` reads an OpenAI request (content given as parts, a tool call's empty
content, campaign markers; a bad message is a 400 for the first one found), and replay's `batch.replay_line`
reads a transcript line (a message keeps every field and any role; only assistant replies are applied).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import HistoryError, Problem

ROLES = ("system", "user", "assistant")
_ROLE = {r: r for r in ROLES}  # roles already in lower case: one look-up; anything else takes the slow path


def message_problem(m: Any) -> str | None:
    """Why `m` is not a message, or None."""
    try:
        role, content = m.get("role"), m.get("content")
    except AttributeError:
        return "a message is an object"
    if not isinstance(role, str) or role.lower() not in ROLES:
        return 'its "role" is user, assistant or system'
    if not isinstance(content, str):
        return 'its "content" is text'
    return None


def read_messages(history: Iterable[Mapping[str, Any]] | None, source: str = "history",
                  where: str = "history[{}]") -> list[dict[str, str]]:
    """The history as plain messages with lower-case roles; HistoryError names every message that is not
    `{"role", "content"}` (its position is `where` formatted with its index)."""
    if history is None or isinstance(history, str | bytes | Mapping):
        raise HistoryError([Problem("$", "not-history", "a history is a list of messages", type(history).__name__)],
                           source)
    try:
        items = list(history)
    except TypeError:
        raise HistoryError([Problem("$", "not-history", "a history is a list of messages",
                                    type(history).__name__)], source) from None
    out, problems = [], []
    for i, m in enumerate(items):
        try:  # the common case first, without a call per message: this runs on every turn
            role, content = _ROLE.get(m["role"]), m["content"]
        except (KeyError, TypeError, IndexError):
            role = content = None
        if role is not None and type(content) is str:
            out.append({"role": role, "content": content})
            continue
        why = message_problem(m)
        if why is not None:
            role = m.get("role") if isinstance(m, Mapping) else None
            problems.append(Problem(where.format(i), "bad-message", why, role if isinstance(role, str) else None))
            continue
        out.append({"role": m["role"].lower(), "content": m["content"]})
    if problems:
        raise HistoryError(problems, source)
    return out
