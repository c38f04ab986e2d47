"""The state file's format (DEC-26), defined once: the JSON Schema (`tagengine schema state`) and the keys
the reader knows both come from these dataclasses. The reader itself never trusts a file (DEC-27): it reads
leniently, with warnings, so these describe the file and do not validate it. Plain dataclasses (PF-27): the
reader needs only their keys, and pydantic is imported only to write the schema."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

from ..records import frozen


def _described(default: Any = dataclasses.MISSING, description: str | None = None, **bounds: int) -> Any:
    """A key's default (a new dict or list each time when it is one) and what the schema says of it."""
    metadata: dict[str, Any] = dict(bounds)
    if description is not None:
        metadata["description"] = description
    if isinstance(default, dict | list):
        shown = default
        metadata["json_schema_extra"] = {"default": shown}
        return dataclasses.field(default_factory=lambda: type(shown)(), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@frozen(kw_only=True)
class _Doc:
    """What every part of the file shares: keys the format does not name are refused."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}


@frozen(kw_only=True)
class CardDoc(_Doc):
    abilities: dict[str, int] = _described({})
    skills: dict[str, str] = _described({}, "training level id by skill id; the first level is untrained")
    saves: dict[str, str] = _described({})
    fields: dict[str, Any] = _described({})
    lists: dict[str, list[dict[str, Any]]] = _described({})


@frozen(kw_only=True)
class MarksDoc(_Doc):
    marks: list[str | None] = _described([], "kind ids, most severe first; null is a free indexed box")
    overflow: int = 0


@frozen(kw_only=True)
class LiveDoc(_Doc):
    pools: dict[str, int] = _described({}, "current value; absent means at the pool's start")
    temp: dict[str, int] = _described({})
    tracks: dict[str, int] = _described({})
    marks: dict[str, MarksDoc] = _described({})
    states: dict[str, str] = _described({}, "only states off their default (STATE-8)")
    conditions: list[str] = _described([])
    text: dict[str, str] = _described({})
    rows: dict[str, list[int | None]] = _described({})


@frozen(kw_only=True)
class ClockDoc(_Doc):
    name: str
    size: int
    filled: int = 0


@frozen(kw_only=True)
class DiceDoc(_Doc):
    seed: str = _described(description="1..200 characters of one line; die n is SHA-256 of `seed:n` "
                      "(docs/state-format.md)")
    rolls: int = _described(0, "how many dice the engine has rolled with this seed", ge=0)


@frozen(kw_only=True)
class PartySheetDoc(_Doc):
    fields: dict[str, Any] = _described({})
    lists: dict[str, list[dict[str, Any]]] = _described({})


@frozen(kw_only=True)
class StateDoc(_Doc):
    format: Literal["tagengine.state/1"]
    gameCharacterCards: dict[str, CardDoc] = _described({})
    gamePartySheet: PartySheetDoc = dataclasses.field(default_factory=PartySheetDoc, metadata={
        "json_schema_extra": {"default": {"fields": {}, "lists": {}}}})
    gamePartySheetRevision: int = 0
    rulesetLive: dict[str, LiveDoc] = _described({}, "by normalised character name; `$party` is the party")
    rulesetClocks: list[ClockDoc] = _described([])
    rulesetDice: DiceDoc | None = _described(None, "the engine's dice; a file without it is seeded from its content")


def _keys(doc: type[_Doc]) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(doc))


TOP_KEYS = _keys(StateDoc)
CARD_KEYS = _keys(CardDoc)
LIVE_KEYS = _keys(LiveDoc)
DICE_KEYS = _keys(DiceDoc)


def state_schema() -> dict[str, Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(StateDoc).json_schema(by_alias=True)
