"""The number a check rolls (UNTR-1..16, CAP-1..3, PEN-1..6, ADJ-1..7), with its breakdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ruleset.refs import ValueRefDef
from ..ruleset.sheet import UntrainedByDef
from .views import CheckNumber

if TYPE_CHECKING:
    from .evaluator import Eval


def ability_part(ev: Eval, ability: str | None) -> int:
    """What the ability gives: dice (its score) under dice-pool, its modifier under dice-sum."""
    if ability is None:
        return 0
    return ev.ability_score(ability) if ev.rs.dice_pool else ev.ability_mod(ability)


def penalty(ev: Eval) -> int:
    """PEN-1..2: the declared wound track's active penalty, or nothing."""
    res = ev.rs.file.resolution
    if res is None or res.penaltyFrom is None:
        return 0
    track = ev.idx.tracks.get(res.penaltyFrom)
    return ev.wound(track).penalty if track is not None and track.is_wound else 0


def adjust(ev: Eval, ability: str | None) -> int:
    """ADJ-2..7: every matching entry added; entries with `abilities` only for checks with one of them."""
    res = ev.rs.file.resolution
    if res is None:
        return 0
    return sum(ev.read(a.value) for a in res.adjust if a.abilities is None or ability in a.abilities)


def with_modifiers(ev: Eval, sheet: int, ability: str | None) -> tuple[int, int, int]:
    """The sheet's number with the wound penalty and the adjustments: (penalty, adjust, total); under
    dice-pool, dice removed but never below pool.min (PEN-3, ADJ-6)."""
    pen, adj = penalty(ev), adjust(ev, ability)
    raw = sheet + pen + adj
    if not ev.rs.dice_pool:
        return pen, adj, raw  # PEN-4: a flat modifier folded into the same number
    res = ev.rs.file.resolution
    floor = res.pool.min if res is not None and res.pool is not None else 1
    return pen, adj, max(raw, min(sheet, floor), 0)


def pool_target(ev: Eval, harder: bool) -> int | None:
    """The number each die of a dice pool must meet (`resolution.pool.target`), one step harder when told (UNTR-7);
    None without one (dice-sum, or a pool with no target)."""
    res = ev.rs.file.resolution
    if not ev.rs.dice_pool or res is None or res.pool is None or res.pool.target is None:
        return None
    t = res.pool.target
    return min(t.max, t.value + 1) if harder else t.value  # UNTR-7: one step harder, within range


def check_number(ev: Eval, kind: str, cid: str, with_ability: str | None = None) -> CheckNumber:
    key = (kind, cid, with_ability)
    cached = ev.checks_done.get(key)
    if cached is not None:
        return cached
    result = _ability(ev, cid) if kind == "ability" else _skill(ev, kind, cid, with_ability)
    ev.checks_done[key] = result
    return result


def fight_number(ev: Eval, fight: str) -> CheckNumber:
    """ADJ-9: a roll a fight builds from no ability, skill or save (`[check: fight="initiative"]`) starts from
    nothing and gets only the `adjust` entries without `abilities`, and the wound penalty (docs/decisions.md
    CB-7). Computed when rolled: the engine keeps no fight to start (U-25)."""
    pen, adj, total = with_modifiers(ev, 0, None)
    return CheckNumber("fight", fight, fight.capitalize(), None, None, False, 0, 0, 0, "normal", None, 0, pen, adj,
                       total, pool_target(ev, False))


def _ability(ev: Eval, aid: str) -> CheckNumber:
    a = ev.idx.abilities.get(aid)
    base = ability_part(ev, aid)
    pen, adj, total = with_modifiers(ev, base, aid)
    return CheckNumber("ability", aid, a.label if a else aid, aid, None, True, base, 0, 0, "normal", None, base,
                       pen, adj, total, pool_target(ev, False), a.section if a else None)


def _skill(ev: Eval, kind: str, sid: str, with_ability: str | None) -> CheckNumber:
    idx = ev.idx.skills if kind == "skill" else ev.idx.saves
    sk = idx.get(sid)
    if sk is None:
        return CheckNumber(kind, sid, sid, None, None, False, 0, 0, 0, "normal", None, 0, 0, 0, 0)
    ability = with_ability or sk.ability
    ladder = ev.rs.file.sheet.training
    stored = (ev.card.get(f"{kind}s") or {}).get(sid)
    level = next((lv for lv in ladder if lv.id == stored), ladder[0] if ladder else None)
    trained = level is not None and level is not ladder[0]  # UNTR-1: the first level is untrained
    bonus = 0
    if level is not None:
        bonus = ev.read(level.bonus) if isinstance(level.bonus, ValueRefDef) else level.bonus
    rule_value = None
    if not trained:  # UNTR-16: a rule applies only while untrained; UNTR-3: own rule over the section's
        sec = next((s for s in ev.rs.file.sheet.sections if s.id == sk.section), None)
        rule_value = sk.untrained if sk.untrained is not None else (sec.untrained if sec else None)
    by = rule_value.by if isinstance(rule_value, UntrainedByDef) else 0
    rule = "by" if isinstance(rule_value, UntrainedByDef) else (rule_value or "normal")
    base = ability_part(ev, ability)
    cap = ev.read(sk.cap) if sk.cap is not None else None
    if rule == "refuse":  # UNTR-9, UNTR-13: no number at all
        return CheckNumber(kind, sid, sk.label, ability, level.id if level else None, trained, base, bonus, 0,
                           rule, cap, None, 0, 0, None, None, sk.section)
    sheet = base + bonus + by  # UNTR-6: `by` before the cap
    if cap is not None:
        sheet = min(sheet, cap)  # CAP-2, CAP-3: with= is computed first, then capped again
    pen, adj, total = with_modifiers(ev, sheet, ability)
    if cap is not None:
        total = min(total, cap)  # CAP-1: the highest number the check can ever reach
    return CheckNumber(kind, sid, sk.label, ability, level.id if level else None, trained, base, bonus, by, rule,
                       cap, sheet, pen, adj, total, pool_target(ev, rule == "harder"), sk.section)
