"""The server's one SQLite file (stdlib sqlite3, WAL): campaigns and state snapshots keyed by chain key.

The store is only a cache for snapshots (deleting it changes no result, only speed); campaigns are the
one thing it keeps that cannot be rebuilt. All calls come from one thread at a time (the event loop's,
or a CLI command's), so one connection is enough.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NotFoundError

DB_NAME = "tagengine.sqlite3"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (name TEXT PRIMARY KEY, ruleset TEXT NOT NULL, digest TEXT NOT NULL,
                                      start TEXT NOT NULL, characters TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (key TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS heads (campaign TEXT PRIMARY KEY, key TEXT NOT NULL, turn INTEGER NOT NULL,
                                  receipts TEXT NOT NULL);
"""


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


@dataclass(frozen=True)
class CampaignRow:
    name: str
    ruleset: str  # absolute path of the ruleset file
    digest: str  # sha256 of the ruleset file when the campaign was made
    start: str  # the start state, as JSON text
    characters: str  # comma-separated, for listing


class Store:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / DB_NAME
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        # chain key -> the snapshot as a GameState (chain.py): a warm turn neither parses JSON nor
        # rebuilds sheet views, since their caches follow the state object
        self.recent: OrderedDict[str, Any] = OrderedDict()

    def close(self) -> None:
        self.db.close()

    # -- campaigns
    def add_campaign(self, row: CampaignRow) -> None:
        """Raises ValueError when the name is taken (a campaign is never overwritten by accident)."""
        try:
            self.db.execute("INSERT INTO campaigns VALUES (?, ?, ?, ?, ?)",
                            (row.name, row.ruleset, row.digest, row.start, row.characters))
        except sqlite3.IntegrityError:
            raise ValueError(f"a campaign named {row.name!r} exists already") from None

    def campaign(self, name: str) -> CampaignRow:
        """Raises NotFoundError naming the campaign and the known ones."""
        got = self.db.execute("SELECT * FROM campaigns WHERE name = ?", (name,)).fetchone()
        if got is None:
            raise NotFoundError("campaign", name, tuple(c.name for c in self.campaigns()))
        return CampaignRow(*got)

    def campaigns(self) -> list[CampaignRow]:
        return [CampaignRow(*r) for r in self.db.execute("SELECT * FROM campaigns ORDER BY name")]

    # -- snapshots
    def snapshot(self, key: str) -> str | None:
        got = self.db.execute("SELECT state FROM snapshots WHERE key = ?", (key,)).fetchone()
        return None if got is None else str(got[0])

    def known(self, keys: list[str]) -> str | None:
        """The newest of `keys` (oldest first) that has a snapshot, one query per 500 keys."""
        for end in range(len(keys), 0, -500):
            chunk = keys[max(0, end - 500):end]
            marks = ",".join("?" * len(chunk))
            found = {r[0] for r in self.db.execute(f"SELECT key FROM snapshots WHERE key IN ({marks})", chunk)}
            for k in reversed(chunk):
                if k in found:
                    return k
        return None

    def put_snapshot(self, key: str, state: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", (key, state))

    # -- heads (issue 14): the newest chain key a campaign's reply reached, for the game sheet page
    def head(self, campaign: str) -> tuple[str, int, str] | None:
        """(chain key, turns handled, receipts as JSON) of the campaign's last completed reply, or None."""
        got = self.db.execute("SELECT key, turn, receipts FROM heads WHERE campaign = ?", (campaign,)).fetchone()
        return None if got is None else (str(got[0]), int(got[1]), str(got[2]))

    def put_head(self, campaign: str, key: str, receipts: str) -> int:
        """Record a completed reply's chain key and receipts; the campaign's turn count after it."""
        self.db.execute("INSERT INTO heads VALUES (?, ?, 1, ?) ON CONFLICT(campaign) DO UPDATE SET key = excluded.key, "
                        "turn = heads.turn + 1, receipts = excluded.receipts", (campaign, key, receipts))
        got = self.db.execute("SELECT turn FROM heads WHERE campaign = ?", (campaign,)).fetchone()
        return int(got[0])
