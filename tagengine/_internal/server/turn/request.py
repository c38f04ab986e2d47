"""Reading a chat request: the bounded body, its JSON, the campaign marker, the plain history the engine
replays, the token budget. Shared by the chat turn (turn.py) and the checks endpoint (routes/checks.py).

A request's messages are read here, not by `history.py` (the engine's reader, which refuses what is not a
message): a chat app sends what it sends, so an unknown role is read as system, content given as parts is
read as its text parts, and a tool-call turn with no content is dropped (S-6, S-27); the plain history that
comes out is what `history.py`'s rules accept."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from itertools import islice
from operator import itemgetter
from typing import Any, cast

from ...history import ROLES
from ...prompt import Budget
from ...prompt.contexts import context_of
from ...records import frozen
from ..errors import Refused
from ..limits import (
    HASH_CHARS,
    HISTORIES_HELD,
    HISTORY_CHARS_HELD,
    KEPT_MESSAGE_CHARS,
    LOOP_CHARS,
    MAX_CHAT_ID,
    MAX_MESSAGE,
    MAX_MESSAGES,
    MAX_MODEL_NAME,
    SCAN_CHARS,
)
from ..wire.json_codec import loads

log = logging.getLogger("tagengine.serve")
CHAT_HEADER = "x-tagengine-chat"  # a chat's id, so two chats that hold the same messages are told apart (ED-25)
DEFAULT_CONTEXT = 8192
DEFAULT_RESPONSE = 1024
_CONTENT = itemgetter("content")
MARKER = re.compile(r'\[tagengine:[ \t]*campaign[ \t]*=[ \t]*"([^"\n]*)"[ \t]*\]')
# what a person may have meant as a marker (any case, other spaces and quotes: a no-break space, 'heist', “heist”);
# found from its `[`, so a message without one costs a scan for `[` (TR-8)
NEAR_MARKER = re.compile(r"(?i)\[\W{0,3}tag\W{0,3}engine\W{0,3}campaign[^\]\n]{0,120}\]?")
NEAR_LONGEST = 1 + 3 + 3 + 3 + 6 + 3 + 8 + 120 + 1  # the longest text NEAR_MARKER matches
WARNING_HEADER = "x-tagengine-warning"
# a model id that names a campaign: `/v1/models` lists one per campaign, so a chat app's model picker is its campaign
# picker, and the upstream is sent its own model in its place (OW-1)
CAMPAIGN_MODEL = "tagengine:"
# `X-Tagengine-Show: narration`: this request's reply is shown as its narration, as --hide-tags shows every reply; a
# chat app with no way to hide tags (Open WebUI) asks it in its connection's headers (OW-4)
SHOW_HEADER = "x-tagengine-show"


def check_sizes(messages: list[Any], history: list[dict[str, str]], body_bytes: int | None = None) -> None:
    """A 413 for a message of the plain `history` (read from the request's `messages`) of more than MAX_MESSAGE
    characters, naming it as `messages[i]` (SEC-1). Linear, and cheap: a length per message. `body_bytes`: the
    size of the JSON body they came in; one of at most MAX_MESSAGE bytes holds no longer text (each character of
    a message, of its parts joined too, is at least one byte there), so its messages are not looked at."""
    if body_bytes is not None and body_bytes <= MAX_MESSAGE:
        return
    longest = max(map(len, map(_CONTENT, history)), default=0)
    if longest > MAX_MESSAGE:
        i = next((i for i, m in enumerate(messages) if isinstance(m, dict)
                  and len(text_of(m.get("content")) or "") > MAX_MESSAGE), None)
        where = f"messages[{i}]" if i is not None else "a message"
        raise Refused(413, f"{where} has {longest} characters of text: the most this server reads in one message "
                           f"is {MAX_MESSAGE}", "message_too_large")


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request as JSON; a body that is not an object with a list of messages is a 400 naming why (each
    message is checked by `read_marked`)."""
    try:
        body = loads(raw, rebuilt="messages")  # the engine sends plain role/content messages on
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"the request body is not JSON: {e}", "invalid_json") from None
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object", "invalid_request")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "`messages` must be a non-empty list of messages", "invalid_messages")
    check_count(messages)
    return body


