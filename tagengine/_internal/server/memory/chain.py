"""State from the history the chat app sends: a hash chain over the replies, the store as a cache.

Key 0 hashes the campaign, the ruleset's digest and the start state; each assistant message extends the
key with its text as stored. The newest key the store knows gives a snapshot; the replies after it are
replayed with apply_reply (exact, DEC-5). Regenerate, swipes, deletes and edits need no chat id: the
history they leave is the game.

A replay whose receipts come out different from the stored ones (in a reply that has receipts) means either that
the history does not start where the campaign starts (the chat app dropped its oldest messages) or that the player
edited a reply. Where the history is anchored at the campaign's start (a key the store knows along it, or an
earlier reply with receipts that replayed as stored), it is an edited reply: the chat as it now reads is the game,
the state is the replay's, and it is kept and shown on the pages like any other (`Replayed.rewritten` names the
replies whose receipts a replay writes differently, ED-27). Else the newest reply with receipts that the store
knows by its content, at one state only, gives the state (S-15); else the state is the replay's from the start and
`Replayed.notes` says the history was incomplete (the `x-tagengine-history` header, and the log). Nothing computed
from such a replay is stored, so the next request says it again.

With --hide-tags the player was shown narrations: `narrations` in the store maps (chain key before, the
narration's hash) back to the tagged reply, which the chain then uses as if the app had stored it (S-14).

A `Chain` is one server's: its store, its `SnapshotCache` and its memos of chain steps, so two servers in one
process share none of them (SV-4).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from ...commands import apply_reply
from ...memo import IdentityCache
from ...prefix_memo import ITEM_CHARS, PrefixMemo, held_chars, held_message_chars
from ...records import frozen
from ...state import GameState, from_json
from ..limits import CHAIN_STEP_CHARS, CHAIN_STEPS_HELD, FIRST_KEYS_HELD, HASH_CHARS, LOOP_CHARS
from .campaigns import Campaign, snapshot_text
from .snapshots import SnapshotCache
from .store import Store

log = logging.getLogger("tagengine.serve")
_RECEIPT = re.compile(r'result\s*=\s*"')  # a receipt's attribute; `has_receipts` reads the word boundary before it
INCOMPLETE = "incomplete: the state was rebuilt from what the history holds"
EDITED = "edited: the state follows the chat as it reads; receipts that a replay writes differently in reply"
HIDDEN = "hidden"  # a note's first word: narrations of a --hide-tags server read back by one without it (TR-6)
_FIRST_KEYS: IdentityCache[str] = IdentityCache(FIRST_KEYS_HELD)


def first_key(c: Campaign) -> str:
    """The chain's key before any reply, kept by the campaign's object (it is read-only, and every turn starts
    its chain here: the hash of its start's JSON, some 8 us a turn)."""
    return _FIRST_KEYS.get((c,), lambda: _hash(f"tagengine.chain/1\0{c.name}\0{c.digest}\0{c.start_json}"))


def content_key(c: Campaign, reply: str) -> str:
    """A reply by its text alone (in its campaign and ruleset): finds it in a history that lost its start."""
    return _hash(f"tagengine.reply/1\0{c.name}\0{c.digest}\0{reply.strip()}")


def shown_key(narration: str) -> str:
    return _hash(f"tagengine.shown/1\0{narration.strip()}")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def has_receipts(text: str) -> bool:
    """Whether `text` holds a receipt: `result="` as a word of its own, spaces allowed around the `=`. The pattern
    starts with its literal, which the regular expression engine finds with a fast search, and the word boundary is
    read here: led by one, the pattern was tried at every position of the text (a 660-character reply: 9.4 us, now
    1.2, PF-63)."""
    for m in _RECEIPT.finditer(text):
        i = m.start()
        if i == 0 or not ((before := text[i - 1]).isalnum() or before == "_"):  # `\w` is `isalnum` or `_`
            return True
    return False


@frozen
class Replayed:
    state: GameState  # after the last assistant message of the history
    key: str  # its chain key: the next reply's key is Chain.next_key(key, reply)
    replayed: int  # replies applied (the rest came from the store)
    # every replayed reply's receipts came out as stored: the state is not a guess from an incomplete history,
    # so snapshots after it may be kept (else nothing was stored)
    consistent: bool
    notes: tuple[str, ...] = ()  # for the x-tagengine-history header: what the history lacked
    replies: tuple[str, ...] = ()  # the assistant messages as the chain read them (--hide-tags: tagged again)
    rewritten: tuple[int, ...] = ()  # replies (by index) whose receipts a replay writes differently: edited ones
    parent: str | None = None  # the key before the last reply (None: the history has none)


class Chain:
    """State from a history, for one server: `state_of` (look up, replay, keep what was replayed) and
    `record` (a new reply's snapshot). Safe from the event loop and a worker thread at once: the store and
    the snapshot cache take their locks, and the memos below are plain dicts and a table replaced whole,
    whose one look-up or store is atomic."""

    def __init__(self, store: Store, snapshots: SnapshotCache | None = None) -> None:
        self.store = store
        self.snapshots = snapshots if snapshots is not None else SnapshotCache()
        self._steps: dict[tuple[str, str], str] = {}  # (key, reply) -> the key after it
        self._step_chars = 0
        self._keys: PrefixMemo[str, str] = PrefixMemo(held_chars)  # the keys along the last few histories (S-30)
        # each message of the last few histories: its text when it is a reply, else None (`said`)
        self._said: PrefixMemo[Mapping[str, str], str | None] = PrefixMemo(held_message_chars)
        self._more = self._more_keys  # bound once: a warm turn makes no method object
        self._narrated: bool | None = None  # the store holds a --hide-tags narration (read once, then kept, TR-6)

    def narrated(self) -> bool:
        """Whether narrations may need mapping back: a --hide-tags server played on this store, now or before."""
        if self._narrated is None:
            self._narrated = self.store.holds_narrations()
        return self._narrated

    def next_key(self, key: str, reply: str) -> str:
        """The key after `reply`, without its surrounding white space: chat apps trim replies before they
        store them (SillyTavern's "Trim spaces"), and a trimmed reply is the same turn (S-23). Remembered: a
        dict look-up costs a tenth of the sha256 (the character count only decides when the table is
        emptied)."""
        hit = self._steps.get((key, reply))
        if hit is None:
            if len(self._steps) >= CHAIN_STEPS_HELD or self._step_chars >= CHAIN_STEP_CHARS:
                self._steps.clear()
                self._step_chars = 0
            self._step_chars += len(reply)
            hit = self._steps[(key, reply)] = _hash(f"{key}\0{reply.strip()}")
        return hit

    def keys(self, c: Campaign, replies: list[str]) -> Sequence[str]:
        """The chain's keys along `replies`: [first_key(c), the key after the first reply, ...]. The keys of
        the start this history shares with one of the last few are not worked out again (S-30)."""
        return self._keys.values([first_key(c), *replies], self._more)

    def _more_keys(self, known: list[str], items: list[str]) -> list[str]:
        keys = known or items[:1]  # items[0] is the first key itself
        for text in items[len(keys):]:
            keys.append(self.next_key(keys[-1], text))
        return keys

    def state_of(self, c: Campaign, messages: Sequence[Mapping[str, str]], *, hidden: bool = False,
                 defer: int | None = None) -> Replayed | ReplayJob | LookupJob:
        """The state after `messages` (role/content dicts). Writes the snapshots it computes. With `defer`,
        work too long for the event loop comes back to run elsewhere (SEC-2): a history of more than
        HASH_CHARS characters whole (a `LookupJob`: hashing it alone would take milliseconds), else a replay of
        more than `defer` replies or LOOP_CHARS characters (a `ReplayJob`)."""
        said, held = self.said(messages)
        if defer is not None and held - ITEM_CHARS * len(messages) > HASH_CHARS:
            return LookupJob(partial(self._replay_of, c, messages, hidden, said))
        replay = self._replay_of(c, messages, hidden, said)
        if defer is not None and (replay.pending > defer or sum(map(len, replay.replies[replay.start:])) > LOOP_CHARS):
            return replay
        return replay.run()

    def said(self, messages: Sequence[Mapping[str, str]]) -> tuple[Sequence[str | None], int]:
        """Each message's text when it is a reply (else None), and the history's `held_message_chars` in all. A
        history's messages are read-only objects (`MarkedHistory`) and a turn's start holds the very objects of the
        turn before (`RecentHistories`): that start is found by their identities, without reading one of them
        again, as the token counts find theirs (prompt/tokens.py)."""
        return self._said.values_and_size(messages if type(messages) is list else list(messages), _said_more)

    def _replay_of(self, c: Campaign, messages: Sequence[Mapping[str, str]], hidden: bool,
                   said: Sequence[str | None]) -> ReplayJob:
        """The replay still to do after the newest state the cache or the store holds along `messages`."""
        store = self.store
        replies, notes, walked = _replies(self, c, messages, hidden, said)
        keys = walked if walked is not None else self.keys(c, replies)
        state, start, found = c.start, 0, False
        held = self.snapshots.newest(keys)
        if held is not None:  # the same state object as last time: the sheet views' caches stay warm
            start, state = held
            found = True
            store.touch(keys[start])
        else:
            hit = store.known(keys[1:])
            raw = store.snapshot(hit) if hit is not None else None
            if hit is not None and raw is not None:
                state, start, found = from_json(c.rs, json.loads(raw), "snapshot"), keys.index(hit), True
        return ReplayJob(self, c, replies, keys, start, state, found, notes)

    def record(self, c: Campaign, key: str, reply: str, state: GameState, shown: str | None = None,
               *, consistent: bool = True) -> str:
        """Keep the snapshot after a new reply (its text as the chain reads it); its key. `shown`: the
        narration the player got instead (--hide-tags), mapped back to `reply` by the next request. Not
        `consistent` (the state before was rebuilt from an incomplete history): only the narration map,
        which is a fact."""
        store = self.store
        new = self.next_key(key, reply)
        doc = snapshot_text(state) if consistent else ""

        def write() -> None:
            if consistent:
                store.put_snapshot(new, doc, c.name)
                if has_receipts(reply):
                    store.put_reply(content_key(c, reply), new)
            if shown is not None:
                store.put_narration(key, shown_key(shown), reply)
                self._narrated = True

        store.writing("snapshots", write, chars=len(doc))
        if consistent:
            self.snapshots.put(new, state)
        return new


@frozen
class LookupJob:
    """A history's whole look-up and replay, to run in a worker thread (`run()`)."""

    lookup: Callable[[], ReplayJob]

    def run(self) -> Replayed:
        return self.lookup().run()


@dataclass
class ReplayJob:
    """A history to replay from `start` on; `run()` may go to a worker thread (the store is guarded)."""

    chain: Chain
    c: Campaign
    replies: list[str]  # as the chain reads them (narrations mapped back to their tagged text)
    keys: Sequence[str]  # keys[i] is the key before replies[i]; keys[-1] after the last
    start: int  # replies before this index came from the store
    state: GameState
    found: bool  # start came from a key the store knows (else from the campaign's start)
    notes: list[str] = field(default_factory=list)

    @property
    def pending(self) -> int:
        return len(self.replies) - self.start

    def run(self) -> Replayed:
        c, replies, keys = self.c, self.replies, self.keys
        state, consistent = self.state, True
        snaps: list[tuple[str, GameState]] = []  # written only when the whole replay holds
        known: list[tuple[str, str]] = []  # (content key, chain key after) of replies with receipts
        rewritten: list[int] = []
        # the history is known to start at the campaign's start: a key after one of its replies was known
        anchored = self.found and self.start > 0
        i = self.start
        while i < len(replies):
            applied = apply_reply(c.rs, state, replies[i])
            receipts = has_receipts(replies[i])
            if applied.text != replies[i] and receipts and consistent and anchored:
                rewritten.append(i)  # an edited reply: the chat as it reads now is the game (ED-27)
            elif applied.text != replies[i] and receipts:  # a reply without receipts says nothing
                if consistent and not self.found:
                    keys = list(keys)  # re-based here (the chain's memo gives its own keys, read-only)
                    resumed = _resume(self.chain, c, replies, keys, i)
                    if resumed is not None:
                        j, state = resumed
                        self.notes.append(f"resumed: the history does not start at the campaign's start; the state "
                                          f"follows reply {j + 1}, which the store knows by its content")
                        log.info("campaign %s: a history without its start resumed at reply %d by its content",
                                 c.name, j + 1)
                        self.found, snaps, known, anchored = True, [], [], True
                        i = j + 1
                        continue
                consistent = False
            elif receipts and consistent:
                known.append((content_key(c, replies[i]), keys[i + 1]))
                anchored = True  # a reply with receipts came out as stored from the start
            state = applied.state
            snaps.append((keys[i + 1], state))
            i += 1
        if rewritten:
            self.notes.append(f"{EDITED} {', '.join(str(n + 1) for n in rewritten[:8])}")
            log.info("campaign %s: reply %d of a history reads differently from its receipts (an edited reply); "
                     "the state follows the chat as it reads", c.name, rewritten[0] + 1)
        if consistent:  # a guess from an incomplete history is never kept: the next request says it again
            if snaps or known:  # else no transaction: a warm turn commits nothing before its request leaves
                _write_replayed(self.chain.store, c, snaps, known)
            self.chain.snapshots.put(keys[-1], state)
        else:
            self.notes.append(INCOMPLETE)
            log.warning("campaign %s: the history's receipts do not match a replay from the campaign's start "
                        "(messages dropped by the chat app, or an edited reply); the state is the replay's", c.name)
        return Replayed(state, keys[-1], len(replies) - self.start, consistent, tuple(self.notes), tuple(replies),
                        tuple(rewritten), keys[-2] if len(keys) > 1 else None)


def _write_replayed(store: Store, c: Campaign, snaps: list[tuple[str, GameState]],
                    known: list[tuple[str, str]]) -> None:
    """A consistent replay's snapshots and replies with receipts, in one batch."""
    docs = [(key, snapshot_text(snap)) for key, snap in snaps]  # outside the lock

    def write() -> None:
        for key, doc in docs:
            store.put_snapshot(key, doc, c.name)
        for content, key in known:
            store.put_reply(content, key)

    store.writing("snapshots", write, chars=sum(len(doc) for _, doc in docs))


def _resume(chain: Chain, c: Campaign, replies: list[str], keys: list[str],
            upto: int) -> tuple[int, GameState] | None:
    """The newest reply at or after `upto` with receipts that the store knows by its content at one state
    only: its index and that state, the keys after it re-based on its key. None when there is none."""
    store = chain.store
    for j in range(len(replies) - 1, upto - 1, -1):
        if not has_receipts(replies[j]):
            continue
        found = store.replies(content_key(c, replies[j]))
        states = {k: store.snapshot(k) for k in found}
        distinct = {s for s in states.values() if s is not None}
        if len(distinct) != 1:
            if len(distinct) > 1:
                log.info("campaign %s: reply %d is known at %d states: not used", c.name, j + 1, len(distinct))
            continue
        raw = distinct.pop()
        keys[j + 1] = min(k for k, s in states.items() if s == raw)
        for n in range(j + 1, len(replies)):
            keys[n + 1] = chain.next_key(keys[n], replies[n])
        return j, from_json(c.rs, json.loads(raw), "snapshot")
    return None


def _said_more(known: list[str | None], items: list[Mapping[str, str]]) -> list[str | None]:
    known += [m["content"] if m["role"] == "assistant" else None for m in items[len(known):]]
    return known


def _replies(chain: Chain, c: Campaign, messages: Sequence[Mapping[str, str]], hidden: bool,
             said: Sequence[str | None]) -> tuple[list[str], list[str], list[str] | None]:
    """The assistant messages as the chain reads them; narrations mapped to their tagged text, and the chain's
    keys along them (the mapping walks the chain: `Chain.keys` of the texts, made once). With `hidden` (the
    server's --hide-tags), and without it once the store holds narrations: a chat played with --hide-tags keeps
    its state when the server is started again without it, and says so (TR-6)."""
    replies = [text for text in said if text is not None]  # `Chain.said`'s
    if not replies or not (hidden or chain.narrated()):
        return replies, [], None
    shown = [shown_key(t) for t in replies]
    known = chain.store.narrations(sorted(set(shown)))
    out: list[str] = []
    unknown, mapped, key, greeting = 0, 0, first_key(c), True
    keys = [key]
    for m in messages:
        if m["role"] == "user":
            greeting = False
        if m["role"] != "assistant":
            continue
        text = m["content"]
        tagged = known.get((key, shown[len(out)]))
        if tagged is not None:
            text = tagged
            mapped += 1
        elif not greeting and not has_receipts(text):
            unknown += 1  # a narration the store does not know (or a reply the server never gave)
        out.append(text)
        key = chain.next_key(key, text)
        keys.append(key)
    notes = []
    if not hidden:  # the chat was played with --hide-tags, the server is not: said, and read back all the same
        if not mapped:
            return replies, [], None
        notes.append(f"{HIDDEN}: {mapped} narrated repl{'y' if mapped == 1 else 'ies'} of a --hide-tags server "
                     "read back as the tagged replies the store keeps; start the server with --hide-tags again")
        log.warning("campaign %s: %d narrated replies of a --hide-tags server read back as their tagged text; this "
                    "server shows tags (start it with --hide-tags to go on hiding them)", c.name, mapped)
    if unknown:
        notes.append(f"unmapped: {unknown} narrated repl{'y' if unknown == 1 else 'ies'} the store does not know "
                     "replayed as shown (without tags)")
        log.warning("campaign %s: %d narrated replies the store does not know are replayed without their tags",
                    c.name, unknown)
    return out, notes, keys
