"""Every bound the server sets on what one request, one upstream answer or one connection may make it hold or
do, and on what it keeps in memory or on disk (SEC-1): each far above what a chat needs, each refused with an
error that names it. No other module of the server defines a bound (tests/test_serve_rooms.py).

`LIMITS` is the table docs/security.md prints ("Limits"); a test holds the two together, so a value changed
here without the docs fails. The values are constants, not options: each is far above a chat's need, and an
operator who exposes the server beyond this machine puts a proxy in front (docs/security.md), which has its
own. The connection cap follows the process's file-descriptor limit, which the operator sets (`ulimit -n`).
"""

from __future__ import annotations

from ..pages.ruleset_inspection import PROBLEMS_SHOWN
from ..records import frozen
from ..ruleset.source import MAX_BYTES as MAX_RULESET_BYTES
from ..state.model import MAX_STATE_BYTES

KIB = 1024
MIB = 1024 * KIB

# A request (POST /v1/chat/completions, POST /tagengine/api/checks). The largest context window in the model
# table (contexts.toml) is 1 048 576 tokens, about 4 MiB of English; a client that escapes every non-ASCII
# character (`\uXXXX`, six bytes each) may send twice that and more, and a chat app sends the history whole
# (the oldest messages are dropped by the fit, not by the app).
MAX_BODY = 16 * MIB  # bytes of one request body
MAX_MESSAGES = 20_000  # messages in one request: a chat of 10 000 turns
MAX_MESSAGE = 1 * MIB  # characters of one message's text (a reply in the history too): about 250 000 tokens
MAX_MODEL_NAME = 256  # characters of the request's `model`
MAX_CHAT_ID = 256  # characters of a chat's id (X-Tagengine-Chat, or `chat` in a JSON API body)
MAX_USER_ID = 256  # characters of a chat app's user id (serve --user-header: X-OpenWebUI-User-Id)
MAX_CHECK_VALUE = 1000  # characters in one value of a check (POST /tagengine/api/checks): a name or a number
# a campaign started through the JSON API (POST /tagengine/api/campaigns): a name, a file name and at most 40
# character names (pages/campaign_start.py MAX_CHARACTERS), each a line of a sheet, far below this
MAX_START_BODY = 64 * KIB  # bytes

# A form the pages post (url-encoded or multipart).
MAX_FORM_FIELDS = 20_000  # fields in one url-encoded form: a whole sheet of 200-row lists is far fewer
# parts in one multipart form: the pages post multipart only where a file is chosen (starting a campaign,
# the checker: under ten parts); a sheet's form is url-encoded (its script too)
MAX_FORM_PARTS = 1_000
MAX_EDIT_FORM = 4 * MIB  # bytes of a sheet's form: 200-row lists of 4,000-character cells stay far below
MAX_RULESET_FORM = 2 * MAX_RULESET_BYTES + 64 * KIB  # a pasted ruleset and an uploaded one, with the form's own bytes
MAX_SIGN_IN_FORM = 16 * KIB  # bytes: a key and where to go next
WRONG_KEYS_BURST = 10  # wrong keys a client address may give in a row...
WRONG_KEY_EVERY = 6.0  # ...then one more each this many seconds (10 a minute)
SESSION_SECONDS = 30 * 24 * 3600  # a sign-in lasts this long at most (the cookie's Max-Age too)
RULESETS_LISTED = 200  # ruleset files listed from --rulesets DIR
MAX_RULESET_FILE = 16 * MIB  # bytes of a campaign's ruleset file read from disk
# a campaign's file (`campaign export`): the ruleset's text and the start, each at its own bound, JSON-escaped (a
# control character is six bytes)
MAX_CAMPAIGN_FILE = 2 * (MAX_RULESET_FILE + MAX_STATE_BYTES)
CAMPAIGNS_KEPT = 1_000  # campaigns in a data folder: the pages start no more (`tagengine campaign remove` frees one)
RULESETS_KEPT = 256 * MIB  # bytes of the data folder's rulesets (`rulesets/`: uploaded on the pages, imported), in all

