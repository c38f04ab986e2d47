"""Writing a state (DEC-26): its JSON document and its text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..digests import sha256
from .values import FORMAT, Clock, Dice, LiveValues, thaw


def live_json(live: LiveValues) -> dict[str, Any]:
    """One sheet's live values as stored: only what is off its start (DEC-26)."""
    out: dict[str, Any] = {}
    if live.pools:
        out["pools"] = dict(live.pools)
    if live.temp:
        out["temp"] = {k: v for k, v in live.temp.items() if v}
    if live.tracks:
        out["tracks"] = dict(live.tracks)
    marks = {k: {"marks": list(m.marks), "overflow": m.overflow} for k, m in live.marks.items()
             if m.marks or m.overflow}
    if marks:
        out["marks"] = marks
    if live.states:
        out["states"] = dict(live.states)
    if live.conditions:
        out["conditions"] = sorted(live.conditions)
    if live.text:
        out["text"] = dict(live.text)
    if live.rows:
        out["rows"] = {k: list(v) for k, v in live.rows.items()}
    return {k: v for k, v in out.items() if v}


def clocks_json(clocks: Iterable[Clock]) -> list[dict[str, Any]]:
    return [{"name": c.name, "size": c.size, "filled": c.filled} for c in clocks]


def dice_json(dice: Dice) -> dict[str, Any]:
    return {"seed": dice.seed, "rolls": dice.rolls}


def state_json(cards: Mapping[str, Mapping[str, Any]], party_sheet: Mapping[str, Any], party_revision: int,
               live: Mapping[str, LiveValues], clocks: Iterable[Clock], dice: Dice | None = None) -> dict[str, Any]:
    """The state document: plain dicts and lists, ready for any JSON writer (`rulesetDice` when given)."""
    doc = {
        "format": FORMAT,
        "gameCharacterCards": {n: thaw(c) for n, c in cards.items()},
        "gamePartySheet": thaw(party_sheet),
        "gamePartySheetRevision": party_revision,
        "rulesetLive": {k: doc for k, v in live.items() if (doc := live_json(v))},
        "rulesetClocks": clocks_json(clocks),
    }
    if dice is not None:
        doc["rulesetDice"] = dice_json(dice)
    return doc


def derived_seed(cards: Mapping[str, Mapping[str, Any]], party_sheet: Mapping[str, Any], party_revision: int,
                 live: Mapping[str, LiveValues], clocks: Iterable[Clock]) -> str:
    """The seed of a state that names none (a new state, a file from before the engine rolled dice): the first 16 hex
    digits of SHA-256 over its document without `rulesetDice`, keys sorted, compact. The same content
    always gets the same seed, so loading an older file twice rolls the same dice."""
    doc = state_json(cards, party_sheet, party_revision, live, clocks)
    text = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return sha256(text.encode("utf-8")).hexdigest()[:16]


def state_text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
