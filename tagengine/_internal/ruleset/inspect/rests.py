"""Rests (REST-1..8, WOUND-40..43, STATE-16, DEC-17): targets exist, wound steps heal, state steps set."""

from __future__ import annotations

from ..refs import ValueRefDef
from ..sheet import FractionOfMaxDef, RestStepDef
from .inspection import Inspection


def rest_step(ctx: Inspection, st: RestStepDef, path: str) -> None:
    """One step of a rest (`sheet.rests[i].steps[j]`): one target that exists, `to` or `by` as its target takes them
    (REST-2..8, WOUND-40..43, STATE-16)."""
    s = ctx.sheet
    targets = st.targets
    if len(targets) != 1:
        ctx.add(path, "one-target", "a rest step names exactly one of pool, poolGroup, listPools, track, state "
                "(REST-2, D-6)", [k for k, _ in targets])
        return
    key, name = targets[0]
    has_to, has_by = st.to is not None, st.by is not None
    if has_to == has_by:
        ctx.add(path, "to-or-by", "a rest step either sets its target with `to` or changes it with `by` (REST-3)",
                None)
    if key == "pool" and name not in s.pools:
        ctx.add(f"{path}.pool", "unknown-ref", f"names pool {name!r}, which sheet.live.pools does not declare", name)
    elif key == "poolGroup" and not any(p.group == name for p in s.pools):
        ctx.add(f"{path}.poolGroup", "unknown-ref", f"no pool declares group {name!r} (REST-6)", name)
    elif key == "listPools" and (name not in s.lists or s.lists.by_id[name].pools is None):
        ctx.add(f"{path}.listPools", "unknown-ref", f"{name!r} is not a list with row pools (SHEET-31)", name)
    elif key == "track" and name not in s.tracks:
        ctx.add(f"{path}.track", "unknown-ref", f"names track {name!r}, which sheet.live.tracks does not declare", name)
    elif key == "state" and name not in s.states:
        ctx.add(f"{path}.state", "unknown-ref", f"names state {name!r}, which sheet.live.states does not declare",
                name)

    if isinstance(st.to, str) and key != "state" and st.to not in ("max", "min"):
        ctx.add(f"{path}.to", "bad-to", f'`to` is "max", "min" or a number, not {st.to!r} (REST-3)', st.to)
    if isinstance(st.by, FractionOfMaxDef):
        fom = st.by
        if not 0 < fom.fractionOfMax <= 1:
            ctx.add(f"{path}.by.fractionOfMax", "out-of-range", "fractionOfMax is above 0 and at most 1 (REST-3)",
                    fom.fractionOfMax)
        if fom.min is not None and fom.min < 0:
            ctx.add(f"{path}.by.min", "out-of-range", "min is the least amount a step restores, 0 or more (REST-8)",
                    fom.min)
        if key not in ("pool", "poolGroup", "listPools"):
            ctx.add(f"{path}.by", "key-not-allowed", "fractionOfMax changes pools by a fraction of their max (REST-6)",
                    None)
    if st.shared is not None and not (key == "poolGroup" and isinstance(st.by, FractionOfMaxDef)):
        ctx.add(f"{path}.shared", "key-not-allowed", '"shared" goes on a poolGroup step with fractionOfMax (REST-7)',
                st.shared)
    if st.kind is not None:
        t = s.tracks.get(name) if key == "track" else None
        if t is None or not t.is_wound:
            ctx.add(f"{path}.kind", "key-not-allowed", "`kind` goes on a step that heals a wound track (WOUND-42)",
                    st.kind)
        elif st.kind not in {k.id for k in t.kinds or []}:
            ctx.add(f"{path}.kind", "unknown-kind", f"track {name!r} has no kind {st.kind!r} (WOUND-42)", st.kind)

    if key == "track":
        t = s.tracks.get(name)
        if t is not None and t.is_wound:
            if isinstance(st.to, int) and st.to < 0:
                ctx.add(f"{path}.to", "out-of-range", "a wound step reduces the track to `to` marks, 0 or more "
                        "(WOUND-40)", st.to)
            if isinstance(st.by, ValueRefDef) and st.by.key == "const" and st.by.const is not None and st.by.const >= 0:
                ctx.warn(f"{path}.by", "heal-only", "a rest never marks a wound track: a positive `by` is skipped "
                         "silently; write the minus sign (WOUND-43, REST-4)", st.by.const)
            if st.to == "max":
                ctx.warn(f"{path}.to", "heal-only", '"to": "max" would add marks, so this step never does anything '
                         "(WOUND-43)", st.to)
    if key == "state":
        if st.by is not None:
            ctx.add(f"{path}.by", "state-set-only", "a rest step can only set a live state, with `to` (REST-5)", None)
        state = s.states.get(name)
        if state is not None and st.to is not None and st.to != "default" and st.to not in state.values:
            ctx.add(f"{path}.to", "unknown-value", f'`to` is "default" or one of the values of {name!r} (STATE-16)',
                    st.to)


def inspect_rests(ctx: Inspection) -> None:
    for i, rest in enumerate(ctx.rs.sheet.rests):
        if not rest.steps:
            ctx.add(f"sheet.rests[{i}].steps", "bad-count", "a rest lists at least one step (REST-1)", 0)
        for j, st in enumerate(rest.steps):
            rest_step(ctx, st, f"sheet.rests[{i}].steps[{j}]")
