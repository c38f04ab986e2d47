"""Checks the engine rolls (spec U-5, U-26; docs/decisions.md CK-1..CK-9): `[check: who= skill=]`.

The number comes from the sheet engine (`sheet/check_numbers.check_number`: untrained rules, caps, `with=`,
the wound penalty, `resolution.adjust`); this module only rolls it, with the state's dice, and writes the roll
record as the receipt. A refused check rolls nothing and keeps the dice where they were (UNTR-9).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.index import ById
from ..sheet import CheckNumber, Eval
from ..sheet.check_numbers import check_number, fight_number
from ..state import GameState
from ..tags import Tag
from ..text import normalise
from .family import Family, Op, Shape
from .numbers import parse_int
from .result import Outcome, Result, refused
from .subject import find, subject

KINDS = ("skill", "ability", "save")  # what a check rolls: exactly one of them (CK-2), or none in a fight (CB-7)
FIGHT = ("attack", "save", "contest", "initiative")  # the rolls a fight builds from a sheet (ADJ-9, CB-7)
ORDER = ("who", *KINDS, "with", "dc", "difficulty", "fight")  # its attributes (server/checks.py orders a tag so)
ATTRIBUTES = frozenset(ORDER)
DEFAULT_TARGET = 4  # CK-4: a dice pool that declares no target counts 4, 5 and 6 as successes
MAX_POOL = 100  # CK-13: the most dice one check rolls; a sheet that asks for more is refused, not rolled


def signed(n: int) -> str:
    return f"{n:+d}"


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    """A check has one op, `roll`, once it names exactly one skill, ability or save (a fight's roll may name
    none, CB-7) and nothing unknown."""
    if any(k not in ATTRIBUTES for k in tag.keys):
        return refused("unknown-attribute")
    kinds = [k for k in tag.keys if k in KINDS]
    if len(kinds) > 1:
        return refused("one-action")
    if tag.has("with") and (not kinds or kinds[0] == "ability"):
        return refused("unknown-attribute")  # `with=` swaps a skill's or save's ability (CAP-3)
    if not kinds and not tag.has("fight"):
        return refused("missing-attribute")
    return "roll"


@frozen(slots=True)
class RolledCheck:
    """One check rolled: its result (the receipt's record), the state after it (the dice moved on), and for
    the dice card the number rolled (`number`), the faces, the target or dc, and the outcome."""

    result: Result
    state: GameState
    who: str | None = None
    number: CheckNumber | None = None
    faces: tuple[int, ...] = ()
    sides: int = 0
    target: int | None = None
    dc: int | None = None
    outcome: str | None = None


def _pick(items: Iterable[Any], name: str | None, what: str) -> str | Result:
    if name is None:
        return refused("missing-attribute")
    hit = find(items, name, what)
    return hit if isinstance(hit, Result) else str(hit.id)


def kind_named(rs: Ruleset, name: str) -> str:
    """What a bare name rolls (CK-10): a skill of that name, else a save, else an ability; `skill` when none
    matches, so the roll is refused `unknown-skill`."""
    for kind, items in (("skill", rs.sheet.skills.items), ("save", rs.sheet.saves.items),
                        ("ability", rs.sheet.abilities.items)):
        if not isinstance(find(items, name, kind), Result):
            return kind
    return "skill"


def roll_tag(rs: Ruleset, state: GameState, tag: Tag) -> RolledCheck:
    """Roll the check `tag` asks for against `state`; the state given is never changed. Never raises."""
    op = op_of(rs, tag)
    if isinstance(op, Result):
        return RolledCheck(op, state)
    roller = _roller(rs, state, tag.get("who"))
    if isinstance(roller, RolledCheck):
        return roller
    card, ev = roller
    fight = None
    if tag.has("fight"):
        fight = next((f for f in FIGHT if f == normalise(tag.get("fight") or "")), None)
        if fight is None:
            return RolledCheck(refused("invalid-value"), state, card)
    dc, difficulty = _number(tag, "dc"), _number(tag, "difficulty")
    kind = next((k for k in tag.keys if k in KINDS), None)
    if kind is None:  # ADJ-9: a fight's roll read from no ability, skill or save
        return _rolled(rs, state, card, fight_number(ev, fight or ""), dc, difficulty)
    cid = _pick(_items(ev, kind), tag.get(kind), kind)
    if isinstance(cid, Result):
        return RolledCheck(cid, state, card)
    if tag.has("with") and tag.get("with") is None:  # a bare `with` flag names no ability
        return RolledCheck(refused("missing-attribute"), state, card)
    return _swapped(rs, state, (card, ev, cid), kind, tag.get("with"), dc, difficulty)


def _number(tag: Tag, key: str) -> str | None:
    """`dc` or `difficulty` as written; "" for a bare flag (a number left out: `invalid-amount`)."""
    value = tag.get(key)
    return "" if value is None and tag.has(key) else value


def roll_check(rs: Ruleset, state: GameState, who: str | None, kind: str, name: str, *, swap: str | None = None,
               dc: str | None = None, difficulty: str | None = None) -> RolledCheck:
    """One named check rolled for one character, from plain arguments: the roll a `[check:]` tag with these
    attributes makes (`tagengine roll`). `who` None: the game's one character; `kind` one of KINDS; `swap`
    the `with=` ability; `dc` (dice sum) and `difficulty` (dice pool) as a tag writes them. Refusals are a
    tag's (`missing-attribute`, `unknown-skill`, `untrained`...). The state given is never changed."""
    if kind not in KINDS:
        return RolledCheck(refused("unknown-attribute"), state)
    if kind == "ability" and swap is not None:
        return RolledCheck(refused("unknown-attribute"), state)  # `with=` swaps a skill's or save's ability (CAP-3)
    roller = _roller(rs, state, who)
    if isinstance(roller, RolledCheck):
        return roller
    card, ev = roller
    cid = _pick(_items(ev, kind), name, kind)
    if isinstance(cid, Result):
        return RolledCheck(cid, state, card)
    return _swapped(rs, state, (card, ev, cid), kind, swap, dc, difficulty)


def _roller(rs: Ruleset, state: GameState, who: str | None) -> tuple[str, Eval] | RolledCheck:
    """The character who rolls: its card name and sheet; else the refusal."""
    if who is not None and normalise(who) == "party":
        return RolledCheck(refused("invalid-value"), state)  # a check is one character's roll (CK-2)
    if who is None:
        card = next(iter(state.cards)) if len(state.cards) == 1 else None  # DESIGN.md section 5
        if card is None:
            return RolledCheck(refused("missing-attribute"), state)
    else:
        card = state.character(who)
        if card is None:
            return RolledCheck(refused("unknown-character"), state)
    return card, subject(rs, state, card).ev


def _items(ev: Eval, kind: str) -> ById[Any]:
    """The skills, saves or abilities a check of `kind` names one of: the index, whose names are built once."""
    return ev.idx.skills if kind == "skill" else ev.idx.saves if kind == "save" else ev.idx.abilities


def _swapped(rs: Ruleset, state: GameState, named: tuple[str, Eval, str], kind: str, swap: str | None,
             dc_given: str | None, difficulty_given: str | None) -> RolledCheck:
    """The named check, its ability swapped for the `with=` one (CAP-3), rolled; ADJ-8, ADJ-9: a fight's roll
    made with an ability, skill or save gets that ability's `adjust` entries as any check does."""
    card, ev, cid = named
    swapped: str | None = None
    if swap is not None:
        got = _pick(ev.idx.abilities, swap, "ability")
        if isinstance(got, Result):
            return RolledCheck(got, state, card)
        swapped = got
    return _rolled(rs, state, card, check_number(ev, kind, cid, swapped), dc_given, difficulty_given)


def _rolled(rs: Ruleset, state: GameState, card: str, number: CheckNumber, dc_given: str | None,
            difficulty_given: str | None) -> RolledCheck:
    """`number` rolled with the state's dice: the dice pool's successes or the dice sum."""
    if number.total is None:  # UNTR-9: not rolled at all; the dice stay where they were
        return RolledCheck(refused("untrained"), state, card, number)
    res = rs.file.resolution
    if rs.dice_pool:
        if dc_given is not None:
            return RolledCheck(refused("no-difficulty"), state, card, number)
        target = number.target if number.target is not None else DEFAULT_TARGET
        if difficulty_given is not None:
            t = res.pool.target if res is not None and res.pool is not None else None
            if t is None or t.min == t.max:
                return RolledCheck(refused("no-difficulty"), state, card, number)  # UNTR-8: a fixed target
            asked = parse_int(difficulty_given)
            if asked is None:
                return RolledCheck(refused("invalid-amount"), state, card, number)
            if not t.min <= asked <= t.max:
                return RolledCheck(refused("invalid-value"), state, card, number)
            target = min(t.max, asked + 1) if number.rule == "harder" else asked  # UNTR-7
        if number.total > MAX_POOL:  # work bounded by the text, not by the numbers in a sheet
            return RolledCheck(refused("too-many-dice"), state, card, number)
        faces, dice = state.dice.roll(number.total, rs.die)  # PEN-3: no dice, no roll, a failure
        hits = sum(1 for f in faces if f >= target)
        outcome = "success" if hits >= 1 else "failure"
        record = [("dice", str(number.total)), ("rolled", ",".join(map(str, faces))), ("target", str(target)),
                  ("successes", str(hits))]
        record += _modifiers(number)
        record.append(("outcome", outcome))
        return RolledCheck(Result("ok", record=tuple(record)), state.with_dice(dice), card, number, faces,
                       rs.die, target, None, outcome)
    if difficulty_given is not None:
        return RolledCheck(refused("no-difficulty"), state, card, number)
    dc = None
    if dc_given is not None:
        dc = parse_int(dc_given)
        if dc is None:
            return RolledCheck(refused("invalid-amount"), state, card, number)
    faces, dice = state.dice.roll(1, rs.die)
    total = faces[0] + number.total
    verdict = None if dc is None else ("success" if total >= dc else "failure")
    summed = [("roll", str(faces[0])), ("total", signed(number.total)), ("sum", str(total)), *_modifiers(number)]
    if verdict is not None:
        summed.append(("outcome", verdict))
    return RolledCheck(Result("ok", record=tuple(summed)), state.with_dice(dice), card, number, faces, rs.die,
                   None, dc, verdict)


def _modifiers(number: CheckNumber) -> list[tuple[str, str]]:
    """PEN-6, ADJ-11: the penalty and what the sheet added, stated whenever they changed the number."""
    out = []
    if number.penalty:
        out.append(("penalty", signed(number.penalty)))
    if number.adjust:
        out.append(("adjust", signed(number.adjust)))
    return out


def roll(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    done = roll_tag(rs, state, tag)
    return Outcome(done.result, done.state)


def _dice(n: int) -> str:
    return f"{n} {'die' if abs(n) == 1 else 'dice'}"


def card(rs: Ruleset, done: RolledCheck) -> list[str]:
    """The dice card for people (ADJ-11, PEN-6): the number, every modifier with where it came from, the
    dice and the outcome; for a refused check, why it could not be attempted (UNTR-10)."""
    n = done.number
    if done.result.result == "refused":
        what = f" {n.label}" if n is not None else ""
        if done.result.reason == "untrained":
            return [f"{done.who}:{what} refused: untrained, and its untrained rule is `refuse`.",
                    "The character cannot attempt this check; no dice were rolled (UNTR-9, UNTR-10)."]
        return [f"{done.who or 'check'}:{what} refused: {done.result.reason} (docs/reasons.md)"]
    assert n is not None and n.total is not None
    pool, res = rs.dice_pool, rs.file.resolution
    ability = rs.sheet.abilities.get(n.ability) if n.ability else None
    label = ability.label if ability is not None else (n.ability or "no ability")

    def amount(x: int) -> str:
        return _dice(x) if pool else signed(x)

    lines = [f"{done.who}: {n.label} ({n.kind})"]
    lines.append(f"  {label}: {amount(n.base)}" + ("" if pool else " (its modifier)"))
    if n.kind in ("skill", "save"):
        level = next((lv.label for lv in rs.file.sheet.training if lv.id == n.training), n.training or "none")
        lines.append(f"  training, {level}: {signed(n.bonus)}" + ("" if n.trained else " (untrained)"))
    if n.untrained:
        lines.append(f"  untrained rule: {signed(n.untrained)} (UNTR-5)")
    if n.rule == "harder":
        lines.append("  untrained rule: harder, the target per die one step up (UNTR-7)")
    if n.cap is not None:
        sk = (rs.sheet.skills if n.kind == "skill" else rs.sheet.saves).get(n.id)
        ref = sk.cap.dumped() if sk is not None and sk.cap is not None else {}
        where = ", ".join(f"{k} {v}" for k, v in ref.items())
        lines.append(f"  cap: {n.cap} (from {where}; the check never rolls more, CAP-1)")
    if n.penalty:
        track = rs.sheet.tracks.get(res.penaltyFrom) if res is not None and res.penaltyFrom else None
        lines.append(f"  wound penalty: {signed(n.penalty)} (from {track.label if track else '?'}, PEN-6)")
    if n.adjust:
        lines.append(f"  sheet adjust: {signed(n.adjust)} (resolution.adjust, ADJ-11)")
    if pool:
        floor = res.pool.min if res is not None and res.pool is not None else 1
        lines.append(f"  = {_dice(n.total)}" + (f" (penalties never take it below {floor}, PEN-3)"
                                                 if n.penalty or n.adjust else ""))
        rolled = ", ".join(map(str, done.faces)) or "nothing: no dice, so it fails without a roll"
        hits = sum(1 for f in done.faces if done.target is not None and f >= done.target)
        lines.append(f"rolled {len(done.faces)}d{done.sides}: {rolled}")
        lines.append(f"each die of {done.target} or more succeeds: {hits} success{'es' if hits != 1 else ''}")
    else:
        lines.append(f"  = {signed(n.total)}")
        lines.append(f"rolled 1d{done.sides}: {done.faces[0]}, {signed(n.total)} = {done.faces[0] + n.total}"
                     + (f", against {done.dc}" if done.dc is not None else ""))
    lines.append(f"outcome: {done.outcome}" if done.outcome else "outcome: for the GM to judge (no dc given)")
    return lines


def teach(rs: Ruleset, state: GameState) -> dict[str, Any] | None:
    """What prompts/teach/check.j2 reads: the ruleset's own names for skills, abilities and saves, and how
    its difficulty is set; nothing when the sheet has nothing to roll (DEC-18)."""
    s = rs.file.sheet
    if not (s.skills or s.abilities or s.saves):
        return None
    names = list(state.cards)
    res = rs.file.resolution
    t = res.pool.target if res is not None and res.pool is not None else None
    return {
        "who": names[0] if names else "Name",
        "skills": [k.label for k in s.skills],
        "abilities": [a.label for a in s.abilities],
        "saves": [k.label for k in s.saves],
        "pool": rs.dice_pool,
        "die": rs.die,
        "target": (t.value if t is not None else DEFAULT_TARGET) if rs.dice_pool else None,
        "moves": None if t is None or t.min == t.max or not rs.dice_pool else {"min": t.min, "max": t.max},
        "fight": rs.file.combat is not None,  # CB-7: taught only to a ruleset that declares `combat`
        "refuse": any(k.untrained == "refuse" for k in (*s.skills, *s.saves))
        or any(sec.untrained == "refuse" for sec in s.sections),
    }


# The reply's grammar writes a check as who, one of skill/ability/save, then dc or difficulty where the ruleset
# takes one; `with` and `fight` are left to the engine (docs/grammar.md).
FAMILY = Family.of("check", op_of, (Op("roll", roll, Shape(choose_one=KINDS, optional=("dc", "difficulty"),
                                                            roller=True)),), teach)
