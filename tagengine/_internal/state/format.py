"""The state file's format (DEC-26), defined once: the JSON Schema (`tagengine schema state`) and the keys
the reader knows both come from these models. The reader itself never trusts a file (DEC-27): it reads
leniently, with warnings, so these models describe the file and do not validate it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    # Never used to validate: only the JSON Schema needs a built model, so none is built at import (PF-1).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CardDoc(_Doc):
    abilities: dict[str, int] = {}
    skills: dict[str, str] = Field({}, description="training level id by skill id; the first level is untrained")
    saves: dict[str, str] = {}
    fields: dict[str, Any] = {}
    lists: dict[str, list[dict[str, Any]]] = {}


class MarksDoc(_Doc):
    marks: list[str | None] = Field([], description="kind ids, most severe first; null is a free indexed box")
    overflow: int = 0


class LiveDoc(_Doc):
    pools: dict[str, int] = Field({}, description="current value; absent means at the pool's start")
    temp: dict[str, int] = {}
    tracks: dict[str, int] = {}
    marks: dict[str, MarksDoc] = {}
    states: dict[str, str] = Field({}, description="only states off their default (STATE-8)")
    conditions: list[str] = []
    text: dict[str, str] = {}
    rows: dict[str, list[int | None]] = {}


class ClockDoc(_Doc):
    name: str
    size: int
    filled: int = 0


class DiceDoc(_Doc):
    seed: str = Field(description="1..200 characters of one line; die n is SHA-256 of `seed:n` (docs/state-format.md)")
    rolls: int = Field(0, ge=0, description="how many dice the engine has rolled with this seed")


class PartySheetDoc(_Doc):
    fields: dict[str, Any] = {}
    lists: dict[str, list[dict[str, Any]]] = {}


class StateDoc(_Doc):
    format: Literal["tagengine.state/1"]
    gameCharacterCards: dict[str, CardDoc] = {}
    gamePartySheet: PartySheetDoc = PartySheetDoc.model_construct()  # no validator built at import (PF-1)
    gamePartySheetRevision: int = 0
    rulesetLive: dict[str, LiveDoc] = Field({}, description="by normalised character name; `$party` is the party")
    rulesetClocks: list[ClockDoc] = []
    rulesetDice: DiceDoc | None = Field(None, description="the engine's dice; a file without it is seeded from its "
                                        "content")


TOP_KEYS = frozenset(StateDoc.model_fields)
CARD_KEYS = frozenset(CardDoc.model_fields)
LIVE_KEYS = frozenset(LiveDoc.model_fields)
DICE_KEYS = frozenset(DiceDoc.model_fields)


def state_schema() -> dict[str, Any]:
    return StateDoc.model_json_schema(by_alias=True)