# The players' edits waiting for the next reply (edits/).
EDITS_WAITING = 200  # edits waiting at one key (each of at most 1,000 changes): play a turn to make room
EDIT_KEYS = 64  # chain keys of one campaign with edits waiting: the oldest key's edits go with the 65th

# An upstream answer. No model writes a reply of more than 128 000 tokens (about 512 000 characters); the
# reply is kept whole while it is applied, so its text is bounded like a message's.
MAX_REPLY = MAX_MESSAGE  # characters of a reply's text (choices[0]'s content, streamed or not)
MAX_ANSWER = 16 * MIB  # bytes of a whole (not streamed) answer, and of one event of a streamed answer
MAX_STREAM = 64 * MIB  # bytes of a streamed answer in all: a 128k-token reply and as much reasoning, in chunks

# A client connection (runtime/connections.py).
HEAD_TIMEOUT = 10.0  # seconds for a request's head, from its first byte (or the connection's opening)
BODY_TIMEOUT = 60.0  # seconds for a request's body, from the end of its head
KEEP_ALIVE = 75  # seconds an idle connection is kept between requests (nginx's default, S-29)
MAX_CONNECTIONS = 1024  # client connections at once, at most; fewer where file descriptors are fewer
FD_RESERVE = 32  # file descriptors kept for the rest: the database, the log, the listening socket, threads
FD_WANTED = 65_536  # the soft limit raised up to this (never past the hard one) at the start

# The upstream's answers (upstream/).
MAX_ANSWER_HEAD = 64 * KIB  # the most an answer's head may hold (h11, httpcore's parser, refused 16 KiB)
MAX_SETTLE_HEADER = 1024  # characters of x-tagengine-settle (its why quotes at most 500 of the upstream's message)
COUNT_TIMEOUT = 30.0  # seconds for one tokenize request (--count-with-upstream)
COUNT_REQUESTS = 8  # tokenize requests in flight at once
COUNT_ROUNDS = 32  # fit, fetch what it missed, fit again: a first fit with cuts takes about ten

# Work off the event loop (runtime/worker_threads.py).
LOOP_CHARS = 8 * KIB  # characters of new text a step may read on the event loop: more goes to a worker
WORKER_THREADS = 2  # heavy steps running at once; others wait their turn (light ones never wait for them)
THREAD_MIN = 16  # replies to replay: more go to a worker thread, so the event loop never waits on a long history
HASH_CHARS = 512 * KIB  # characters of a history: past them its look-up (hashing the replies) goes to a worker
SCAN_CHARS = 16 * KIB  # characters a worker's pattern search reads in one call: the loop's thread gets turns between

