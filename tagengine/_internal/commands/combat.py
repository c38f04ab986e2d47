"""`op="hit"` and `op="heal"`: what a landed hit and a heal in a fight do to a character's `combat.health`
(WOUND-32..39; docs/decisions.md CB-1..CB-6). The fight around them (turns, opponents, the engine's picker,
GM-7..11) is not built: the spec leaves it undefined (U-25).
"""

from __future__ import annotations

from typing import Any

from ..ruleset import Ruleset
from ..ruleset.live import PoolDef, TrackDef
from ..sheet import marking
from ..sheet.combat_health import health_def, health_view
from ..state import GameState
from ..tags import Tag
from ..text import normalise
from .pools import amount_of, set_pool
from .result import Outcome, Result, ok, refuse, refused
from .subject import Subject, character_op, subject
from .wounds import with_marks


def _struck(rs: Ruleset, subj: Subject) -> PoolDef | TrackDef | Result:
    """The pool or wound track a fight hits: `unsupported-op` without `combat.health` (DEC-13), `hidden`
    when this sheet hides it."""
    combat = rs.file.combat
    if combat is None or combat.health is None:
        return refused("unsupported-op")
    found = health_def(subj.ev)
    return found if found is not None else refused("hidden")


def damage_types(rs: Ruleset) -> list[str]:
    """The damage types the ruleset names: `damageTypes`, then the types `damageKinds.map` adds."""
    combat = rs.file.combat
    if combat is None:
        return []
    mapped = list(combat.damageKinds.map) if combat.damageKinds is not None else []
    return list(dict.fromkeys([*(combat.damageTypes or []), *mapped]))


def damage_type(rs: Ruleset, tag: Tag) -> str | Result | None:
    """The declared type `type` names (DEC-8), None when it is left out; any type when the ruleset declares
    none (it only describes the hit). A type the ruleset does not declare is `unknown-damage-type` (CB-2)."""
    name = tag.get("type")
    if name is None:
        return None
    declared = damage_types(rs)
    if not declared:
        return name
    hits = [d for d in declared if normalise(d) == normalise(name)]
    return hits[0] if hits else refused("unknown-damage-type")


def kind_hit(rs: Ruleset, t: TrackDef, dtype: str | None) -> str | Result:
    """WOUND-33: the kind `damageKinds.map` gives the hit's type. A type the map does not name marks the
    track's only kind, or its lightest when the ruleset maps no type at all; otherwise the type is needed
    (CB-2)."""
    combat = rs.file.combat
    mapping = combat.damageKinds.map if combat is not None and combat.damageKinds is not None else {}
    kind = mapping.get(dtype) if dtype is not None else None
    if kind is not None:
        return kind
    kinds = sorted(t.kinds or [], key=lambda k: k.severity)
    if len(kinds) == 1 or (kinds and not mapping):
        return kinds[0].id
    return refused("unknown-damage-type" if dtype is not None else "missing-attribute")


def _now(rs: Ruleset, state: GameState, name: str) -> str | None:
    """The receipt's `now`: the health as it now reads, down or not (WOUND-34, WOUND-39; CB-6)."""
    view = health_view(subject(rs, state, name).ev)
    return view.now if view is not None else None


@character_op("hit", optional=["type", "amount"])
def hit(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """A landed hit of `amount` points (default 1). A pool loses them, temporary points first; a wound track
    takes `damageKinds.marks` marks of the kind its type gives (WOUND-33), on the first box, or on the box
    its points name under `per-point` damage (WOUND-35); a hit is never refused for want of a box: it puts
    the character down (WOUND-34, WOUND-36)."""
    found = _struck(rs, subj)
    if isinstance(found, Result):
        return Outcome(found, state)
    amount = amount_of(tag)
    if amount is None or amount < 1:
        return refuse(state, "invalid-amount")  # a landed hit does damage; a heal is op="heal"
    dtype = damage_type(rs, tag)
    if isinstance(dtype, Result):
        return Outcome(dtype, state)
    if isinstance(found, PoolDef):
        cur = subj.ev.pool_cur(found)
        temp = subj.live.temp.get(found.id, 0) if found.allowTemp else 0
        soaked = min(temp, amount)
        after = set_pool(state, subj, found, max(0, cur - (amount - soaked)), temp - soaked)
        return Outcome(ok(_now(rs, after, subj.name)), after)
    kind = kind_hit(rs, found, dtype)
    if isinstance(kind, Result):
        return Outcome(kind, state)
    combat = rs.file.combat
    assert combat is not None  # _struck found one
    count = combat.damageKinds.marks if combat.damageKinds is not None else 1
    box = amount if combat.damage == "per-point" else 1
    model, current, _ = subj.ev.wound_marks(found)
    marks, overflow = marking.mark_hit(model, current.marks, current.overflow, kind, count, box)
    after = with_marks(state, subj, found, marks, overflow)
    return Outcome(ok(_now(rs, after, subj.name)), after)


@character_op("heal", optional=["amount", "temp"])
def heal_in_fight(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    """A heal in a fight. A pool gets `amount` points back, up to its maximum, or with the flag `temp`
    temporary points where it allows them (as op="restore", decisions C-3). A wound track loses one mark
    per heal, whatever its amount: overflow first, then the lightest mark of any kind (WOUND-24, WOUND-37;
    CB-5); it holds no temporary points (WOUND-38)."""
    found = _struck(rs, subj)
    if isinstance(found, Result):
        return Outcome(found, state)
    amount = amount_of(tag)
    if amount is None or amount < 0:
        return refuse(state, "invalid-amount")
    if tag.has("temp") and (tag.get("temp") is not None or isinstance(found, TrackDef) or not found.allowTemp):
        return refuse(state, "invalid-value")  # WOUND-38; a pool without allowTemp (C-3)
    if isinstance(found, PoolDef):
        cur = subj.ev.pool_cur(found)
        temp = subj.live.temp.get(found.id, 0)
        if tag.has("temp"):
            after = set_pool(state, subj, found, cur, max(temp, amount))
        else:
            after = set_pool(state, subj, found, min(subj.ev.pool_max(found), cur + amount))
        return Outcome(ok(_now(rs, after, subj.name)), after)
    model, current, _ = subj.ev.wound_marks(found)
    marks, overflow = marking.heal(model, current.marks, current.overflow, 1)
    after = with_marks(state, subj, found, marks, overflow)
    return Outcome(ok(_now(rs, after, subj.name)), after)


def taught(rs: Ruleset) -> dict[str, Any] | None:
    """What prompts/teach/sheet.j2 teaches of a fight, only to a ruleset that declares `combat.health`
    (CB-1): the health's label, the damage types (with the kind each marks), the marks a hit makes and
    whether its points name a box."""
    combat = rs.file.combat
    h = combat.health if combat is not None else None
    if combat is None or h is None:
        return None
    found = rs.sheet.pools.get(h.pool) if h.pool is not None else rs.sheet.tracks.get(h.track or "")
    if found is None:
        return None
    mapping = combat.damageKinds.map if combat.damageKinds is not None else {}
    return {"label": found.label, "pool": isinstance(found, PoolDef), "types": damage_types(rs),
            "kinds": [f"{d}: {k}" for d, k in mapping.items()],
            "marks": combat.damageKinds.marks if combat.damageKinds is not None else 1,
            "per_point": combat.damage == "per-point"}
