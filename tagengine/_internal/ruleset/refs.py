"""Value references (REF-1): an object with exactly one key naming where a number comes from."""


from typing import Any, Literal

from ..records import frozen
from .base import BaseDef, Id, worked_out

REF_KEYS = (
    "const", "field", "derived", "abilityScore", "abilityMod", "abilityModFromField",
    "skillMod", "saveMod", "listSum", "livePool", "liveTrack", "itemStat", "liveState",
)


@frozen(kw_only=True, slots=True)
class ListSumDef(BaseDef):
    list: Id
    column: Id
    onlyWhen: Id | None = None


@frozen(kw_only=True, slots=True)
class ValueRefDef(BaseDef):
    """`{"derived": "grit_max"}`; `liveTrack` may carry `read` beside it (REF-9).

    `liveState` is accepted here only so `enumTable.from` can share the type; the import checks
    refuse it anywhere else (REF-1 note, ENUM-2).
    """

    const: int | None = None
    field: Id | None = None
    derived: Id | None = None
    abilityScore: Id | None = None
    abilityMod: Id | None = None
    abilityModFromField: Id | None = None
    skillMod: Id | None = None
    saveMod: Id | None = None
    listSum: ListSumDef | None = None
    livePool: Id | None = None
    liveTrack: Id | None = None
    read: Literal["value", "filled", "remaining", "penalty"] | None = None
    itemStat: Any = None
    liveState: Id | None = None
    key: str = worked_out()  # the one key of REF_KEYS written; "" until checked

    def derive(self) -> None:
        object.__setattr__(self, "key", next((k for k in REF_KEYS if k in self.written), ""))

    def check(self) -> None:
        keys = [k for k in REF_KEYS if k in self.written]
        if len(keys) != 1:
            raise ValueError(
                f"a value reference has exactly one of {', '.join(REF_KEYS[:-1])}; got {keys or 'none'}"
            )
        if getattr(self, keys[0]) is None:  # `{"derived": null}` names nothing: no check may read it as a name
            raise ValueError(f"wrong-type: `{keys[0]}` is null; a value reference names what it reads")
        if self.read is not None and keys[0] != "liveTrack":
            raise ValueError("`read` goes only with `liveTrack`")

    @property
    def target(self) -> Any:
        return getattr(self, self.key)

    def describe(self) -> str:
        target = self.target
        if isinstance(target, ListSumDef):
            target = f"{target.list}.{target.column}"
        return f"{self.key} {target!r}"
