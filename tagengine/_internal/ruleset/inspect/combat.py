"""`combat`: the health a fight hits and how (WOUND-2, WOUND-32, WOUND-33, WOUND-35; docs/decisions.md T-18, CB-3)."""

from __future__ import annotations

from .inspection import Inspection


def inspect_combat(ctx: Inspection) -> None:
    combat = ctx.rs.combat
    if combat is None:
        return
    health = combat.health
    track = None
    if health is not None:
        named = [k for k in ("pool", "track") if getattr(health, k) is not None]
        if len(named) != 1:
            ctx.add("combat.health", "one-target", "combat.health names exactly one pool or one track (WOUND-32)",
                    named)
        elif health.pool is not None and health.pool not in ctx.sheet.pools:
            ctx.add("combat.health.pool", "unknown-ref", f"names pool {health.pool!r}, which the sheet does not "
                    "declare", health.pool)
        elif health.track is not None:
            track = ctx.sheet.tracks.get(health.track)
            if track is None or not track.is_wound:
                ctx.add("combat.health.track", "not-wound-track", f"{health.track!r} must be a wound track (WOUND-32)",
                        health.track)
                track = None
    if combat.damageKinds is not None:
        if health is None or health.track is None:
            ctx.add("combat.damageKinds", "damage-kinds-with-pool", "damageKinds is refused, not ignored, when "
                    "health is a pool (WOUND-2)", None)
        elif track is not None:
            kinds = {k.id for k in track.kinds or []}
            for dtype, kind in combat.damageKinds.map.items():
                if kind not in kinds:
                    ctx.add(f"combat.damageKinds.map.{dtype}", "unknown-kind", f"track {track.id!r} has no kind "
                            f"{kind!r} (WOUND-33)", kind)
        if combat.damageKinds.marks < 1:
            ctx.add("combat.damageKinds.marks", "out-of-range", "a landed hit marks at least one box (WOUND-33)",
                    combat.damageKinds.marks)
    if combat.damage == "per-point" and (track is None or track.fill != "indexed"):
        ctx.add("combat.damage", "per-point-needs-boxes", "per-point damage names the box it hits, so health must "
                "be a wound track that fills by box (fill: indexed) (WOUND-35)", combat.damage)
