"""A campaign: a ruleset file (path and sha256 digest) and its start state, kept in the store.

The server reads the ruleset file again whenever it changes on disk; its digest then changes too, and
so does every chain key (chain.py): snapshots made under the old file are simply not used.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from time import monotonic

import orjson

from ...errors import Problem, StateError
from ...files import read_file, write_atomic
from ...memo import IdentityCache
from ...records import frozen
from ...ruleset import Ruleset
from ...state import Dice, GameState, from_json
from ...state.defaults import seed_problem
from ...state.values import thaw
from ...state.write import state_json
from ..limits import MAX_RULESET_FILE, RULESET_LOOK_SECONDS, SNAPSHOT_PARTS_HELD
from .store import NAME, CampaignRow, Store

RULESETS_FOLDER = "rulesets"  # under the data folder: the rulesets uploaded on the pages or imported with a campaign


def kept_ruleset(data: Path, text: bytes) -> Path:
    """The ruleset `text` kept in the data folder by its digest (`rulesets/<sha256>.json`, written once, atomically):
    a campaign reads its ruleset file again and again, so a ruleset uploaded, imported or taken from the installed
    package (which moves or changes with an upgrade) is the data folder's own copy. Raises OSError when it cannot
    be written."""
    path = (data / RULESETS_FOLDER / f"{digest_of(text)}.json").resolve()
    if not (path.is_file() and digest_of(path.read_bytes()) == digest_of(text)):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return path


@frozen
class Campaign:
    name: str
    rs: Ruleset
    digest: str  # of the ruleset file as it is now
    start: GameState
    start_json: str  # canonical: part of the chain's first key
    # the characters in the order the campaign was started with: its start's JSON keeps its keys sorted, so a
    # state read back lists them alphabetically, and the panel shows them in the players' order
    order: tuple[str, ...] = ()


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_campaign(store: Store, name: str, ruleset: str, characters: Sequence[str] = (), seed: str | None = None, *,
                 start: Callable[[Ruleset], GameState] | None = None) -> CampaignRow:
    """Make and keep a campaign: its characters' new sheets, or the state `start` makes from the ruleset (a state
    file read as `apply` reads one), with its own dice unless `seed` is given (S-13). Raises ValueError for a bad
    or taken name; RulesetError and StateError (a TagengineError) for a bad ruleset, character names or seed;
    OSError for an unreadable file."""
    if not NAME.fullmatch(name):
        raise ValueError(f"campaign name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    path = Path(ruleset).resolve()
    data = read_file(path, MAX_RULESET_FILE)
    rs = Ruleset.from_file(data, str(path))  # the same bytes as the digest: an edit in between cannot split them
    if start is None:
        state = GameState.new(rs, characters, seed=seed or secrets.token_hex(8))
    else:
        state = start(rs)
        if seed is not None:
            if (why := seed_problem(seed)) is not None:
                raise StateError([Problem("seed", "bad-seed", why, seed)], "campaign new")
            state = state.with_dice(Dice(seed, 0))
    row = CampaignRow(name, str(path), digest_of(data), canonical_json(state.to_json()), ", ".join(state.characters))
    store.add_campaign(row)
    return row


def remove_campaign(store: Store, name: str) -> tuple[CampaignRow, Path | None]:
    """The campaign `name` removed from the store (`Store.remove_campaign`), and its ruleset file with it when the
    file is the data folder's own (uploaded on the pages, or imported with a campaign: `rulesets/`) and no other
    campaign uses it: the campaign's row and the file removed, if one was. A ruleset file from anywhere else (the
    server's `--rulesets` folder, a path given to `campaign new`) is never touched. Raises NotFoundError."""
    row, shared = store.remove_campaign(name)
    path = Path(row.ruleset)
    if shared or path.parent != (store.folder / RULESETS_FOLDER).resolve():
        return row, None
    path.unlink(missing_ok=True)
    return row, path


# json.dumps with arguments builds an encoder on every call; this is the one it would build
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode
_FIXED: IdentityCache[str] = IdentityCache(SNAPSHOT_PARTS_HELD)  # cards and party sheets as text, by their objects
_CARDS, _PARTY = "gameCharacterCards", "gamePartySheet"  # the state document's keys for them (state/write.py)


