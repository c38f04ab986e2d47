"""Every bound the server sets on what one request, one upstream answer or one connection may make it hold or
do (issue 26, SEC-1): each far above what a chat needs, each refused with an error that names it.

`LIMITS` is the table docs/security.md prints ("Limits"); a test holds the two together, so a value changed
here without the docs fails. The values are constants, not options: each is far above a chat's need, and an
operator who exposes the server beyond this machine puts a proxy in front (docs/security.md), which has its
own. The connection cap follows the process's file-descriptor limit, which the operator sets (`ulimit -n`).
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB

# A request (POST /v1/chat/completions, POST /tagengine/checks). The largest context window in the model
# table (contexts.toml) is 1 048 576 tokens, about 4 MiB of English; a client that escapes every non-ASCII
# character (`\uXXXX`, six bytes each) may send twice that and more, and a chat app sends the history whole
# (the oldest messages are dropped by the fit, not by the app).
MAX_BODY = 16 * MIB  # bytes of one request body
MAX_MESSAGES = 20_000  # messages in one request: a chat of 10 000 turns
MAX_MESSAGE = 1 * MIB  # characters of one message's text (a reply in the history too): about 250 000 tokens

# An upstream answer. No model writes a reply of more than 128 000 tokens (about 512 000 characters); the
# reply is kept whole while it is applied, so its text is bounded like a message's.
MAX_REPLY = MAX_MESSAGE  # characters of a reply's text (choices[0]'s content, streamed or not)
MAX_ANSWER = 16 * MIB  # bytes of a whole (not streamed) answer, and of one event of a streamed answer
MAX_STREAM = 64 * MIB  # bytes of a streamed answer in all: a 128k-token reply and as much reasoning, in chunks

# A client connection (connections.py).
HEAD_TIMEOUT = 10.0  # seconds for a request's head, from its first byte (or the connection's opening)
BODY_TIMEOUT = 60.0  # seconds for a request's body, from the end of its head
KEEP_ALIVE = 75  # seconds an idle connection is kept between requests (nginx's default, S-29)
MAX_CONNECTIONS = 1024  # client connections at once, at most; fewer where file descriptors are fewer
FD_RESERVE = 32  # file descriptors kept for the rest: the database, the log, the listening socket, threads
FD_WANTED = 65_536  # the soft limit raised up to this (never past the hard one) at the start

# Work off the event loop (offload.py).
LOOP_CHARS = 8 * KIB  # characters of new text a step may read on the event loop: more goes to a worker
WORKER_THREADS = 2  # heavy steps running at once; others wait their turn (light ones never wait for them)


@dataclass(frozen=True)
class Limit:
    """A row of docs/security.md's table: what is bounded, the value, its unit, what happens past it."""

    name: str
    value: float
    unit: str
    past: str


LIMITS = (
    Limit("request body", MAX_BODY, "bytes", "413 `request_too_large` (a Content-Length past it: before reading)"),
    Limit("messages in a request", MAX_MESSAGES, "messages", "413 `too_many_messages`"),
    Limit("one message's text", MAX_MESSAGE, "characters", "413 `message_too_large` naming `messages[i]`"),
    Limit("a reply's text from the upstream", MAX_REPLY, "characters",
          "whole: 502 `reply_too_large`; streamed: an error event, nothing kept"),
    Limit("a whole upstream answer, or one event of a stream", MAX_ANSWER, "bytes",
          "whole: 502 `upstream_too_large`; streamed: an error event, nothing kept"),
    Limit("a streamed upstream answer in all", MAX_STREAM, "bytes", "an error event, nothing kept"),
    Limit("a request's head", HEAD_TIMEOUT, "seconds", "408, the connection closed (nothing sent if no byte came)"),
    Limit("a request's body", BODY_TIMEOUT, "seconds", "408, the connection closed"),
    Limit("an idle connection between requests", KEEP_ALIVE, "seconds", "closed"),
    Limit("client connections at once", MAX_CONNECTIONS, "connections",
          "the oldest idle one closed; none idle: 503, closed"),
    Limit("new text a step reads on the event loop", LOOP_CHARS, "characters", "the step runs in a worker thread"),
    Limit("heavy steps at once", WORKER_THREADS, "threads", "the next waits its turn"),
)


def connections_for(fd_limit: int) -> int:
    """The connection cap under a file-descriptor limit: each client connection may hold one to the upstream
    too, and FD_RESERVE stay for the rest (256 descriptors: 112 connections)."""
    return max(1, min(MAX_CONNECTIONS, (fd_limit - FD_RESERVE) // 2))
