"""The `[sheet: ...]` family: its op is the `op` attribute; each op lives in a module of its own."""

from __future__ import annotations

from typing import Any

from ..ruleset import Ruleset
from ..sheet import Eval
from ..state import PARTY, GameState
from ..tags import Tag
from . import advance, combat, conditions, livetext, pools, rests, states, tracks, wounds
from .family import Family
from .result import Result, refused
from .subject import subject


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    op = tag.get("op")
    if op is None:
        return refused("missing-attribute")
    return op.strip().lower()


def teach(rs: Ruleset, state: GameState) -> dict[str, Any]:
    """DEC-18, GM-19..21: every command the engine accepts for this ruleset, with its own names."""
    live = rs.file.sheet.live
    plain = [t for t in live.tracks if not t.is_wound]
    wounds = [t for t in live.tracks if t.is_wound]
    names = list(state.cards)
    return {
        "who": names[0] if names else "Name",
        "several": len(names) > 1,
        "pools": [p.label for p in live.pools],
        "temp": [p.label for p in live.pools if p.allowTemp],
        "tracks": [t.label for t in plain],
        "wounds": [{"label": t.label, "boxed": t.boxes is not None, "indexed": t.fill == "indexed",
                    "levels": [lv.label for lv in t.levels or []],
                    "kinds": [f"{k.id} ({k.label})" for k in sorted(t.kinds or [], key=lambda k: k.severity)]}
                   for t in wounds],
        "states": [{"label": st.label, "choices": [st.label_of(v) for v in st.values]} for st in live.states],
        "conditions": [c.label for c in live.conditions],
        "text": [t.label for t in live.text],
        "rests": [r.label for r in rs.file.sheet.rests],
        "combat": combat.taught(rs),
        "rows": pools.taught_rows(subject(rs, state, names[0]).ev if names else Eval(rs, {}, None)),
        "party": None if rs.file.party is None else {
            "pools": [p.label for p in rs.file.party.pools],
            "rows": pools.taught_rows(subject(rs, state, PARTY, party=True).ev),
            "advance": [f.label for f in rs.file.party.fields
                        if rs.file.party.advancement and f.id in rs.file.party.advancement.fields]},
    }


# The sheet ops, in the order the docs and the reminder list them. Add an op here.
FAMILY = Family.of("sheet", op_of, (
    pools.spend, pools.restore, wounds.damage, combat.hit, combat.heal_in_fight, tracks.track, states.set_state,
    conditions.condition, livetext.set_text, rests.rest, advance.advance,
), teach)