def canonical_json(doc: object) -> str:
    """A JSON document as one text: keys sorted, no spaces, not ASCII-escaped (a campaign's start state,
    part of the chain's first key, and the snapshots the store keeps)."""
    return _CANONICAL(doc)


def snapshot_text(state: GameState) -> str:
    """`canonical_json(state.to_json())`, made of its top-level members' texts in key order. The cards and the
    party sheet change only by a player's edit, while every turn changes live values: their texts are kept by
    their objects (a state is read-only all the way down), so a turn's snapshot reads and writes only what it
    can have changed (the cards' thaw and encoding were two thirds of the snapshot's text)."""
    doc: dict[str, object] = state_json({}, {}, state.party_revision, state.live, state.clocks, state.dice)
    parts = {k: _live_text(v) for k, v in doc.items() if k != _CARDS and k != _PARTY}
    cards, party = state.cards, state.party_sheet
    parts[_CARDS] = _FIXED.get((cards,), lambda: _CANONICAL(thaw(cards)))
    parts[_PARTY] = _FIXED.get((party,), lambda: _CANONICAL(thaw(party)))
    return "{" + ",".join([_member(k) + parts[k] for k in sorted(parts)]) + "}"


def _live_text(value: object) -> str:
    """`canonical_json(value)` of a member a turn changes (live values, clocks, dice, the revision, the format):
    written by orjson, a sixth of the standard library's time a member here. The two write the same text for what
    these hold, whole numbers, text, lists and objects (tests/test_serve_store.py), where they differ only on floats,
    which the state reader refuses and no command makes; what orjson cannot write (a lone surrogate, a number past
    64 bits) the standard library does."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return _CANONICAL(value)


@lru_cache(maxsize=64)  # the state document's own names: never more than a few
def _member(key: str) -> str:
    """A state document's member name as JSON with its colon, kept: encoding one was a microsecond, seven a turn."""
    return _CANONICAL(key) + ":"


class Campaigns:
    """Campaigns by name, loaded once and loaded again when their ruleset file changes on disk (looked at again once
    RULESET_LOOK_SECONDS have passed since the last look: a stat of the file was some 12 us of a turn, PF-61), or
    when their start is made again (`set_start`)."""

    def __init__(self, store: Store, loaded: Callable[[bool], None] | None = None) -> None:
        self.store = store
        # name -> (the file's (mtime, size), the campaign, its row, when the file was looked at)
        self._loaded: dict[str, tuple[tuple[int, int], Campaign, CampaignRow, float]] = {}
        # called after a campaign is loaded, with whether one loaded before was let go since: the server
        # freezes its heap (heap.py)
        self.on_load = loaded
        self._let_go = False

    def get(self, name: str) -> Campaign:
        """Raises NotFoundError for an unknown campaign, RulesetError or OSError for its ruleset file."""
        hit = self._loaded.get(name)
        now = monotonic()
        if hit is not None and now - hit[3] < RULESET_LOOK_SECONDS:
            return hit[1]
        row = hit[2] if hit is not None else self.store.campaign_row(name)  # a row changes only through set_start
        st = os.stat(row.ruleset)
        stamp = (st.st_mtime_ns, st.st_size)
        if hit is not None and hit[0] == stamp:
            self._loaded[name] = (stamp, hit[1], row, now)
            return hit[1]
        data = read_file(row.ruleset, MAX_RULESET_FILE)
        rs = Ruleset.from_file(data, row.ruleset)  # the same bytes as the digest; pydantic only on a miss
        start = from_json(rs, json.loads(row.start), f"campaign {name}")
        c = Campaign(name, rs, digest_of(data), start, canonical_json(start.to_json()),
                     tuple(n for n in row.characters.split(", ") if n in start.characters))
        self._loaded[name] = (stamp, c, row, now)
        replaced, self._let_go = hit is not None or self._let_go, False
        if self.on_load is not None:
            self.on_load(replaced)
        return c

    def set_start(self, name: str, state: GameState) -> bool:
        """Make `state` the campaign's start, while no reply of it has been kept (ED-14: before the first
        reply the sheets are still being made, and the chain's first key follows the new start); whether it was.
        Raises NotFoundError for an unknown campaign."""
        self.store.campaign_row(name)
        done = self.store.set_start(name, canonical_json(state.to_json()), ", ".join(state.characters))
        if self._loaded.pop(name, None) is not None:  # read again: its start and first key
            self._let_go = True
        return done
