"""A campaign as one file (`tagengine campaign export` / `import`): what the data folder holds that the chat does not.

A chat's text holds every reply and every player's edit receipt (ED-6), but not where it started: the campaign's
start state (its cards, and the dice seed that keys every `[edit:]` receipt's MAC, ED-8) and the ruleset file it
was played under are in the data folder only. With the folder gone, a replay elsewhere starts from other dice and
refuses every receipt `unverified-edit`. The file keeps those, and nothing else the folder has (the snapshots are
a cache; edits not yet in any reply are not part of the chat yet, ED-6):

    {"format": "tagengine.campaign/1", "name": "vault",
     "ruleset": {"file": "gravewatch.json", "sha256": "<of the file's bytes>", "text": "<the file, as text>"},
     "start": <the start state's document, as `tagengine state` writes one>}

The seed is the start's own `rulesetDice.seed`, not a second copy that could disagree with it. The file is read
whole and checked before anything is written: every problem at once, each naming its key (`ruleset.sha256`), as a
`CampaignFileError` naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...errors import Problem, ProblemsError
from ...files import json_problem, read_file
from ...records import frozen
from ...ruleset import Ruleset
from ...state import GameState, from_json
from ..limits import MAX_CAMPAIGN_FILE, MAX_RULESET_FILE
from .campaigns import canonical_json, digest_of, kept_ruleset
from .store import NAME, CampaignRow, Store

FORMAT = "tagengine.campaign/1"


class CampaignFileError(ProblemsError):
    """A campaign file that cannot be read back: not one of ours, a key missing or of the wrong type, a ruleset
    whose text does not match its digest."""

    kind = "campaign file"


@frozen
class CampaignFile:
    """What a campaign file holds, checked for shape and digest (not yet against the ruleset: `loaded`)."""

    name: str
    file: str  # the ruleset file's name where it was exported, for people
    digest: str  # sha256 of `ruleset`
    ruleset: bytes
    start: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "name": self.name,
                "ruleset": {"file": self.file, "sha256": self.digest, "text": self.ruleset.decode("utf-8")},
                "start": self.start}

    def loaded(self, source: str) -> tuple[Ruleset, GameState]:
        """The ruleset and the start state, the start read as a state of that ruleset. Raises RulesetError or
        StateError naming `source` and the key (`FILE: ruleset.text`, `FILE: start`)."""
        rs = Ruleset.from_json(self.ruleset, f"{source}: ruleset.text")
        return rs, from_json(rs, self.start, f"{source}: start")


def exported(store: Store, name: str) -> CampaignFile:
    """The campaign `name` as a file: its ruleset file as it is now (the bytes the server plays under, whose digest
    keys the chain), its start as kept. Raises NotFoundError for an unknown campaign; OSError naming the ruleset's
    path when it cannot be read; CampaignFileError when the ruleset file is not UTF-8 text."""
    row = store.campaign_row(name)
    data = read_file(row.ruleset, MAX_RULESET_FILE)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CampaignFileError([Problem("ruleset.text", "not-utf-8", f"the ruleset file is not UTF-8 text ({e})",
                                         None)], row.ruleset) from None
    return CampaignFile(row.name, os.path.basename(row.ruleset), digest_of(data), data, json.loads(row.start))


def read_campaign_file(data: bytes, source: str) -> CampaignFile:
    """A campaign file's bytes, checked: JSON, our format, a campaign name, a ruleset whose text matches its
    sha256, a start that is an object. Raises CampaignFileError naming `source` with every problem found."""
    try:
        doc = json.loads(data)
    except (RecursionError, ValueError) as e:
        raise CampaignFileError([Problem("$", "not-json", json_problem(e), None)], source) from None
    if not isinstance(doc, dict):
        raise CampaignFileError([Problem("$", "wrong-type", "a campaign file is a JSON object", None)], source)
    problems: list[Problem] = []
    if doc.get("format") != FORMAT:
        problems.append(Problem("format", "wrong-format", f"is not {FORMAT!r}: this is not a campaign file of "
                                "`tagengine campaign export`", doc.get("format")))
    name = doc.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        problems.append(Problem("name", "bad-name", "a campaign's name: 1 to 64 letters, digits, '.', '_' or '-'",
                                name if isinstance(name, str | int | float | bool) else None))
    ruleset = doc.get("ruleset")
    text, digest, file = None, None, ""
    if not isinstance(ruleset, dict):
        problems.append(Problem("ruleset", "missing-key" if ruleset is None else "wrong-type",
                                "the ruleset: an object of `file`, `sha256` and `text`", None))
    else:
        text, digest, file = ruleset.get("text"), ruleset.get("sha256"), ruleset.get("file", "")
        if not isinstance(text, str):
            problems.append(Problem("ruleset.text", "missing-key" if text is None else "wrong-type",
                                    "the ruleset file's text", None))
            text = None
        if not isinstance(digest, str):
            problems.append(Problem("ruleset.sha256", "missing-key" if digest is None else "wrong-type",
                                    "the sha256 of the ruleset file, 64 hex digits", None))
            digest = None
        if not isinstance(file, str):
            problems.append(Problem("ruleset.file", "wrong-type", "the ruleset file's name, as text", None))
            file = ""
    raw = None
    if text is not None:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(Problem("ruleset.text", "bad-text", "holds a lone surrogate: no file has such text", None))
    if raw is not None and len(raw) > MAX_RULESET_FILE:
        problems.append(Problem("ruleset.text", "too-large", f"is {len(raw)} bytes; a ruleset file holds at most "
                                f"{MAX_RULESET_FILE}", None))
    elif raw is not None and digest is not None and digest_of(raw) != digest.lower():
        problems.append(Problem("ruleset.sha256", "digest-mismatch", f"is not the sha256 of `ruleset.text` "
                                f"({digest_of(raw)}): the file was changed after it was exported", digest))
    start = doc.get("start")
    if not isinstance(start, dict):
        problems.append(Problem("start", "missing-key" if start is None else "wrong-type",
                                "the campaign's start: a state document (an object)", None))
    if problems:
        raise CampaignFileError(problems, source)
    assert isinstance(name, str) and raw is not None and isinstance(start, dict)
    return CampaignFile(name, os.path.basename(str(file)), digest_of(raw), raw, start)


def read_campaign_path(path: str | Path) -> CampaignFile:
    """A campaign file on disk, read as `read_campaign_file` reads one (OSError naming the path)."""
    return read_campaign_file(read_file(path, MAX_CAMPAIGN_FILE), os.fspath(path))


def import_campaign(store: Store, folder: str | Path, cf: CampaignFile, source: str,
                    name: str | None = None) -> CampaignRow:
    """Keep the campaign of `cf` in `store` (as `name`, else its own), its ruleset file written into the data
    folder `folder` as `rulesets/<sha256>.json` (atomically; left as it is when it holds those bytes), its start as
    exported, so the chain's first key and every edit receipt's MAC are as they were. Raises ValueError for a bad
    or taken name; RulesetError, StateError (naming `source`) when the file's ruleset or start does not load;
    OSError when the ruleset cannot be written. Nothing is written when anything is refused."""
    name = cf.name if name is None else name
    if not NAME.fullmatch(name):
        raise ValueError(f"campaign name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    if any(row.name == name for row in store.campaigns()):
        raise ValueError(f"a campaign named {name!r} exists already (import it under another: --as NAME)")
    _rs, start = cf.loaded(source)
    path = kept_ruleset(Path(folder), cf.ruleset)
    row = CampaignRow(name, str(path), cf.digest, canonical_json(start.to_json()), ", ".join(start.characters))
    store.add_campaign(row)
    return row
