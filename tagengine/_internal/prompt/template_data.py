"""The data the prompt templates read: plain dicts and strings built from the ruleset and the state.

Nothing here is a template: ruleset and chat strings are passed to Jinja as values, never compiled.
"""

from __future__ import annotations

from typing import Any, cast

from ..commands.pools import uses_label
from ..commands.subject import subject
from ..commands.table import families
from ..memo import IdentityCache
from ..ruleset import Ruleset
from ..ruleset.sheet import UntrainedByDef
from ..sheet import CheckNumber, Eval, SheetView, view_character, view_party
from ..sheet.sheet_views import kept_by_card
from ..sheet.show import party_summary
from ..state import PARTY, GameState
from ..text import prompt_inert

# a sheet block by what it is made of: a turn changes one character or none, and the others' blocks (their lines
# built, their text made inert) are the ones the turn before had (PF-52)
_BLOCKS: IdentityCache[dict[str, Any] | None] = IdentityCache(512)
_CARD_LINES: IdentityCache[list[tuple[str, str]]] = IdentityCache(512)  # by ruleset and card, while it keeps them
_TEACHINGS: IdentityCache[list[dict[str, Any]]] = IdentityCache(64)  # by ruleset, cards and party sheet
_UNTRAINED: IdentityCache[list[str]] = IdentityCache(64)  # by ruleset


def number(rs: Ruleset, n: int) -> str:
    return str(n) if rs.dice_pool else f"{n:+d}"


def check_text(rs: Ruleset, c: CheckNumber, levels: dict[str, str]) -> str:
    """`Soothe 1 (Sworn; capped by its cap 1)`: the number every check rolls, with what shaped it."""
    if c.total is None:
        return f"{c.label}: cannot be attempted untrained"
    notes = []
    if c.training is not None and c.trained:
        notes.append(levels.get(c.training, c.training))
    if c.rule == "by":
        notes.append(f"untrained {c.untrained:+d}")
    if c.rule == "harder":
        notes.append("harder untrained")
    if c.cap is not None and c.sheet is not None and c.sheet >= c.cap:
        notes.append(f"capped at {c.cap}")
    if c.penalty:
        notes.append(f"wound {c.penalty:+d}")
    if c.adjust:
        notes.append(f"sheet {c.adjust:+d}")
    unit = " dice" if rs.dice_pool else ""
    return f"{c.label} {number(rs, c.total)}{unit}" + (f" ({', '.join(notes)})" if notes else "")


def summary_lists(rs: Ruleset, sheet: SheetView, spec: Any, lists: Any) -> list[str]:
    """GM-15..17: `Gear: Rope 2 Packed, Lantern 1 Packed` with `nameColumn` and up to three `columns`."""
    out = []
    for sl in spec.lists if spec is not None else []:
        if f"lists.{sl.list}" in sheet.hidden:
            continue
        lst = lists.get(sl.list)
        if lst is None:
            continue
        cols = {c.id: c for c in lst.columns}
        items = []
        for row in sheet.lists.get(sl.list, []):
            name_col = cols.get(sl.nameColumn) if sl.nameColumn else lst.columns[0]
            bits = [cell(name_col, row.get(name_col.id))] if name_col else []
            for cid in sl.columns or []:
                c = cols.get(cid)
                if c is None:
                    continue
                if c.type == "boolean":
                    if row.get(cid) is True:
                        bits.append(c.label)  # GM-17: a boolean column prints its label when on
                else:
                    bits.append(cell(c, row.get(cid)))
            items.append(" ".join(b for b in bits if b))
        out.append(f"{lst.label}: {', '.join(items) if items else 'none'}")
    return out


def cell(col: Any, value: Any) -> str:
    """GM-15: an enum shows its value's label."""
    if col is None or value is None:
        return ""
    if col.type == "enum":
        return str((col.valueLabels or {}).get(value, value))
    return str(value)


