"""Who or what a `[sheet: ...]` tag acts on: `who`, `who="party"`, `sheet="party"`, and names (DEC-8, DEC-10).

Each op's handler works on one `Subject`; `character_op` checks the attributes, resolves the subjects
and, for `who="party"`, applies the op to each character in turn and writes one receipt for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from ..memo import IdentityCache
from ..ruleset import Ruleset
from ..ruleset.index import ById, names_of
from ..sheet import Eval
from ..state import PARTY, GameState, LiveValues
from ..tags import Tag
from ..text import normalise
from .family import Op, Shape
from .result import Outcome, Result, ok, refuse, refused

COMMON = frozenset({"who", "op", "sheet"})
T = TypeVar("T")


class Subject(NamedTuple):
    """One sheet a command acts on: a character (by card name) or the party (`$party`), with its evaluation.
    A named tuple: every sheet command makes one."""

    name: str
    ev: Eval
    party: bool = False

    @property
    def live(self) -> LiveValues:
        return self.ev.live

    def with_live(self, state: GameState, live: LiveValues) -> GameState:
        return state.with_live(self.name, live)


Apply = Callable[[Ruleset, GameState, Subject, Tag], Outcome]


_NAMES: IdentityCache[dict[str, list[Any]]] = IdentityCache(4096)


def _names(items: Iterable[T]) -> dict[str, list[T]]:
    """Items by normalised id and label, built once per collection (collections live with their ruleset);
    a ruleset's indexes (`ById`) hold theirs already."""
    return _NAMES.get((items,), lambda: names_of(items))


def find(items: Iterable[T], name: str, what: str) -> T | Result:
    """The one item whose id or label matches `name` (DEC-8); `unknown-<what>` or `ambiguous`."""
    table = items.by_name if isinstance(items, ById) else _names(items)
    hits = table.get(normalise(name), ())
    if not hits:
        return refused(f"unknown-{what}")
    if len(hits) > 1:
        return refused("ambiguous")
    return hits[0]


def subject(rs: Ruleset, state: GameState, name: str, *, party: bool = False) -> Subject:
    if party:
        ev = Eval(rs, state.party_sheet, state.live_of(PARTY), party=True, members=state.cards)
        return Subject(PARTY, ev, party=True)
    return Subject(name, Eval(rs, state.cards[name], state.live_of(name)))


def character_op(op: str, required: Iterable[str] = (), optional: Iterable[str] = (),
                 choose_one: Iterable[str] = (), party: bool = False, character: bool = True,
                 written: Shape | None = None) -> Callable[[Apply], Op]:
    """A sheet op acting on one subject at a time: checks the attributes, resolves `who` (or the party
    sheet) and applies `fn` to each subject. `choose_one`: exactly one of these (`by` or `to`). The reply's
    grammar writes the same attributes (`Shape`), or `written` where the handler tells more apart than the
    attribute lists say (damage: a pool or a track)."""
    required, optional, choose_one = tuple(required), tuple(optional), tuple(choose_one)
    req, opt, one = frozenset(required), frozenset(optional), frozenset(choose_one)
    allowed = frozenset(COMMON | req | opt | one)
    shape = written or Shape(required=required, choose_one=choose_one, optional=optional)
    shape = Shape((("op", op),), shape.required, shape.choose_one, shape.optional, party, character)

    def build(fn: Apply) -> Op:
        def handler(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
            keys = tag.keyset
            sheet = tag.attrmap.get("sheet")
            on_party = sheet is not None
            if on_party and (normalise(sheet) != "party" or rs.party is None):
                return refuse(state, "unknown-sheet")
            if (on_party and not party) or (not on_party and not character):
                return refuse(state, "unsupported-op")  # DEC-13
            if not keys <= allowed or (on_party and "who" in keys):
                return refuse(state, "unknown-attribute")  # PARTY-16: a party command leaves `who` out
            if not req <= keys:
                return refuse(state, "missing-attribute")
            if one:
                given = len(one & keys)
                if not given:
                    return refuse(state, "missing-attribute")
                if given > 1:
                    return refuse(state, "one-action")
            if on_party:
                return fn(rs, state, subject(rs, state, PARTY, party=True), tag)
            name = tag.attrmap.get("who")
            if name is not None and name in state.cards and normalise(name) != "party":
                return fn(rs, state, subject(rs, state, name), tag)  # `who` as the card is named: who() says so too
            names = who(state, tag)
            if isinstance(names, Result):
                return Outcome(names, state)
            if len(names) == 1 and not _is_party_word(tag):
                return fn(rs, state, subject(rs, state, names[0]), tag)
            return each(rs, state, names, tag, fn)

        return Op(op, handler, shape)

    return build


def _is_party_word(tag: Tag) -> bool:
    w = tag.get("who")
    return w is not None and normalise(w) == "party"


def who(state: GameState, tag: Tag) -> list[str] | Result:
    """`who` names a character (DEC-8), or `party` for each of them (DEC-10, PARTY-17). It may be left
    out when the game has exactly one character (DESIGN.md section 5)."""
    name = tag.get("who")
    if name is None:
        if len(state.cards) == 1:
            return list(state.cards)
        return refused("missing-attribute")
    if normalise(name) == "party":
        return list(state.cards) if state.cards else refused("unknown-character")
    card = state.character(name)
    return [card] if card is not None else refused("unknown-character")


def each(rs: Ruleset, state: GameState, names: list[str], tag: Tag, fn: Apply) -> Outcome:
    """DEC-10: each character in turn; ok when all succeed, refused when all are refused, else partial."""
    nows, reasons = [], []
    for name in names:
        out = fn(rs, state, subject(rs, state, name), tag)
        state = out.state
        if out.result.result == "refused":
            reasons.append(f"{name}: {out.result.reason}")
        else:
            nows.append(f"{name} {out.result.now}" if out.result.now is not None else name)
    if not reasons:
        return Outcome(ok("; ".join(nows)), state)
    if not nows:
        return Outcome(Result("refused", reason="; ".join(reasons)), state)
    return Outcome(Result("partial", now="; ".join(nows), reason="; ".join(reasons)), state)

