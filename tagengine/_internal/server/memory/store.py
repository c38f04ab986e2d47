"""The server's one SQLite file (stdlib sqlite3, WAL): campaigns and state snapshots keyed by chain key.

The store is only a cache for snapshots (deleting it changes no result, only speed); campaigns are the
one thing it keeps that cannot be rebuilt, and with `--hide-tags` the tagged text behind each narration
the player was shown (`narrations`: lost with the file, then said in a header). One connection, guarded
by `lock` (an RLock), which every method holds while it uses the connection: the event loop and a worker
thread replaying a long history (S-19) may both call. The states a server holds in memory are not here but
in its `SnapshotCache` (snapshots.py), which `pruned` tells what a pruning removed.

So a fault of the file (a full disk, an I/O error, a lock another process holds too long) costs the cache,
never a turn (S-33): what a turn reads of it (`snapshot`, `known`, `replies`, `narrations`, `head`) is then
"not known" (`reading`), and what it writes (`writing`, `put_head`) is dropped; each fault is logged. The campaigns'
own rows still raise: without them there is no campaign, and so do the players' edits (`edits`): they are the
players' own, not a cache, so a write that fails is said to the player who made it.

A server's store holds its cache writes (`writes_held`) and writes them together, in one transaction, once that
many are held (or WRITES_HELD_CHARS characters of snapshots), before anything else uses the file (`db`: a read, a
campaign's row, a player's edit, so each sees them in order), when the server flushes them a moment later (`flush`)
or when it closes: a transaction a turn was some 120 us of a warm turn's CPU (PF-55). A server killed loses what it
held, which the next turn replays.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import count as numbers
from pathlib import Path

from ...errors import NotFoundError
from ...records import frozen
from ..limits import SNAPSHOT_USES_HELD, WRITES_HELD_CHARS

log = logging.getLogger("tagengine.serve")
DB_NAME = "tagengine.sqlite3"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (name TEXT PRIMARY KEY, ruleset TEXT NOT NULL, digest TEXT NOT NULL,
                                      start TEXT NOT NULL, characters TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (key TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS heads (campaign TEXT PRIMARY KEY, key TEXT NOT NULL, turn INTEGER NOT NULL,
                                  receipts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS narrations (prev TEXT NOT NULL, shown TEXT NOT NULL, tagged TEXT NOT NULL,
                                       PRIMARY KEY (prev, shown));
CREATE TABLE IF NOT EXISTS replies (content TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (content, key));
CREATE TABLE IF NOT EXISTS edits (key TEXT NOT NULL, seq INTEGER NOT NULL, campaign TEXT NOT NULL, who TEXT,
                                  changes TEXT NOT NULL, chat TEXT NOT NULL DEFAULT '',
                                  parent TEXT NOT NULL DEFAULT '', PRIMARY KEY (key, seq));
CREATE INDEX IF NOT EXISTS edits_campaign ON edits (campaign, seq);
CREATE TABLE IF NOT EXISTS owners (campaign TEXT PRIMARY KEY, user TEXT NOT NULL);
"""
# added after the first release of the file: a database made before gets them by ALTER TABLE
_SNAPSHOT_COLUMNS = {"campaign": "TEXT NOT NULL DEFAULT ''", "used": "INTEGER NOT NULL DEFAULT 0"}
DEFAULT_PER_CAMPAIGN = 10000  # snapshots kept per campaign, the least recently used pruned (S-20)
PRUNE_EVERY = 64  # new snapshots of a campaign between two counts of its rows
_CHUNK = 500  # keys per `IN (...)` query