def messages_of(value: Any) -> list[Any]:
    """A JSON API's `messages`: a list, else the 400 that says so (each message is read by `read_marked`)."""
    if not isinstance(value, list):
        raise Refused(400, "`messages` must be a list of messages: {\"role\", \"content\"}", "invalid_messages")
    return value


def check_count(messages: list[Any]) -> None:
    """A 413 for more than MAX_MESSAGES messages, before any is read (SEC-1)."""
    if len(messages) > MAX_MESSAGES:
        raise Refused(413, f"`messages` has {len(messages)} items: the most this server reads in one request is "
                           f"{MAX_MESSAGES}", "too_many_messages")


def text_of(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
    return None


_ROLE = {r: r for r in ROLES}  # a role as most chat apps send it: one look-up, no lower()


@frozen
class MarkedHistory:
    """A request's messages, read in one pass (the history is read on every turn, S-27).

    `campaign`: the last `[tagengine: campaign="NAME"]` marker in a system or user message (the Author's
    Note is per chat; a model's reply cannot switch the campaign). `history`: role and text of each message,
    markers stripped, a message its marker left empty dropped, roles without case (F-10), an unknown role
    read as system. `problem`: the first message whose content is not text, which has no plain history (a
    request passed through is not read, so it may carry such content). Read-only, `history` and its dicts too:
    they are shared with the reads of later requests that start as this one did (`RecentHistories`)."""

    campaign: str | None
    history: list[dict[str, str]]
    problem: Refused | None = None
    near_miss: str | None = None  # the first near-miss marker in a system or user message: sent on as it is

    def plain(self) -> list[dict[str, str]]:
        """The history, or the 400 that says why there is none."""
        if self.problem is not None:
            raise self.problem
        return self.history


def read_marked(messages: list[Any]) -> MarkedHistory:
    """Raises Refused (400) for an item that is not a message: an object with a string role."""
    return cast(MarkedHistory, read_marked_within(messages, None))  # no bound: never None


def read_marked_within(messages: list[Any], scanned: int | None,
                       read: tuple[MarkedHistory, int] | None = None) -> MarkedHistory | None:
    """`read_marked`, or None as soon as the text it scans with a regular expression passes `scanned` characters
    (None: no bound): a system or user message's text (the near-miss scan), and a reply's only when it holds
    `[tagengine:` (which `MARKER.sub` takes out); a reply without it is only searched for that literal, at the speed
    memory is read. So the pass that reads a long chat of short user messages on the event loop is the one that
    finds it may (`ServerContext.read_history`, SEC-11, PF-32), and a longer one goes to a worker thread. `read`:
    the read of the first n messages, (its MarkedHistory, n), which this one goes on from (`RecentHistories`)."""
    left: float = math.inf if scanned is None else scanned
    found = near = problem = None
    out: list[dict[str, str]] = []
    start = 0
    if read is not None:
        before, start = read
        if start == len(messages):  # the same messages again: their read, as it was (read-only, as its history)
            return before
        found, near, problem, out = before.campaign, before.near_miss, before.problem, before.history.copy()
    for i, m in enumerate(islice(messages, start, None) if start else messages, start):
        if type(m) is dict:  # the common case first: a message with a known role, text and no marker
            role, content = m.get("role"), m.get("content")
            low = _ROLE.get(role) if type(role) is str else None  # a role may be anything, a list too
            if low is not None and type(content) is str and "[tagengine:" not in content:
                if low != "assistant":
                    left -= len(content)
                    if left < 0:
                        return None
                    if near is None and "[" in content:
                        near = near_miss(content)  # by parts (SEC-11); only the first is kept
                # the request's own dict when it is just that (read-only from here: later reads share it,
                # `RecentHistories`); a role `_ROLE` knows is written as it is kept, so `low` is the dict's own role
                out.append(m if len(m) == 2 else {"role": low, "content": content})
                continue
        role = m.get("role") if isinstance(m, dict) else None
        if not isinstance(role, str):
            raise Refused(400, f"messages[{i}] is not a message: expected {{\"role\", \"content\"}}",
                          "invalid_messages")
        content = m.get("content")
        text = content if type(content) is str else text_of(content)
        low = _ROLE.get(role) or role.lower()
        if text is None:
            if not (content is None and low == "assistant") and problem is None:  # else a tool-call turn
                problem = Refused(400, f"messages[{i}].content must be text", "invalid_messages")
            continue
        if low != "assistant" or "[tagengine:" in text:
            left -= len(text)
            if left < 0:
                return None
        if low in ("system", "user") and near is None:
            near = near_miss(text)
        if "[tagengine:" in text:  # the marker's own start: most messages are skipped without the regex
            if low in ("system", "user"):
                for hit in MARKER.finditer(text):
                    found = hit.group(1)
            stripped = MARKER.sub("", text)
            if stripped != text and not stripped.strip():
                continue
            text = stripped
        out.append({"role": low if low in _ROLE else "system", "content": text})
    return MarkedHistory(found, out, problem, near)


class RecentHistories:
    """The reads of the last few requests' messages, so a request that starts with all of one of them (the next
    turn: a reply and a message more; a regenerate or a swipe: the same list; a continue: a prefill more) reads only
    what follows it. Finding that shared start is one comparison of the two lists, in C, a seventh of the read's
    cost for a 200-message chat (PF-59). Only a request whose every message is an object of a role as `ROLES` spells
    it and a string content, and nothing else, is kept (so what is held is counted, and a comparison is never deeper
    than a message): at most HISTORIES_HELD of them, HISTORY_CHARS_HELD in all, each message counted as its text and
    KEPT_MESSAGE_CHARS (its object and strings). A kept start is held once: the next request's own objects only
    for what it adds. On the event loop the comparisons read at most HASH_CHARS characters of kept text in
    all, as a history's hashing does there (SEC-2); a kept start past that is not looked for. The table is replaced
    whole, never changed in place, so a worker thread's read may share it: a race loses an entry, never a value. Not a
    `PrefixMemo`: a read's marker, near miss and problem are known only at its end, so a read goes on from a whole kept
    list, not from any start it shares (values per message would cost what the read does)."""

    def __init__(self) -> None:
        # (the messages as they came, their read, what they hold), the most recently used first
        self._runs: tuple[tuple[list[Any], MarkedHistory, int], ...] = ()

    def read(self, messages: list[Any], scanned: int | None) -> MarkedHistory | None:
        """`read_marked_within(messages, scanned)`, the text of a kept start not read again (nor counted in
        `scanned`: the bound is on the work this read does). `scanned` None: off the event loop, no bound."""
        runs = self._runs  # read once: another thread may replace it
        at, n = -1, 0
        left = math.inf if scanned is None else HASH_CHARS  # the kept text the comparisons may read
        for i, (kept, _, held) in enumerate(runs):
            k = len(kept)
            if k <= n or k > len(messages) or held > left:
                continue
            if messages[k - 1] != kept[-1]:  # the common miss: one message read
                left -= len(kept[-1]["content"]) + KEPT_MESSAGE_CHARS  # a kept message is a flat role/content object
                continue
            left -= held
            if (messages if k == len(messages) else messages[:k]) == kept:  # a slice only where it must
                at, n = i, k
                if k == len(messages):  # none can be longer
                    break
        read = (runs[at][1], n) if at >= 0 else None
        marked = read_marked_within(messages, scanned, read)
        if marked is None:
            return None
        if n < len(messages):  # else the same messages again: nothing new to keep (islice would step over them all)
            held = runs[at][2] if at >= 0 else 0
            for m in islice(messages, n, None):
                if type(m) is not dict or len(m) != 2 or type(role := m.get("role")) is not str or role not in _ROLE \
                        or type(content := m.get("content")) is not str:
                    return marked  # not kept: what is held is counted as its text, and compared one level deep
                held += len(content) + KEPT_MESSAGE_CHARS
            if held <= HISTORY_CHARS_HELD // 2:
                # the kept start's own objects, equal to this request's (just compared), so the start is held once
                kept = list(messages) if at < 0 else [*runs[at][0], *islice(messages, n, None)]
                new, total = [(kept, marked, held)], held
                for i, run in enumerate(runs):
                    if i == at:  # the new one starts with all of it
                        continue
                    if len(new) == HISTORIES_HELD or total + run[2] > HISTORY_CHARS_HELD:
                        break
                    total += run[2]
                    new.append(run)
                self._runs = tuple(new)
                return marked
        if at > 0:  # kept before, and used again: it goes first
            self._runs = (runs[at], *runs[:at], *runs[at + 1:])
        return marked

    def read_whole(self, messages: list[Any]) -> MarkedHistory:
        """`read` with no bound (`read_marked`)."""
        return cast(MarkedHistory, self.read(messages, None))


def unmarked(messages: list[Any]) -> bool:
    """Whether `read_marked` would find neither a campaign marker nor a near miss in `messages` and refuse none of
    them, told without reading them all: every item an object with a string role and string content, and no
    system or user text (the only ones a marker or a near miss is read from; an unknown role too, read as system)
    holding a `[` that starts either. False: read them (`ServerContext.read_history`), which also says why. A
    request with no campaign from its URL or --campaign that is unmarked passes through without that read, a fifth
    of its CPU (PF-33); the text it scans is bounded as the read's is (LOOP_CHARS, SEC-11)."""
    left = LOOP_CHARS
    for m in messages:
        if type(m) is not dict:
            return False
        role, content = m.get("role"), m.get("content")
        if type(role) is not str or type(content) is not str:
            return False
        if role != "assistant":  # any other spelling of it is scanned: more than the read scans, never less
            left -= len(content)
            if left < 0:
                return False
            if "[" in content and ("[tagengine:" in content or NEAR_MARKER.search(content) is not None):
                return False
    return True


def marker_warning(marked: MarkedHistory, campaign: str | None) -> dict[str, str] | None:
    """A near-miss marker said in the log and in `x-tagengine-warning` (TR-8); None when there is none. The
    request goes on as it would have: to `campaign` (a default, or a marker elsewhere), else passed through."""
    if marked.near_miss is None:
        return None
    said = (f"a campaign marker was not read and goes to the model as it is: {marked.near_miss!a}; write it "
            '[tagengine: campaign="NAME"] (ASCII spaces and double quotes)')
    log.warning("%s; the request %s", said, "passes through" if campaign is None else f"plays campaign {campaign}")
    return {WARNING_HEADER: said}


def near_miss(text: str) -> str | None:
    """The first thing in `text` that looks like a campaign marker and is not one, or None. Scanned SCAN_CHARS
    characters at a time: a regex call holds the interpreter until it returns (some 120 ms a megabyte of brackets
    on a slow machine), and a worker thread that scans a long message in one call kept the event loop's thread
    waiting for each message whole at every switch (SEC-11). A match is at most NEAR_LONGEST characters, so one
    that starts in a part is found whole by a call that may read that far past the part."""
    start, end = 0, len(text)
    while start < end:
        stop = start + SCAN_CHARS
        hit = NEAR_MARKER.search(text, start, min(end, stop + NEAR_LONGEST))
        if hit is None or hit.start() >= stop:
            start = stop
        elif MARKER.match(text, hit.start()) is None:
            return hit.group()
        else:
            start = hit.end()
    return None


def without_markers(messages: list[Any]) -> list[Any]:
    """The messages as they came, the campaign markers taken out of their text (a message the marker left
    empty dropped, as `read_marked` does): what a request passed on to the model carries."""
    out = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str) and "[tagengine:" in content:
            stripped = MARKER.sub("", content)
            if stripped != content and not stripped.strip():
                continue
            m = {**m, "content": stripped}
        out.append(m)
    return out


