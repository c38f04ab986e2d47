"""Resolution: untrained rules (UNTR-4..8), `penaltyFrom` (PEN-5), `adjust` (ADJ-4, ADJ-7), training."""

from __future__ import annotations

from ..sheet import SectionDef, SkillDef, UntrainedByDef
from .inspection import Inspection, count_problem

MIN_DIE, MAX_DIE = 2, 100  # CK-14: the sides `resolution.die` may declare


def target_can_move(ctx: Inspection) -> bool:
    """UNTR-8: a dice-pool ruleset whose target per die has room to rise."""
    res = ctx.rs.resolution
    return bool(res and res.type == "dice-pool" and res.pool and res.pool.target
                and res.pool.target.min < res.pool.target.max)


def untrained_rules(ctx: Inspection) -> None:
    s = ctx.rs.sheet
    spots: list[tuple[str, SectionDef | SkillDef]] = [(f"sheet.sections[{i}]", x) for i, x in enumerate(s.sections)]
    spots += [(f"sheet.skills[{i}]", x) for i, x in enumerate(s.skills)]
    spots += [(f"sheet.saves[{i}]", x) for i, x in enumerate(s.saves)]
    movable = target_can_move(ctx)
    for path, item in spots:
        rule = item.untrained
        if isinstance(rule, UntrainedByDef) and not -20 <= rule.by <= 20:
            ctx.add(f"{path}.untrained.by", "out-of-range", f"untrained by is -20 to 20, not {rule.by} (UNTR-5)",
                    rule.by)
        if rule == "harder" and not movable:
            ctx.add(f"{path}.untrained", "harder-cannot-apply", '"harder" needs a dice-pool ruleset whose target can '
                    "move (resolution.pool.target with min < max); here it could never change a roll (UNTR-8)",
                    "harder")


def inspect_resolution(ctx: Inspection) -> None:
    untrained_rules(ctx)
    s = ctx.rs.sheet
    for name in ("skills", "saves"):
        for i, sk in enumerate(getattr(s, name)):
            if sk.ability is not None and sk.ability not in ctx.sheet.abilities:
                ctx.add(f"sheet.{name}[{i}].ability", "unknown-ref", f"names ability {sk.ability!r}, which "
                        "sheet.abilities does not declare (SHEET-8)", sk.ability)
    for i, a in enumerate(s.abilities):
        if a.min > a.max:
            ctx.add(f"sheet.abilities[{i}].min", "bad-range", f"min {a.min} is above max {a.max}", a.min)
        elif a.default is not None and not a.min <= a.default <= a.max:
            ctx.add(f"sheet.abilities[{i}].default", "bad-default", f"default {a.default} is outside {a.min}..{a.max}",
                    a.default)
    res = ctx.rs.resolution
    if res is None:
        return
    if res.die is not None and not MIN_DIE <= res.die <= MAX_DIE:
        ctx.add("resolution.die", "out-of-range", f"a die has {MIN_DIE} to {MAX_DIE} sides, not {res.die} (CK-14)",
                res.die)
    if res.pool is not None:
        if res.type != "dice-pool":
            ctx.add("resolution.pool", "key-not-allowed", "`pool` settings belong to dice-pool resolution (PEN-3)",
                    res.type)
        if res.pool.min < 0:
            ctx.add("resolution.pool.min", "out-of-range", "pool.min is 0 or more (PEN-3)", res.pool.min)
        tg = res.pool.target
        if tg is not None and not tg.min <= tg.value <= tg.max:
            ctx.add("resolution.pool.target", "bad-range", f"target {tg.value} is outside {tg.min}..{tg.max}",
                    tg.value)
        sides = res.die if res.die is not None else 6
        if tg is not None and MIN_DIE <= sides <= MAX_DIE and not 1 <= tg.min <= tg.max <= sides:
            ctx.add("resolution.pool.target", "target-off-die", f"the target range {tg.min}..{tg.max} must lie on "
                    f"the faces of the d{sides} the pool rolls, 1..{sides} (CK-14)", tg.max)
    if res.penaltyFrom is not None:
        t = ctx.sheet.tracks.get(res.penaltyFrom)
        if t is None:
            ctx.add("resolution.penaltyFrom", "unknown-ref", f"names track {res.penaltyFrom!r}, which "
                    "sheet.live.tracks does not declare (PEN-1)", res.penaltyFrom)
        elif not t.is_wound:
            ctx.add("resolution.penaltyFrom", "not-wound-track", f"{res.penaltyFrom!r} is a plain track, which has no "
                    "penalty (PEN-5)", res.penaltyFrom)
    count_problem(ctx, "resolution.adjust", res.adjust, 0, 8, "entries", "ADJ-7")
    for i, adj in enumerate(res.adjust):
        for j, ab in enumerate(adj.abilities or []):
            if ab not in ctx.sheet.abilities:
                ctx.add(f"resolution.adjust[{i}].abilities[{j}]", "unknown-ref", f"names ability {ab!r}, which "
                        "sheet.abilities does not declare (ADJ-4)", ab)