def default_data_dir() -> Path:
    """The platform's user data directory, by the platform's own convention (no platformdirs needed for
    three cases): %LOCALAPPDATA% on Windows, ~/Library/Application Support on macOS, XDG elsewhere."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "tagengine"


class StoreUnavailable(OSError):
    """The data folder's database cannot be opened or set up (a read-only folder, a file that is not a
    database). An OSError, so a command says it in one line and exits 1, as for any file it cannot use."""


@frozen
class CampaignRow:
    name: str
    ruleset: str  # absolute path of the ruleset file
    digest: str  # sha256 of the ruleset file when the campaign was made
    start: str  # the start state, as JSON text
    characters: str  # comma-separated, for listing


class Store:
    """`per_campaign`: snapshots kept per campaign (`serve --keep`). `pruned(existing)`: called after a pruning
    with `existing(keys) -> the keys still stored`, for what holds states in memory. `writes_held`: cache writes
    held to be written together (0: each at once, as a command that opens the store wants)."""

    def __init__(self, folder: str | Path, *, per_campaign: int = DEFAULT_PER_CAMPAIGN,
                 pruned: Callable[[Callable[[list[str]], set[str]]], None] | None = None,
                 writes_held: int = 0) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / DB_NAME
        self.lock = threading.RLock()
        self.writes_held = writes_held
        # the cache writes held, in the order made: a write with a key replaces the held one of that key
        self._held: dict[str | int, tuple[str, Callable[[], object]]] = {}
        self._numbers = numbers()  # the keys of writes that replace none
        self._held_chars = 0  # what they write (of the snapshots), at most WRITES_HELD_CHARS
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._open()
        except sqlite3.Error as e:  # a read-only folder, a file that is not a database: one line, exit 1 (SEC-6)
            self._db.close()
            message = f"the server's database cannot be opened ({e}): the data folder (--data) must be writable"
            raise StoreUnavailable(None, f"{message}, and this file tagengine's own", str(self.path)) from None
        self.per_campaign = per_campaign
        self.pruned = pruned
        self._clock = int(self.db.execute("SELECT coalesce(max(used), 0) FROM snapshots").fetchone()[0])
        self._added: dict[str, int] = {}  # campaign -> snapshots written since its last count
        self._touched: dict[str, int] = {}  # snapshots used from memory since the last batch -> their use

    def _open(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(snapshots)")}
        for col, decl in _SNAPSHOT_COLUMNS.items():
            if col not in have:
                self.db.execute(f"ALTER TABLE snapshots ADD COLUMN {col} {decl}")
        self.db.execute("CREATE INDEX IF NOT EXISTS snapshots_use ON snapshots (campaign, used)")
        have = {r[1] for r in self.db.execute("PRAGMA table_info(edits)")}
        for column in ("chat", "parent"):  # a file from before chat ids and parent keys
            if column not in have:
                self.db.execute(f"ALTER TABLE edits ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
        self.db.execute("CREATE INDEX IF NOT EXISTS edits_parent ON edits (parent, seq)")

    @property
    def db(self) -> sqlite3.Connection:
        """The connection, the held cache writes written first: whatever uses the file next sees them, in the
        order they were made (a campaign removed after its snapshots were held removes them too)."""
        if self._held:
            self.flush()
        return self._db

    def close(self) -> None:
        with self.lock:
            self.flush()
            self._db.close()

    def flush(self) -> None:
        """The held cache writes written now, in one transaction; while another transaction is open, at the first
        use of the file after it. A fault of the file drops them, logged (S-33)."""
        with self.lock:
            if not self._held or self._db.in_transaction:
                return
            held = list(self._held.values())
            self._held.clear()  # before they run: what they use of the file does not flush them again
            self._held_chars = 0
            self._write(held)

    def _write(self, writes: list[tuple[str, Callable[[], object]]]) -> None:
        try:
            with self.batch():
                for _, write in writes:
                    write()
        except sqlite3.Error as e:
            what = ", ".join(sorted({what for what, _ in writes}))
            log.warning("the store cannot keep %s (%s); the turn goes on, and the next one replays", what, e)

    @property
    def held(self) -> int:
        """How many cache writes are held."""
        return len(self._held)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Several writes as one transaction (one WAL commit, not one per row), under the lock; a batch
        inside a batch joins it."""
        with self.lock:
            if self.db.in_transaction:
                yield
                return
            self.db.execute("BEGIN")
            marks = list(self._touched.items())
            try:
                if marks:
                    self.db.executemany("UPDATE snapshots SET used = ? WHERE key = ?", [(n, k) for k, n in marks])
                yield
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # SQLite rolls back by itself on some faults (a full disk, I/O)
                    self.db.execute("ROLLBACK")
                raise
            for k, n in marks:  # written: the marks made since stay for the next batch
                if self._touched.get(k) == n:
                    del self._touched[k]

    def writing(self, what: str, writes: Callable[[], object], key: str | None = None, chars: int = 0) -> None:
        """`writes()`, cache writes (snapshots, replies, narrations, the pages' head) as one batch; a fault of the
        file drops them, logged, instead of raising into the turn (S-33). With `writes_held`, held and written
        with the others (the class's docstring says when), or at once past WRITES_HELD_CHARS characters held
        (`chars`: what this one writes), so no batch is large; `key`: a held write of the same key is replaced by
        this one (the pages' head of a campaign: only the newest is shown)."""
        with self.lock:
            if self.writes_held <= 0:
                self._write([(what, writes)])
                return
            slot: str | int = key if key is not None else next(self._numbers)
            self._held.pop(slot, None)  # a replaced write's place is the newest one's
            self._held[slot] = (what, writes)
            self._held_chars += chars
            if len(self._held) >= self.writes_held or self._held_chars > WRITES_HELD_CHARS:
                self.flush()

    @contextmanager
    def reading(self, what: str) -> Iterator[None]:
        """Cache reads under the lock; a fault of the file ends them, logged, and the caller's "not known"
        follows instead of an error in the turn (S-33)."""
        with self.lock:
            try:
                yield
            except sqlite3.Error as e:
                log.warning("the store cannot read %s (%s); the turn goes on without them", what, e)

    # -- campaigns
    def add_campaign(self, row: CampaignRow) -> None:
        """Raises ValueError when the name is taken (a campaign is never overwritten by accident)."""
        try:
            with self.lock:
                self.db.execute("INSERT INTO campaigns VALUES (?, ?, ?, ?, ?)",
                                (row.name, row.ruleset, row.digest, row.start, row.characters))
        except sqlite3.IntegrityError:
            raise ValueError(f"a campaign named {row.name!r} exists already") from None

    def campaign_row(self, name: str) -> CampaignRow:
        """Raises NotFoundError naming the campaign and the known ones."""
        try:
            with self.lock:
                got = self.db.execute("SELECT * FROM campaigns WHERE name = ?", (name,)).fetchone()
        except UnicodeEncodeError:  # a lone surrogate (a name that is not UTF-8): no campaign has such a name
            got = None
        if got is None:
            raise NotFoundError("campaign", name, tuple(c.name for c in self.campaigns()))
        return CampaignRow(*got)

    def set_start(self, name: str, start: str, characters: str) -> bool:
        """A campaign's start made again (ED-14: the sheets a player fills in before the first reply), in one
        statement, only while no reply of it has been kept (no head): whether it was."""
        with self.lock:
            done = self.db.execute("UPDATE campaigns SET start = ?, characters = ? WHERE name = ? AND NOT EXISTS "
                                   "(SELECT 1 FROM heads WHERE campaign = ?)", (start, characters, name, name))
            return done.rowcount == 1

    def campaigns(self) -> list[CampaignRow]:
        with self.lock:
            return [CampaignRow(*r) for r in self.db.execute("SELECT * FROM campaigns ORDER BY name")]

    def campaign_count(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT count(*) FROM campaigns").fetchone()[0])

    def remove_campaign(self, name: str) -> tuple[CampaignRow, bool]:
        """The campaign `name` and every row of it (its snapshots, its newest turn, its players' edits waiting)
        deleted in one transaction: its row, and whether another campaign uses the same ruleset file. Raises
        NotFoundError naming the known campaigns. What no table says the campaign of (`replies`, `narrations`:
        caches keyed by a reply's text) stays, unused."""
        with self.batch():
            row = self.campaign_row(name)
            self.db.execute("DELETE FROM campaigns WHERE name = ?", (name,))
            self.db.execute("DELETE FROM snapshots WHERE campaign = ?", (name,))
            self.db.execute("DELETE FROM heads WHERE campaign = ?", (name,))
            self.db.execute("DELETE FROM edits WHERE campaign = ?", (name,))
            self.db.execute("DELETE FROM owners WHERE campaign = ?", (name,))
            shared = self.db.execute("SELECT 1 FROM campaigns WHERE ruleset = ? LIMIT 1", (row.ruleset,)).fetchone()
        self._added.pop(name, None)
        return row, shared is not None

    # -- owners (a chat app's users kept apart, OW-6)
    def claim(self, campaign: str, user: str) -> str:
        """The user who owns `campaign`: `user` when it had none (in one statement, so of two users who ask at
        once one wins and the other is told the winner)."""
        with self.lock:
            self.db.execute("INSERT OR IGNORE INTO owners VALUES (?, ?)", (campaign, user))
            return str(self.db.execute("SELECT user FROM owners WHERE campaign = ?", (campaign,)).fetchone()[0])

    def owners(self) -> dict[str, str]:
        """Each owned campaign's user."""
        with self.lock:
            return dict(self.db.execute("SELECT campaign, user FROM owners"))

    # -- snapshots (LRU per campaign: `used` is a counter, not a clock, bumped on each write and each hit)
    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def snapshot(self, key: str) -> str | None:
        """The snapshot's JSON, or None; its use is marked as `touch` marks it (with the next batch)."""
        got = None
        with self.reading("snapshots"):
            got = self.db.execute("SELECT state FROM snapshots WHERE key = ?", (key,)).fetchone()
            if got is not None:
                self._mark(key)
        return None if got is None else str(got[0])

    def _mark(self, key: str) -> None:
        """A snapshot's use, written with the next batch. While no batch can be written (a full disk), the marks
        are capped: they only order the pruning."""
        if len(self._touched) >= SNAPSHOT_USES_HELD and key not in self._touched:
            self._touched.pop(next(iter(self._touched)))
        self._touched[key] = self._tick()

    def touch(self, key: str) -> None:
        """A snapshot was used from memory: it is recent for the pruning too (written with the next batch,
        so a warm turn adds no commit of its own)."""
        with self.lock:
            self._mark(key)

    def _where_in(self, sql: str, keys: Sequence[str]) -> Iterator[tuple[Sequence[str], sqlite3.Cursor]]:
        """`sql` run for `keys` 500 at a time (under SQLite's limit on parameters), the list's end first:
        each chunk and its rows. `sql` has `{}` where the IN list's placeholders go. Under the lock."""
        for end in range(len(keys), 0, -_CHUNK):
            chunk = keys[max(0, end - _CHUNK):end]
            yield chunk, self.db.execute(sql.format(",".join("?" * len(chunk))), chunk)

    def known(self, keys: Sequence[str]) -> str | None:
        """The newest of `keys` (oldest first) that has a snapshot, one query per 500 keys."""
        with self.reading("snapshots"):
            for chunk, rows in self._where_in("SELECT key FROM snapshots WHERE key IN ({})", keys):
                found = {r[0] for r in rows}
                for k in reversed(chunk):
                    if k in found:
                        return k
        return None

    def put_snapshot(self, key: str, state: str, campaign: str = "") -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO snapshots (key, state, campaign, used) VALUES (?, ?, ?, ?)",
                            (key, state, campaign, self._tick()))
            self._added[campaign] = self._added.get(campaign, 0) + 1
            if self._added[campaign] >= PRUNE_EVERY:
                self.prune(campaign)

    def prune(self, campaign: str) -> int:
        """Keep the campaign's `per_campaign` most recently used snapshots, and the pages' newest turn's whatever
        its use (the pages have no history to replay it from); the snapshots removed."""
        with self.batch():
            self._added[campaign] = 0
            count = self.db.execute("SELECT count(*) FROM snapshots WHERE campaign = ?", (campaign,)).fetchone()[0]
            if count <= self.per_campaign:
                return 0
            self.db.execute("DELETE FROM snapshots WHERE key IN (SELECT key FROM snapshots WHERE campaign = ? "
                            "AND key NOT IN (SELECT key FROM heads) ORDER BY used LIMIT ?)",
                            (campaign, count - self.per_campaign))
            self.db.execute("DELETE FROM replies WHERE key NOT IN (SELECT key FROM snapshots)")
            if self.pruned is not None:  # what holds states in memory follows the file
                self.pruned(self.existing)
            return int(count - self.per_campaign)

    def existing(self, keys: list[str]) -> set[str]:
        """Those of `keys` that have a snapshot."""
        with self.lock:
            return {r[0] for _, rows in self._where_in("SELECT key FROM snapshots WHERE key IN ({})", keys)
                    for r in rows}

    # -- what the chain needs besides snapshots
    def put_narration(self, prev: str, shown: str, tagged: str) -> None:
        """--hide-tags: the player was shown `shown` (hashed) for the reply `tagged`, after chain key `prev`."""
        with self.lock:
            try:
                self.db.execute("INSERT OR REPLACE INTO narrations VALUES (?, ?, ?)", (prev, shown, tagged))
            except UnicodeEncodeError:  # a lone surrogate (a reply's text that was not UTF-8): kept as its bytes
                self.db.execute("INSERT OR REPLACE INTO narrations VALUES (?, ?, ?)",
                                (prev, shown, tagged.encode("utf-8", "surrogatepass")))

    def narrations(self, shown: list[str]) -> dict[tuple[str, str], str]:
        """(prev, shown) -> tagged, for the given narration hashes."""
        out: dict[tuple[str, str], str] = {}
        with self.reading("narrations"):
            for _, rows in self._where_in("SELECT prev, shown, tagged FROM narrations WHERE shown IN ({})", shown):
                for prev, h, tagged in rows:
                    out[(prev, h)] = tagged.decode("utf-8", "surrogatepass") if isinstance(tagged, bytes) else tagged
        return out

    def holds_narrations(self) -> bool:
        """Whether a --hide-tags server kept any narration here (then every server reads them back, TR-6)."""
        found = None
        with self.reading("narrations"):
            found = self.db.execute("SELECT 1 FROM narrations LIMIT 1").fetchone()
        return found is not None

    def put_reply(self, content: str, key: str) -> None:
        """A reply with receipts, by the hash of its campaign and text, and the chain key after it."""
        with self.lock:
            self.db.execute("INSERT OR IGNORE INTO replies VALUES (?, ?)", (content, key))

    def replies(self, content: str) -> list[str]:
        """The chain keys after the replies known by this content hash that still have a snapshot."""
        with self.reading("replies"):
            return [r[0] for r in self.db.execute(
                "SELECT r.key FROM replies r JOIN snapshots s ON s.key = r.key WHERE r.content = ?", (content,))]
        return []

    # -- heads: the newest chain key a campaign's reply reached, for the game sheet page
    def head(self, campaign: str) -> tuple[str, int, str] | None:
        """(chain key, its turn: the replies in its chain, receipts as JSON) of the campaign's last completed reply,
        or None."""
        got = None
        with self.reading("the pages' newest turn"):
            got = self.db.execute("SELECT key, turn, receipts FROM heads WHERE campaign = ?", (campaign,)).fetchone()
        return None if got is None else (str(got[0]), int(got[1]), str(got[2]))

    def put_head(self, campaign: str, key: str, receipts: str | Callable[[], str], turn: int = 1) -> None:
        """Record a completed reply's chain key, its turn (the replies in its chain, so a regenerated reply keeps
        the number of the one it replaces: STX-8) and receipts, as JSON or a function that makes it when the head
        is written (a head replaced while held never makes it); dropped when the file cannot take it: the pages
        then show the turn before."""
        def write() -> None:
            text = receipts if isinstance(receipts, str) else receipts()
            self.db.execute("INSERT INTO heads VALUES (?, ?, ?, ?) ON CONFLICT(campaign) DO UPDATE SET "
                            "key = excluded.key, turn = excluded.turn, receipts = excluded.receipts",
                            (campaign, key, turn, text))

        self.writing("the pages' newest turn", write, key=f"head\0{campaign}")

    # -- the players' edits waiting for the next reply (server/edits/pending.py): not a cache, so writes raise
    def edit_keys(self) -> tuple[set[str], set[str], int]:
        """The chain keys with edits waiting, the keys before the replies they were made after, and the newest
        edit's number (0: none)."""
        with self.lock:
            keys = {str(r[0]) for r in self.db.execute("SELECT DISTINCT key FROM edits")}
            parents = {str(r[0]) for r in self.db.execute("SELECT DISTINCT parent FROM edits WHERE parent != ''")}
            return keys, parents, self._newest_edit()

    def _newest_edit(self) -> int:
        return int(self.db.execute("SELECT coalesce(max(seq), 0) FROM edits").fetchone()[0])

    def edits_at(self, key: str) -> list[tuple[int, str | None, str, str]]:
        """(number, who, changes, chat) of the edits waiting at `key`, oldest first; none when the file cannot be
        read (logged, S-33)."""
        rows: list[tuple[int, str | None, str, str]] = []
        with self.reading("the players' edits"):
            rows = [(int(r[0]), r[1], str(r[2]), str(r[3])) for r in self.db.execute(
                "SELECT seq, who, changes, chat FROM edits WHERE key = ? ORDER BY seq", (key,))]
        return rows

    def edits_after(self, parent: str) -> list[tuple[str, int, str | None, str, str]]:
        """(key, number, who, changes, chat) of the edits made after a reply from `parent`, oldest first."""
        rows: list[tuple[str, int, str | None, str, str]] = []
        with self.reading("the players' edits"):
            rows = [(str(r[0]), int(r[1]), r[2], str(r[3]), str(r[4])) for r in self.db.execute(
                "SELECT key, seq, who, changes, chat FROM edits WHERE parent = ? ORDER BY seq", (parent,))]
        return rows

    def add_edit(self, campaign: str, key: str, who: str | None, changes: str, *, chat: str = "", parent: str = "",
                 after: int, keys_kept: int) -> tuple[int, list[str]]:
        """Keep an edit waiting at `key` for the chat `chat` ("": any chat at that key), made after the reply from
        `parent` ("": none), numbered after `after` and every edit stored; the campaign's oldest keys past
        `keys_kept` are dropped. Returns (its number, the keys dropped). Raises sqlite3.Error when the file cannot
        keep it (one transaction: nothing is half kept)."""
        with self.batch():
            seq = max(after, self._newest_edit()) + 1
            self.db.execute("INSERT INTO edits (key, seq, campaign, who, changes, chat, parent) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", (key, seq, campaign, who, changes, chat, parent))
            old = [str(r[0]) for r in self.db.execute(
                "SELECT key FROM edits WHERE campaign = ? GROUP BY key ORDER BY max(seq) DESC LIMIT -1 OFFSET ?",
                (campaign, keys_kept))]
            self.db.executemany("DELETE FROM edits WHERE key = ?", [(k,) for k in old])
        return seq, old