def with_replies(history: list[dict[str, str]], replies: tuple[str, ...]) -> list[dict[str, str]]:
    """The history with its assistant messages replaced, in order, by `replies`."""
    it = iter(replies)
    return [{"role": "assistant", "content": next(it, m["content"])} if m["role"] == "assistant" else m
            for m in history]


def asked_response(value: Any) -> int | None:
    """A response budget a client asked for (`max_completion_tokens` or `max_tokens`): a whole number above
    zero; anything else (null, true, -1, a string) is not one, and goes upstream as it came."""
    return value if type(value) is int and value > 0 else None


def budget_of(body: dict[str, Any], context: int | None) -> Budget:
    # the first field that asks for one: `max_completion_tokens: null` beside `max_tokens: 300` asks for 300
    asked = asked_response(body.get("max_completion_tokens"))
    response = asked if asked is not None else asked_response(body.get("max_tokens")) or DEFAULT_RESPONSE
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if model is not None and len(model) > MAX_MODEL_NAME:  # a model name keys caches: a long one names no family
        model = None
    return Budget(context=context or context_of(model)[0], response=response, response_min=min(256, response),
                  model=model)


def campaign_choice(marked: MarkedHistory, asked: Any, prefixed: str | None,
                    default: str | None, model: Any = None) -> tuple[str, str] | None:
    """The campaign a chat plays and how it was chosen, the one rule every route follows (S-5): a JSON API body's
    `campaign` ("asked"; a chat completion has none), else the chat's marker ("marker"), else a campaign's model
    id in the request's `model` ("model", OW-1), else the /c/NAME prefix ("url"), else --campaign ("default");
    None: its requests pass through."""
    if asked is not None and not isinstance(asked, str):
        raise Refused(400, "`campaign` must be a campaign's name", "invalid_request")
    for name, by in ((asked, "asked"), (marked.campaign, "marker"), (model_campaign(model), "model"),
                     (prefixed, "url"), (default, "default")):
        if name:
            return name, by
    return None