# What the server holds in memory, each the least recently used dropped first.
YOUNG_OBJECTS = 5000  # objects made (net of those freed) between two young collections of `tagengine serve` (PF-54)
WRITES_HELD = 32  # cache writes (snapshots, the pages' head) held to be written in one transaction (PF-55)
WRITES_HELD_SECONDS = 0.5  # and the seconds at most one waits: another process reading the file sees it that soon
WRITES_HELD_CHARS = 256 * KIB  # and the characters of snapshots they hold at most: a batch written at once stays small
IDLE_TRIM_SECONDS = 1.0  # seconds with no request in flight, after one ran, before the freed heap goes back (PF-47)
RULESET_LOOK_SECONDS = 1.0  # a campaign's ruleset file looked at again (changed on disk: loaded again) after this
SNAPSHOTS_HELD = 4096  # states, by chain key
SNAPSHOT_USES_HELD = 4096  # uses of snapshots held in memory, waiting to be written in one batch
SNAPSHOT_PARTS_HELD = 256  # card sets and party sheets whose snapshot text is kept (a player's edit makes new ones)
FIRST_KEYS_HELD = 64  # campaigns whose chain's first key is kept (a campaign's start made again is another)
HISTORIES_HELD = 16  # requests' messages with their reads, so the next request reads only what it adds (PF-59)
HISTORY_CHARS_HELD = 16 * MIB  # and the characters they hold, all together (their text, KEPT_MESSAGE_CHARS a message)
KEPT_MESSAGE_CHARS = 320  # a kept message counted beyond its text: its dict, strings (a memo's item and value:
#                          prefix_memo.ITEM_CHARS)
CHAIN_STEPS_HELD = 16_384  # chain steps remembered: every request hashes its whole history again (S-24)
CHAIN_STEP_CHARS = 16 * MIB  # and the characters of their replies (the keys hold them; a reply may be long)
EDIT_STATES_HELD = 64  # states with their waiting edits made (a page and a turn share them)
RECEIPTS_HELD = 256  # the last reply's receipts by chain key: a panel asks again for the same chat
RECEIPTS_CHARS = 256 * KIB  # characters of those receipts, all together
HOSTS_HELD = 256  # Host values whose verdict is remembered
SIGN_IN_ADDRESSES = 4096  # client addresses whose wrong keys are counted, the least recently seen forgotten first
MODELS_HELD = 1024  # model names remembered as able or unable to continue (a model name is at most 256 characters)
COUNTS_HELD = 8192  # texts whose upstream token counts are kept
COUNTED_TOKENS_HELD = 2_000_000  # token ids kept over all of them (4 bytes each: 8 MB)


@frozen
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
    Limit("the request's model name", MAX_MODEL_NAME, "characters",
          "served, the name not used to choose a tokenizer (an unknown model's)"),
    Limit("a chat's id", MAX_CHAT_ID, "characters", "400 `invalid_chat`"),
    Limit("a chat app's user id (--user-header)", MAX_USER_ID, "characters", "400 `invalid_user`"),
    Limit("one value of a check", MAX_CHECK_VALUE, "characters", "400 `invalid_check` naming the value"),
    Limit("a new campaign's JSON body", MAX_START_BODY, "bytes", "413 `request_too_large`, nothing made"),
    Limit("fields in a page's url-encoded form", MAX_FORM_FIELDS, "fields", "413 `request_too_large`, nothing saved"),
    Limit("parts in a page's multipart form", MAX_FORM_PARTS, "parts",
          "413 `request_too_large` (counted before a part is read), nothing saved"),
    Limit("a sheet's form", MAX_EDIT_FORM, "bytes", "413 page, nothing saved"),
    Limit("the checker's or a new campaign's form", MAX_RULESET_FORM, "bytes", "413 page, nothing saved"),
    Limit("problems the checker's page shows", PROBLEMS_SHOWN, "problems", "the rest counted, not shown"),
    Limit("the sign-in form", MAX_SIGN_IN_FORM, "bytes", "read as empty: a wrong key (401 page)"),
    Limit("wrong keys from one address in a row", WRONG_KEYS_BURST, "keys",
          f"429 page, then one more key each {WRONG_KEY_EVERY:g} s"),
    Limit("campaigns in the data folder", CAMPAIGNS_KEPT, "campaigns",
          "the pages start no more (a 422 page saying so); `tagengine campaign remove NAME` frees one"),
    Limit("rulesets the data folder keeps, in all", RULESETS_KEPT, "bytes",
          "an upload past it refused (a 422 page saying so); removing a campaign removes its file"),
    Limit("edits waiting at one point of a chat", EDITS_WAITING, "edits",
          "the edit refused (`too-many-edits`): play a turn"),
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
    Limit("text a worker thread's pattern search reads in one call", SCAN_CHARS, "characters",
          "the text is searched in parts, the event loop's thread taking its turn between them"),
)


def connections_for(fd_limit: int) -> int:
    """The connection cap under a file-descriptor limit: each client connection may hold one to the upstream
    too, and FD_RESERVE stay for the rest (256 descriptors: 112 connections)."""
    return max(1, min(MAX_CONNECTIONS, (fd_limit - FD_RESERVE) // 2))