def row_pool_lines(ev: Eval) -> list[tuple[str, str]]:
    """SHEET-31: `Features (Uses): Arcane recovery 0/1; Second wind 1/2`, each row by the name the GM
    writes in `row=`, for every visible list with row pools that has rows."""
    out = []
    for lst in ev.idx.lists:
        cells = ev.row_pools(lst.id) if lst.pools is not None else None
        if not cells:
            continue
        names = ev.row_names(lst.id)
        items = [f"{n[0] if n else '(no name)'} {cur}/{top}" for n, (cur, top) in zip(names, cells, strict=True)]
        out.append((f"{lst.label} ({uses_label(lst)})", "; ".join(items)))
    return out


def character_block(rs: Ruleset, state: GameState, name: str) -> dict[str, Any]:
    """GM-13..17: the lines the reminder shows of the character `name`, what its card decides first."""
    s = view_character(rs, state, name)
    return {"name": name, "lines": [*card_lines(rs, s), *live_lines(rs, state, name, s)]}


def card_lines(rs: Ruleset, s: SheetView) -> list[tuple[str, str]]:
    """A block's lines that its card decides (GM-14..17): the checks by section, then the summary's fields,
    derived values and lists."""
    sheet = rs.file.sheet
    levels = {lv.id: lv.label for lv in sheet.training}
    sections = {sec.id: sec.label for sec in sheet.sections}
    groups: dict[str | None, list[str]] = {}
    for c in s.abilities:
        groups.setdefault(c.section, []).append(check_text(rs, c, levels))
    for c in (*s.skills, *s.saves):
        if c.trained or c.total is None:  # GM-14: trained skills and saves; refused ones marked
            groups.setdefault(c.section, []).append(check_text(rs, c, levels))
    lines: list[tuple[str, str]] = []
    for sid, items in groups.items():
        lines.append((sections.get(sid, "Checks") if sid else "Checks", "; ".join(items)))
    summary = rs.file.gm.sheetSummary if rs.file.gm else None
    fields = {f.id: f for f in sheet.fields}
    for fid in summary.fields if summary else []:
        if f"fields.{fid}" not in s.hidden and fid in fields:
            lines.append((fields[fid].label, cell(fields[fid], s.fields.get(fid)) or "-"))
    derived = {d.id: d for d in sheet.derived}
    for did in summary.derived if summary else []:
        if f"derived.{did}" not in s.hidden and did in derived:
            lines.append((derived[did].label, str(s.derived.get(did))))
    for text in summary_lists(rs, s, summary, rs.sheet.lists.by_id):
        label, _, rest = text.partition(": ")
        lines.append((label, rest))
    return lines


def live_lines(rs: Ruleset, state: GameState, name: str, s: SheetView) -> list[tuple[str, str]]:
    """A block's lines that live values decide: pools, row pools, tracks, wounds, states, conditions, text."""
    sheet = rs.file.sheet
    lines: list[tuple[str, str]] = []
    health = s.health
    pools = [p.label + " " + p.now + (", down" if health is not None and health.down and p.id == health.id else "")
             for p in s.pools if not p.hidden]  # CB-4: a health pool at 0
    if pools:
        lines.append(("Pools", "; ".join(pools)))
    if any(lst.pools is not None for lst in sheet.lists):
        lines += row_pool_lines(Eval(rs, state.cards[name], state.live_of(name)))
    for t in s.tracks:  # TRACK-5, TRACK-6: at default, only with alwaysShow
        if not t.hidden and (t.always_show or t.value != t.default):
            lines.append((t.label, f"{t.value} (of {t.min}..{t.max})"))
    penalty_from = rs.file.resolution.penaltyFrom if rs.file.resolution else None
    for w in s.wounds:
        label = w.label
        if health is not None and health.track and w.id == health.id:  # WOUND-39: read as what is left; CB-4
            label, text = f"{w.label} (health)", health.now
        else:
            text = (f"{w.filled} of {w.length} boxes marked" if w.boxed else
                    f"{w.filled}/{w.length}" + (f", at {w.lowest}" if w.lowest else ", unmarked"))  # WOUND-47
            if w.overflow:
                text += f", +{w.overflow} overflow"
        if w.id == penalty_from and w.penalty:  # PEN-7: the current level and its cost
            cost = (f"{-w.penalty} {'die' if w.penalty == -1 else 'dice'} fewer" if rs.dice_pool
                    else f"{w.penalty:+d}")
            text += f"; costs {cost} on every roll"
        lines.append((label, text))
    for st in s.states:  # STATE-14: every state, default included
        if not st.hidden:
            lines.append((st.label, st.value_label))
    on = [label for _, label, is_on in s.conditions if is_on]
    if s.conditions:
        lines.append(("Conditions", ", ".join(on) if on else "none"))
    for _, label, value in s.text:
        if value:
            lines.append((label, value))
    return lines