def hides(headers: Mapping[str, str], default: bool) -> bool:
    """Whether the reply is shown as its narration: `X-Tagengine-Show: narration`, `receipts`, else `default`
    (--hide-tags); another value is a 400."""
    said = headers.get(SHOW_HEADER)
    if said is None or not said.strip():
        return default
    kind = said.strip().lower()
    if kind not in ("narration", "receipts"):
        raise Refused(400, f"{SHOW_HEADER} is `narration` or `receipts`", "invalid_request")
    return kind == "narration"


def model_campaign(model: Any) -> str | None:
    """The campaign a request's `model` names (`tagengine:NAME`, OW-1), else None; a name past MAX_MODEL_NAME
    characters names none (the campaign's own 404 says an unknown one)."""
    if type(model) is str and model.startswith(CAMPAIGN_MODEL) and len(model) <= MAX_MODEL_NAME:
        return model[len(CAMPAIGN_MODEL):] or None
    return None


def chat_of(value: Any) -> str | None:
    """A chat's id, as a request gives it (`X-Tagengine-Chat`, or `chat` in a JSON API body; ED-25): printable
    text of at most MAX_CHAT_ID characters, else a 400; None (or empty): the request names no chat."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_CHAT_ID or not value.isprintable():
        raise Refused(400, f"a chat's id (X-Tagengine-Chat, `chat`) is printable text of at most {MAX_CHAT_ID} "
                           "characters", "invalid_chat")
    return value
