"""Requests that are not a turn of the game (decision TR-5): a chat app's connection test,
an impersonation (the model writes the player's next message), another extension's quiet prompt (a summary,
an expression, an image prompt). Such a request is passed to the model as the app sent it (markers taken
out): not taught the game, its reply not applied, and nothing the pages show moves. Its answer says why in
`x-tagengine-quiet`.

How one is told, in order (docs/sillytavern.md; SillyTavern 1.19.0's request shapes):

1. `X-Tagengine-Type` (SillyTavern: *Additional Parameters* -> headers, `"{{lastGenerationType}}"`):
   `quiet` or `impersonate` is quiet. `normal`, `regenerate`, `swipe` and `continue` are turns, and step 3
   is skipped, but not step 2: the macro keeps the last generation's type, so a Test Message carries the
   type of the turn before it.
2. SillyTavern's *Test Message*: exactly one message, the user's "Hi", not streamed.
3. Without a header: the last message is a system message with one of SillyTavern's default instructions,
   "Ignore previous instructions" (its extensions' quiet prompts) or "[Write your next reply from the point
   of view of" (Impersonate). Edited instructions are not recognised: then the header is the way.

Open WebUI's background tasks (a chat's title, its tags, follow-up questions, a search or retrieval query, an image
prompt, autocompletion, an emoji, the choice of a tool, a merge of several models' answers) are told the same way:
`X-Tagengine-Type: {{TASK}}` in the connection's headers names the task (`title_generation`, ...), and is empty on a
chat's own turn, which then no Open WebUI task prompt below makes quiet, whatever its text (a file's context put
before the user's message starts "### Task:" too: OW-2); SillyTavern's step 3 still applies (its macro is empty
until a chat's first generation). Without the header, Open WebUI 0.12.4's default task prompts are told by their
openings (TR-10, OW-2): "### Task:" in the last message (but the file context's "### Task:\nRespond to the user
query using the provided context", a turn), the emoji's and the merge's own first words, and a tool choice's
system message "Available Tools:" before one user message.

A request read as a turn whose history holds no reply and one user message (a first message: a new chat, or
an extension's raw prompt with no chat in it) is played, but while the pages show a later turn of that
campaign it leaves them as they are (a history of two user messages and no reply is a chat whose replies were
deleted: a turn) (`turn.begin`, `Turn.on_pages`): the one structural sign left, and a new chat moves them from its
second reply on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TYPE_HEADER = "x-tagengine-type"
QUIET_HEADER = "x-tagengine-quiet"
TURN_TYPES = frozenset({"normal", "regenerate", "swipe", "continue"})
QUIET_TYPES = frozenset({"quiet", "impersonate"})
TEST_MESSAGE = [{"role": "user", "content": "Hi"}]  # SillyTavern's Test Message, whole (openai.js)
QUIET_PROMPT = "Ignore previous instructions"  # how SillyTavern's extensions' default quiet prompts start
IMPERSONATE = "[Write your next reply from the point of view of "  # SillyTavern's default impersonation prompt
TASK_PROMPT = "### Task:"  # how Open WebUI's default task prompts start (a title, tags, follow-ups, a query...)
# Open WebUI 0.12.4's file context (its RAG template), put before a chat turn's user message: a turn
FILE_CONTEXT = "### Task:\nRespond to the user query using the provided context"
# Open WebUI 0.12.4's other default task prompts (config.py): an emoji, the merge of several models' answers
OTHER_TASKS = ("Your task is to reflect the speaker's likely facial expression",
               "You have been provided with a set of responses from various models")
TOOL_CHOICE = "Available Tools:"  # its function-calling task: this system message, then one user message


def is_task(kind: str) -> bool:
    """An Open WebUI task named by its `{{TASK}}` (`title_generation`, `tags_generation`, `function_calling`...)."""
    return kind.endswith("_generation") or kind == "function_calling"


def quiet_reason(headers: Mapping[str, str], body: Mapping[str, Any], history: list[dict[str, str]]) -> str | None:
    """Why the request is not a turn of the game (the `x-tagengine-quiet` value), or None: a turn. `history`:
    the plain messages, markers taken out (`MarkedHistory.history`)."""
    said = headers.get(TYPE_HEADER)
    kind = said.strip().lower() if said is not None else None
    if kind in QUIET_TYPES or (kind is not None and is_task(kind)):
        return f"{TYPE_HEADER}: {kind}"
    if len(history) == 1 and history == TEST_MESSAGE and body.get("stream") is not True:
        return "a connection test (SillyTavern's Test Message)"
    if kind in TURN_TYPES or not history:
        return None
    # empty: Open WebUI's {{TASK}} on a chat's own turn, a turn whatever its `### Task:` text (OW-2); but also
    # SillyTavern's {{lastGenerationType}} from a chat's opening to its first generation, so its own prompts below
    # still tell
    task = task_prompt(history) if kind != "" else None
    if task is not None:
        return task
    if history[-1]["role"] != "system":
        return None
    last = history[-1]["content"].lstrip()
    if last.startswith(QUIET_PROMPT):
        return "an extension's quiet prompt (Ignore previous instructions...)"
    if last.startswith(IMPERSONATE):
        return "an impersonation (Write your next reply from the point of view of...)"
    return None


def task_prompt(history: list[dict[str, str]]) -> str | None:
    """Why `history` is one of Open WebUI's default task prompts (TR-10, OW-2), or None."""
    last = history[-1]["content"].lstrip()
    if history[-1]["role"] in ("user", "system"):
        if last.startswith(TASK_PROMPT) and not last.startswith(FILE_CONTEXT):
            return "a chat app's task prompt (### Task:, Open WebUI's title, tags, follow-ups...)"
        if last.startswith(OTHER_TASKS):
            return "a chat app's task prompt (Open WebUI's emoji, or its merge of several models' answers)"
    if len(history) == 2 and history[0]["role"] == "system" and history[0]["content"].startswith(TOOL_CHOICE):
        return "a chat app's task prompt (Open WebUI's choice of a tool)"
    return None
