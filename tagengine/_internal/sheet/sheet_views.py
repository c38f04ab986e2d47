"""The `SheetView`s of a game state: a whole sheet evaluated for people (a character, the party, a bare card),
cached per snapshot, since snapshots never change. `evaluator.py` holds the evaluation itself (`Eval`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

from ..errors import NotFoundError
from ..memo import IdentityCache
from ..records import frozen
from ..ruleset import Ruleset
from ..state import PARTY, GameState, LiveValues, freeze
from .check_numbers import check_number
from .combat_health import health_view
from .evaluator import Eval
from .views import CheckNumber, PoolView, SheetView, StateView, TrackView

_SHEETS: IdentityCache[SheetView] = IdentityCache(512)
Checks = tuple[tuple[CheckNumber, ...], tuple[CheckNumber, ...], tuple[CheckNumber, ...]]  # abilities, skills, saves
_CARD_CHECKS: IdentityCache[Checks | tuple[()]] = IdentityCache(512)  # () when they read a live value
_CARD_PARTS: IdentityCache[CardPart | None] = IdentityCache(512)  # None when it reads a live value


class _LiveRead(BaseException):
    """A check number read a live value (`_Unread`). Not an `Exception`, so no `except Exception` on the
    evaluator's path can swallow it and let a trial that read one pass as the card's alone."""


class _Unread:
    """Live values that cannot be read: every attribute raises `_LiveRead`. The evaluator reads live values
    only through the attributes of its `live` (the state's `LiveValues`), so check numbers computed with this
    in its place and finished read none: they are the card's alone."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise _LiveRead(name)


_UNREAD: Any = _Unread()


def _cached(key_objs: tuple[Any, ...], build: Any) -> SheetView:
    """A state's parts are never mutated, so the same objects give the same sheet."""
    return _SHEETS.get(key_objs, build)


def view_character(rs: Ruleset, state: GameState, name: str) -> SheetView:
    """The evaluated sheet of the character `name` (matched as DEC-8). Raises NotFoundError when none is."""
    card_name = state.character(name)
    if card_name is None:
        raise NotFoundError("character", name, state.characters)
    card, live = state.cards[card_name], state.live_of(card_name)
    # the name is a key too: two characters may hold the very same card and live values (a start without cards)
    return _cached((rs, card, live, card_name), lambda: view_of(Eval(rs, card, live), card_name, by_card=True))


def view_party(rs: Ruleset, state: GameState) -> SheetView | None:
    """The party sheet, with `fromMembers` read from the characters as they are (PARTY-31)."""
    if rs.file.party is None:
        return None
    live = state.live_of(PARTY)
    return _cached((rs, state.party_sheet, live, state.cards),
                   lambda: view_of(Eval(rs, state.party_sheet, live, party=True, members=state.cards),
                                 rs.file.party.label if rs.file.party else "Party"))


def view_card(rs: Ruleset, card: Mapping[str, Any], live: LiveValues | None, name: str = "") -> SheetView:
    """Evaluate a card directly: with live=None, live reads take the start of the game (REF-12)."""
    return view_of(Eval(rs, card, live), name)


def view_of(ev: Eval, name: str, *, by_card: bool = False) -> SheetView:
    """The whole `SheetView` of an evaluation, titled `name`; each element a `hideWhen` hides is noted with why.
    `by_card`: what the card alone decides, its part and its check numbers, kept by the card's object (`kept_part`,
    `card_checks`), for a state's card, which many turns share; a card seen once (an editor's draft) would only pay
    for the check numbers' trial."""
    part = kept_part(ev) if by_card and not ev.party else part_of(ev)
    party_def = ev.rs.file.party if ev.party else None
    s = ev.rs.file.sheet
    hidden = part.hidden
    pools = []
    for p in party_def.pools if party_def else s.live.pools:
        temp = ev.live.temp.get(p.id, 0) if p.allowTemp else 0
        why = hidden.get(f"pools.{p.id}") if p.hideWhen is not None else None
        pools.append(PoolView(p.id, p.label, ev.pool_cur(p), ev.pool_max(p), temp, p.group, why))
    if ev.party:
        return SheetView(name, part.fields, hidden, part.derived, part.lists, pools=tuple(pools))
    tracks, wounds = [], []
    for t in s.live.tracks:
        if t.is_wound:
            wounds.append(ev.wound(t))
        else:
            why = hidden.get(f"tracks.{t.id}") if t.hideWhen is not None else None
            default = t.default if t.default is not None else t.min
            tracks.append(TrackView(t.id, t.label, ev.plain_value(t), t.min, ev.plain_max(t), default, t.alwaysShow,
                                    why))
    states = []
    for st in s.live.states:
        why = hidden.get(f"states.{st.id}") if st.hideWhen is not None else None
        value = ev.state_value(st.id) or st.start
        states.append(StateView(st.id, st.label, value, st.label_of(value),
                                tuple((v, st.label_of(v)) for v in st.values), why))
    row_pools = {lst.id: tuple(cells) for lst in s.lists if (cells := ev.row_pools(lst.id)) is not None}
    abilities, skills, saves = card_checks(ev) if by_card else _all_checks(ev)
    return SheetView(
        name, part.fields, hidden, part.derived, part.lists, abilities=abilities, skills=skills, saves=saves,
        pools=tuple(pools), tracks=tuple(tracks), wounds=tuple(wounds), states=tuple(states),
        conditions=tuple((c.id, c.label, c.id in ev.live.conditions) for c in s.live.conditions),
        text=tuple((t.id, t.label, ev.live.text.get(t.id, "")) for t in s.live.text),
        row_pools=row_pools, health=health_view(ev),
    )


@frozen(slots=True)
class CardPart:
    """What a sheet shows that its card decides but the check numbers (`card_checks`): the fields, every element a
    `hideWhen` hides and why (a `hideWhen` reads fields only), the derived values and the lists; read-only, so
    views share it."""

    fields: Mapping[str, Any]
    hidden: Mapping[str, str]
    derived: Mapping[str, int]
    lists: Mapping[str, Sequence[Mapping[str, Any]]]


def part_of(ev: Eval) -> CardPart:
    """The `CardPart` of an evaluation: one function for the part kept by a card and the part read from each
    evaluation, so the two cannot differ."""
    party_def = ev.rs.file.party if ev.party else None
    s = ev.rs.file.sheet
    hidden: dict[str, str] = {}

    def note(kind: str, element: Any) -> None:
        if getattr(element, "hideWhen", None) is not None and (why := ev.hidden(element)):
            hidden[f"{kind}.{element.id}"] = why

    fields = {}
    for fd in party_def.fields if party_def else s.fields:
        note("fields", fd)
        fields[fd.id] = ev.fields[fd.id]
    derived = {}
    lists: dict[str, Sequence[Mapping[str, Any]]] = {}
    if party_def is None:
        derived = ev.all_derived()
        for d in s.derived:
            if d.hideWhen is not None:  # a call per derived value was 6 % of an 800-value sheet's evaluation
                note("derived", d)
    for lst in party_def.lists if party_def else s.lists:
        note("lists", lst)
        lists[lst.id] = ev.list_rows(lst.id) or []
    for p in party_def.pools if party_def else s.live.pools:
        note("pools", p)
    if party_def is None:
        for t in s.live.tracks:
            if not t.is_wound:
                note("tracks", t)
        for st in s.live.states:
            note("states", st)
    return CardPart(MappingProxyType(fields), MappingProxyType(hidden), MappingProxyType(derived), freeze(lists))


def kept_part(ev: Eval) -> CardPart:
    """A character's `CardPart`, kept by its ruleset and card when working it out read no live value (a derived
    value may read one): most turns change live values only, so a changed character's view reads its card's part
    again, as PF-38 keeps its check numbers (`card_checks`) (PF-60). It is worked out by this evaluation, its live
    values watched (`_Watched`), not by a trial beside it: a card seen once (each draft the editor posts is a new
    card) costs what it did. Not for the party sheet, whose fields read its members."""
    made: list[CardPart] = []

    def build() -> CardPart | None:
        watched = _Watched(ev.live)
        ev.live = cast(LiveValues, watched)
        try:
            part = part_of(ev)
        finally:
            ev.live = watched.live
        made.append(part)
        return None if watched.read else part

    kept = _CARD_PARTS.get((ev.rs, ev.card), build)
    if made:  # worked out here: its derived values are this evaluation's already
        return made[0]
    if kept is None:  # it read a live value before: read from this evaluation's
        return part_of(ev)
    ev.known_derived(kept.derived)
    return kept


class _Watched:
    """Live values whose reads are noted: the evaluator reads live values only through the attributes of its
    `live`, so what it worked out with these in their place, while `read` stayed False, is the card's alone."""

    __slots__ = ("live", "read")

    def __init__(self, live: LiveValues) -> None:
        self.live = live
        self.read = False

    def __getattr__(self, name: str) -> Any:  # an attribute of the live values (the slots are found first)
        self.read = True
        return getattr(self.live, name)


def kept_by_card(rs: Ruleset, card: Mapping[str, Any]) -> bool:
    """Whether a state's character with this card shares, under any live values, all the card decides: its part
    (once a view of it has been made) and its check numbers read no live value, so its views hold the same objects
    for them, and what is made of those alone may be kept by them too (the reminder's card lines,
    prompt/template_data.py)."""
    return _CARD_PARTS.find((rs, card)) is not None and bool(_CARD_CHECKS.get((rs, card), lambda: _card_only(rs, card)))


def _all_checks(ev: Eval) -> Checks:
    s = ev.rs.file.sheet
    return (tuple(check_number(ev, "ability", a.id) for a in s.abilities),
            tuple(check_number(ev, "skill", k.id) for k in s.skills),
            tuple(check_number(ev, "save", k.id) for k in s.saves))


def _card_only(rs: Ruleset, card: Mapping[str, Any]) -> Checks | tuple[()]:
    try:
        return _all_checks(Eval(rs, card, _UNREAD))
    except _LiveRead:
        return ()


def card_checks(ev: Eval) -> Checks:
    """A character's check numbers. Most turns change live values and leave the card as it was, and in many
    rulesets no check number reads a live value (no wound penalty, no adjustment or cap that reads one): then
    they are computed once per card, with live values that cannot be read (`_Unread`), and kept by the card's
    object (a state is read-only all the way down); when one reads a live value, they are computed from the
    live values each time, as before. They were two thirds of a changed character's sheet (PF-38)."""
    kept = _CARD_CHECKS.get((ev.rs, ev.card), lambda: _card_only(ev.rs, ev.card))
    return kept if kept else _all_checks(ev)
