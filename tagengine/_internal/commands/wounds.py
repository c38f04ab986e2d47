"""`op="damage"`: the pool form (DESIGN.md section 5) and the wound form (spec section 10, DEC-16)."""

from __future__ import annotations

from ..ruleset import Ruleset
from ..ruleset.live import TrackDef
from ..sheet import marking
from ..sheet.views import now_text
from ..state import GameState, WoundMarks, updated
from ..tags import Tag
from .family import Shape
from .numbers import parse_int
from .pools import amount_of, damage_pool
from .result import Outcome, Result, ok, refuse
from .subject import Subject, character_op, find


def with_marks(state: GameState, subj: Subject, t: TrackDef, marks: tuple[str | None, ...],
               overflow: int) -> GameState:
    """The state with the subject's marks of track `t` replaced."""
    return subj.with_live(state, subj.live.but(marks=updated(subj.live.marks, t.id, WoundMarks(marks, overflow))))


def kind_of(subj: Subject, t: TrackDef, name: str) -> str | None:
    """The one kind of the track `name` names (DEC-8), or None."""
    kind = find(subj.ev.idx.kinds[t.id], name, "kind")
    return None if isinstance(kind, Result) else kind.id


# written: a pool or a wound track (its kind paired with it in the grammar's domains), never both (one-action)
@character_op("damage", optional=["pool", "track", "kind", "amount", "box"],
              written=Shape(choose_one=("pool", "track"), optional=("amount",)))
def damage(rs: Ruleset, state: GameState, subj: Subject, tag: Tag) -> Outcome:
    if tag.has("pool") and tag.has("track"):
        return refuse(state, "one-action")
    if tag.has("pool"):
        return damage_pool(rs, state, subj, tag)  # WOUND-29: the pool form is unchanged
    if not tag.has("track"):
        return refuse(state, "missing-attribute")
    t = find(subj.ev.idx.tracks, tag.get("track") or "", "track")
    if isinstance(t, Result):
        return Outcome(t, state)
    if not t.is_wound:
        return refuse(state, "not-wound-track")  # DEC-16
    amount = amount_of(tag)
    if amount is None:
        return refuse(state, "invalid-amount")
    model, current, levels = subj.ev.wound_marks(t)
    box = None
    if tag.has("box"):
        box = parse_int(tag.get("box"))
        if box is None:
            return refuse(state, "invalid-amount")
        if not model.indexed or not 1 <= box <= model.length:
            return refuse(state, "bad-box")  # DEC-16; box= only on a track that fills by box (WOUND-28)
    kind_name = tag.get("kind")
    if amount < 0:  # WOUND-23: a heal is the same command with a negative amount
        kind = kind_of(subj, t, kind_name) if kind_name is not None else None
        marks, overflow = marking.heal(model, current.marks, current.overflow, -amount, kind)
    else:
        if kind_name is None:
            return refuse(state, "missing-kind")
        kind = kind_of(subj, t, kind_name)
        if kind is None:
            return refuse(state, "unknown-kind")
        try:
            marks, overflow = marking.mark(model, current.marks, current.overflow, kind, amount, box)
        except marking.TrackFull:
            return refuse(state, "track-full")  # WOUND-52, WOUND-53: the whole command
    filled = len(marks) - marks.count(None)
    now = now_text(t.boxes is not None, levels, model.length, filled, overflow)  # DEC-11
    return Outcome(ok(now), with_marks(state, subj, t, marks, overflow))