def party_block(rs: Ruleset, state: GameState) -> dict[str, Any] | None:
    """PARTY-13..15, PARTY-21: label, summary fields (else all visible), pools always, summary lists."""
    p = view_party(rs, state)
    if p is None or rs.file.party is None:
        return None
    defs = rs.file.party
    fields, pools = party_summary(rs, p)
    labels = {f.id: f for f in defs.fields}
    lines = [(labels[f].label, cell(labels[f], p.fields.get(f)) or "-") for f in fields if f in labels]
    lines += [(pl.label, pl.now) for pl in p.pools if pl.id in pools]
    if any(lst.pools is not None for lst in defs.lists):
        lines += row_pool_lines(subject(rs, state, PARTY, party=True).ev)
    lists = {lst.id: lst for lst in defs.lists}
    for text in summary_lists(rs, p, defs.summary, lists):
        label, _, rest = text.partition(": ")
        lines.append((label, rest))
    return {"name": defs.label, "lines": lines}


def untrained_lines(rs: Ruleset) -> list[str]:
    """UNTR-15: by section or by skill, so the GM asks only for checks a character can make. The ruleset's alone,
    so made once per ruleset (every reminder reads them); the list is read-only."""
    return _UNTRAINED.get((rs,), lambda: _untrained_lines(rs))


def _untrained_lines(rs: Ruleset) -> list[str]:
    s = rs.file.sheet
    out = []

    def describe(rule: Any) -> str | None:
        if rule is None or rule == "normal":
            return None
        if isinstance(rule, UntrainedByDef):
            return f"rolls {rule.by:+d}{' dice' if rs.dice_pool else ''} untrained"
        return {"harder": "is one step harder untrained", "refuse": "cannot be attempted untrained"}[rule]

    for sec in s.sections:
        d = describe(sec.untrained)
        if d:
            out.append(f"{sec.label} (any skill or save in it, unless it says otherwise) {d}")
    for sk in (*s.skills, *s.saves):
        d = describe(sk.untrained)
        if d:
            out.append(f"{sk.label} {d}")
    return out


def inert_block(block: dict[str, Any]) -> dict[str, Any]:
    """A sheet block with every text made inert (`prompt_inert`): a field, a list's cells, a row's name are
    kept as the player typed them (ED-3), so brackets, macro braces and line breaks reach this point; the
    ruleset's labels and the engine's numbers are already safe, and come through unchanged."""
    return {**block, "name": prompt_inert(block["name"]), "lines": inert_lines(block["lines"])}


