"""JSON Schema of the two file formats (`tagengine schema ruleset|state`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .ruleset.top import RulesetDef


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class PartySheetDoc(_Doc):
    fields: dict[str, Any] = {}
    lists: dict[str, list[dict[str, Any]]] = {}


class StateDoc(_Doc):
    format: Literal["tagengine.state/1"]
    gameCharacterCards: dict[str, CardDoc] = {}
    gamePartySheet: PartySheetDoc = PartySheetDoc()
    gamePartySheetRevision: int = 0
    rulesetLive: dict[str, LiveDoc] = Field({}, description="by normalised character name; `$party` is the party")
    rulesetClocks: list[ClockDoc] = []


# The published schema names the file's parts as the format does (`Pool`, `Track`): the `Def` suffix is
# the code's naming rule (docs/architecture.md), not part of the file format.
_PUBLISHED = {"RulesetDef": "RulesetFile"}


def _published(name: str) -> str:
    return _PUBLISHED.get(name) or (name[:-3] if name.endswith("Def") and name != "FieldDef" and name != "ListDef"
                                    else name)


def _rename(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$defs":
                out[k] = {_published(n): _rename(d) for n, d in v.items()}
            elif k == "$ref" and isinstance(v, str):
                head, _, name = v.rpartition("/")
                out[k] = f"{head}/{_published(name)}"
            elif k == "title" and isinstance(v, str):
                out[k] = _published(v)
            else:
                out[k] = _rename(v)
        return out
    if isinstance(node, list):
        return [_rename(x) for x in node]
    return node


def schema(kind: str) -> dict[str, Any]:
    if kind == "ruleset":
        return _rename(RulesetDef.model_json_schema(by_alias=True))
    if kind == "state":
        return StateDoc.model_json_schema(by_alias=True)
    raise ValueError(kind)