def inert_lines(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`inert_block`'s lines: a block's lines are made inert apart from its name where some are kept."""
    return [(prompt_inert(label), prompt_inert(text)) for label, text in lines]


def character_entry(rs: Ruleset, state: GameState, name: str) -> dict[str, Any]:
    """`inert_block(character_block(...))` of the state's character `name` (a key of its cards), kept by the ruleset,
    the card, the live values and the name: all a character's block reads (as `view_character`'s key)."""
    return cast(dict[str, Any], _BLOCKS.get((rs, state.cards[name], state.live_of(name), name),
                                            lambda: _character_entry(rs, state, name)))


def _character_entry(rs: Ruleset, state: GameState, name: str) -> dict[str, Any]:
    """A changed character's block: the lines its card decides are kept by the ruleset and the card while the card
    keeps all they read, its part and its check numbers (`kept_by_card`, PF-60), so a turn that changes live values
    makes only the lines those decide; a card whose check numbers or derived values read live values makes them each
    time."""
    s = view_character(rs, state, name)
    card = state.cards[name]
    if kept_by_card(rs, card):
        head = _CARD_LINES.get((rs, card), lambda: inert_lines(card_lines(rs, s)))
    else:
        head = inert_lines(card_lines(rs, s))
    return {"name": prompt_inert(name), "lines": [*head, *inert_lines(live_lines(rs, state, name, s))]}


def party_entry(rs: Ruleset, state: GameState) -> dict[str, Any] | None:
    """`inert_block(party_block(...))`, or None, kept by what the party's block reads (as `view_party`'s key)."""
    def build() -> dict[str, Any] | None:
        party = party_block(rs, state)
        return None if party is None else inert_block(party)

    return _BLOCKS.get((rs, state.party_sheet, state.live_of(PARTY), state.cards), build)


def teaching(rs: Ruleset, state: GameState) -> list[dict[str, Any]]:
    """What each command family teaches (DEC-18), in the vocabulary's order; kept by the ruleset, the cards and the
    party sheet, all a family's `teach` may read: the commands follow the ruleset and the cast (the names a tag
    takes, the rows a list has), not a turn's numbers, so a turn that changes only live values, clocks or dice
    teaches what the one before did (tests/test_serve_ahead.py holds every family to it). The list is read-only."""
    def build() -> list[dict[str, Any]]:
        return [{"name": name, "data": data} for name, family in families().items()
                if family.teach is not None and (data := family.teach(rs, state)) is not None]

    return _TEACHINGS.get((rs, state.cards, state.party_sheet), build)


def reminder_context(rs: Ruleset, state: GameState) -> dict[str, Any]:
    """What `reminder.j2` reads. The one place the state's text enters the prompt: every sheet block and clock
    name passes `prompt_inert` here, whichever way it was typed (the editor, the API, a state file)."""
    return {
        "characters": [character_entry(rs, state, n) for n in state.cards],
        "party": party_entry(rs, state),
        "clocks": None if rs.file.clocks is None else [
            {"name": prompt_inert(c.name), "fill": f"{c.filled}/{c.size}", "complete": c.complete}
            for c in state.clocks],
        "teaching": teaching(rs, state),
        "untrained": untrained_lines(rs),
    }


def guidance(rs: Ruleset) -> dict[str, str | None]:
    """The guidance texts of the system prompt, by the ruleset key that holds each."""
    gm, party = rs.file.gm, rs.file.party
    return {
        "checkGuidance": gm.checkGuidance if gm else None,
        "sheetGuidance": gm.sheetGuidance if gm else None,
        "clocks.text": rs.file.clocks.text if rs.file.clocks else None,
        "party.text": party.text if party else None,
        "party.advancement.text": party.advancement.text if party and party.advancement else None,
    }


def system_context(rs: Ruleset, *, reference: str | None, dropped: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Only what the ruleset says: nothing per turn goes into the system prompt (DEC-30). `dropped` names
    the guidance texts the budget cut (DEC-32)."""
    texts = {k: None if k in dropped else v for k, v in guidance(rs).items()}
    return {
        "name": rs.name,
        "check_guidance": texts["checkGuidance"],
        "sheet_guidance": texts["sheetGuidance"],
        "clock_text": texts["clocks.text"],
        "party_text": texts["party.text"],
        "advancement_text": texts["party.advancement.text"],
        "reference": reference,
        "has_clocks": rs.file.clocks is not None,
        "has_party": rs.file.party is not None,
    }
