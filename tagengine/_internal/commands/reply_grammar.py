"""The grammar of a reply for one ruleset and state (docs/grammar.md): free narration, and tags written only as
the engine takes them, with the names the state allows.

It is built from the command table (commands/table.py), the same one `apply_reply` dispatches through: each
op's `Shape` (family.py, kept beside the handler that checks those attributes) says which attributes a tag of
it is written with, and `_domain` below says what values each attribute takes in this ruleset and state. A tag
kind whose ops carry no Shape is written with the tag syntax alone, so a new kind has a grammar with no code
here. The result is a subset of what the reader takes: one spelling per tag (attributes in one order, plain
double quotes, one space apart), which is all a model under the grammar needs to write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..memo import IdentityCache
from ..records import frozen
from ..ruleset import Ruleset
from ..ruleset.index import names_of
from ..state import GameState
from ..tags.grammar_forms import FORMATS, Cls, Grammar, Item, Lit, Ref, Rep, Rule, Seq, narration_rules
from ..tags.model import quote
from ..tags.vocabulary import UNCOUNTED
from ..text import normalise, prompt_unsafe
from .combat import damage_types
from .family import Family, Shape
from .table import families

DIGITS = "0123456789"
# what a free value may hold: one line, no double quote or backslash (so no escape is needed), no bracket (DEC-25),
# no brace (so no `{{` macro); the first character is not a blank, since names are trimmed
_UNSAFE = '"\\[]{}' + "".join(map(chr, range(0x20))) + "".join(map(chr, range(0x7f, 0xa0))) + "\u2028\u2029"
TEXT = Cls(_UNSAFE, negated=True)
TEXT_START = Cls(_UNSAFE + " ", negated=True)
NUMBER_DIGITS = 4  # amounts up to 9999: any a game needs, well inside DEC-9's nine digits
NAME_MAX = 100  # CLOCK-16's longest clock name, and the longest free name written
TEXT_MAX = 200  # a free value with no bound of its own


@frozen(slots=True)
class Number:
    """A whole number: `signed` allows `-`; `least` is 0 or 1."""

    signed: bool = False
    least: int = 0


@frozen(slots=True)
class Free:
    """Free text of `least`..`most` characters (see TEXT)."""

    least: int
    most: int


# The refusals a reply written under the grammar cannot meet (docs/grammar.md); every other reason of the table
# stays the engine's to say: what one reply's earlier tags changed (a clock made, points spent, the 40 commands),
# what the state hides, a row's name, the dice, and the values a name alone does not bound.
RULED_OUT = frozenset({
    "malformed", "unknown-attribute", "duplicate-attribute", "missing-attribute", "one-action", "ambiguous",
    "invalid-amount", "bad-text", "clocks-disabled", "bad-name", "bad-size", "unknown-op", "unsupported-op",
    "unknown-character", "unknown-sheet", "unknown-track", "unknown-kind", "unknown-state", "unknown-value",
    "unknown-condition", "unknown-field", "unknown-rest", "wound-track", "not-wound-track", "missing-kind",
    "unknown-damage-type", "not-advanceable", "unverified-edit", "invalid-edit", "unknown-skill", "unknown-ability",
    "unknown-save", "no-difficulty",
})
FLAG = "flag"  # a bare word, no value (`clear`, `temp`)
Names = tuple[str, ...]
Pairs = tuple[tuple[str, "Domain"], ...]


@frozen(slots=True)
class Paired:
    """A name whose other attributes depend on it (a state and its values, a wound track and its kinds): for
    each name, the ways to write the attributes that follow it. `keys`: every key those take."""

    choices: tuple[tuple[str, tuple[Pairs, ...]], ...]
    keys: frozenset[str]


Domain = Names | Number | Free | Paired | str


def unique_names(items: Iterable[Any]) -> Names:
    """The labels and ids of `items` that name exactly one of them (so no `ambiguous`) and may stand in a tag; of
    two spellings of one name (`Stress`, `stress`: DEC-8 reads them alike) only the first."""
    items = list(items)
    table = names_of(items)
    out: dict[str, str] = {}
    for item in items:
        for x in (getattr(item, "label", ""), getattr(item, "id", "")):
            if x and len(table.get(normalise(x), ())) == 1 and prompt_unsafe(x, label=True) is None:
                out.setdefault(normalise(x), x)
    return tuple(out.values())


def _paired(choices: Iterable[tuple[Any, tuple[Pairs, ...]]]) -> Paired | None:
    """A Paired domain over items, each by its unique names; None when no item can be written."""
    choices = list(choices)
    allowed = set(unique_names(item for item, _ in choices))
    out: list[tuple[str, tuple[Pairs, ...]]] = []
    keys: set[str] = set()
    for item, ways in choices:
        if not ways:
            continue
        for name in (getattr(item, "label", ""), getattr(item, "id", "")):
            if name in allowed:
                out.append((name, ways))
                allowed.discard(name)
        keys.update(k for way in ways for k, _ in way)
    return Paired(tuple(out), frozenset(keys)) if out else None


def _domain(rs: Ruleset, family: str, op: str, key: str, party: bool) -> Domain | None:
    """What the attribute `key` of op `op` takes in this ruleset; None: the grammar does not write it here."""
    live = rs.file.sheet.live
    if family == "clock":
        cfg = rs.file.clocks
        clock: dict[str, Domain] = {"name": Free(1, NAME_MAX), "size": tuple(str(s) for s in cfg.sizes) if cfg else (),
                                    "tick": Number(signed=True), "clear": FLAG}
        return clock.get(key)
    if family == "check":
        if key in ("skill", "ability", "save"):
            rolled = {"skill": rs.sheet.skills.items, "ability": rs.sheet.abilities.items, "save": rs.sheet.saves.items}
            return unique_names(rolled[key])
        res = rs.file.resolution
        target = res.pool.target if res is not None and res.pool is not None else None
        if key == "dc":
            return None if rs.dice_pool else Number()
        if key == "difficulty":
            return Number() if rs.dice_pool and target is not None and target.min != target.max else None
    if family != "sheet":
        return Free(0, TEXT_MAX)  # a kind this module does not know: any text its handler may judge
    return _sheet_domain(rs, op, key, party, live)


def _sheet_domain(rs: Ruleset, op: str, key: str, party: bool, live: Any) -> Domain | None:
    sheet = rs.file.party if party else rs.file.sheet
    pools = (rs.file.party.pools if rs.file.party is not None else []) if party else live.pools
    if key == "pool" and op == "damage":  # the pool form: an amount of 0 or more (a heal is `restore`)
        return _paired((p, ((), (("amount", Number()),))) for p in pools)
    if key == "pool":
        return unique_names(pools)
    if key == "row":  # a row's name is the players' to write: `unknown-pool` stays the engine's to say
        return Free(1, NAME_MAX) if sheet is not None and any(lst.pools is not None for lst in sheet.lists) else None
    if key == "amount":
        return Number(least=1 if op == "hit" else 0)
    if key == "track" and op == "damage":  # the wound form: a kind of that track, a negative amount heals
        return _paired((t, ((("kind", kinds),), (("kind", kinds), ("amount", Number(signed=True)))))
                       for t in live.tracks if t.is_wound and (kinds := unique_names(t.kinds or [])))
    if key == "track":
        return unique_names(t for t in live.tracks if not t.is_wound)
    if key == "state":
        return _paired((st, ((("value", unique_names(_Value(v, st.label_of(v)) for v in st.values)),),))
                       for st in live.states)
    if key == "text":
        return _paired((t, ((("to", Free(0, t.maxLength)),),)) for t in live.text)
    if key == "field":
        return _advancing_fields(rs)
    named = {"condition": live.conditions, "rest": rs.file.sheet.rests}
    if key in named:
        return unique_names(named[key])
    if key == "type":
        mapped = _types_marking(rs)
        return unique_names(_Value(t, t) for t in (mapped if mapped is not None else damage_types(rs))) or None
    return {"by": Number(signed=True), "to": ("on", "off") if op == "condition" else Number(signed=True),
            "temp": FLAG}.get(key, Free(0, TEXT_MAX))


@frozen(slots=True)
class _Value:
    """A state's value (or a damage type) as an item with an id and a label, for `unique_names`."""

    id: str
    label: str


def _advancing_fields(rs: Ruleset) -> Paired | None:
    """The party's fields that advance (PARTY-11): a number by `by` or `to`, a text by `to`."""
    party = rs.file.party
    if party is None or party.advancement is None:
        return None
    computed = {fm.field for fm in party.fromMembers}
    fields = [f for f in party.fields if f.id in party.advancement.fields and f.id not in computed]
    number: tuple[Pairs, ...] = ((("by", Number(signed=True)),), (("to", Number(signed=True)),))
    return _paired((f, number if f.type == "number" else ((("to", Free(0, f.maxLength or TEXT_MAX)),),))
                   for f in fields)


class _Builder:
    """Rules named once per distinct body, so one list of names shared by several ops is written once."""

    def __init__(self) -> None:
        self.rules: dict[str, tuple[Seq, ...]] = {}
        self.named: dict[tuple[Seq, ...], str] = {}

    def rule(self, name: str, alts: Iterable[Seq]) -> Ref:
        body = tuple(alts)
        if body in self.named:
            return Ref(self.named[body])
        while name in self.rules:
            name += "-x"
        self.rules[name] = body
        self.named[body] = name
        return Ref(name)

    def value(self, key: str, domain: Domain) -> Seq | None:
        """` key="value"` for one domain; None when nothing can be written."""
        if domain == FLAG:
            return (Lit(f" {key}"),)
        if isinstance(domain, tuple):
            if not domain:
                return None
            return (Lit(f" {key}="), self.rule(f"v-{key}", ((Lit(quote(n)),) for n in domain)))
        if isinstance(domain, Number):
            first = Cls(DIGITS[domain.least:])
            sign = (Rep(Lit("-"), 0, 1),) if domain.signed else ()
            return (Lit(f' {key}="'), *sign, first, Rep(Cls(DIGITS), 0, NUMBER_DIGITS - 1), Lit('"'))
        if isinstance(domain, Free):
            if domain.most < 1:
                return (Lit(f' {key}=""'),)
            body: Seq = (TEXT_START, Rep(TEXT, 0, domain.most - 1))
            if domain.least == 0:
                body = (Rep(self.rule("text-opt", (body,)), 0, 1),)
            return (Lit(f' {key}="'), *body, Lit('"'))
        assert isinstance(domain, Paired)
        alts = []
        for name, ways in domain.choices:
            for way in ways:
                seq: list[Item] = [Lit(f" {key}={quote(name)}")]  # the pairs that follow it, in order
                for k, d in way:
                    part = self.value(k, d)
                    if part is None:
                        break
                    seq.extend(part)
                else:
                    alts.append(tuple(seq))
        return (self.rule(f"p-{key}", alts),) if alts else None


def _fights(rs: Ruleset, party: bool) -> bool:
    """A hit or a heal in a fight needs `combat.health`, on a character (DEC-13, CB-1)."""
    return not party and rs.file.combat is not None and rs.file.combat.health is not None


def _types_marking(rs: Ruleset) -> list[str] | None:
    """The damage types a hit must name, when the health is a wound track of several kinds that
    `damageKinds.map` chooses between (WOUND-33, CB-2); None when a hit may leave its type out."""
    combat = rs.file.combat
    h = combat.health if combat is not None else None
    track = rs.sheet.tracks.get(h.track) if h is not None and h.track is not None else None
    mapping = combat.damageKinds.map if combat is not None and combat.damageKinds is not None else {}
    if track is None or len(track.kinds or []) < 2 or not mapping:
        return None
    return [d for d, kind in mapping.items() if kind]


def _clocks(rs: Ruleset, party: bool) -> bool:
    return rs.file.clocks is not None  # CLOCK-2


# ops (or, as `*`, a whole kind) a ruleset may not take at all, whatever their attributes
_OP_NEEDS = {("sheet", "hit"): _fights, ("sheet", "heal"): _fights, ("clock", "*"): _clocks}


def _written_tag(b: _Builder, rs: Ruleset, family: str, op: str, shape: Shape, party: bool, subject: Seq) -> Seq | None:
    """One way to write a tag of `op`: `[family:` the subject, the fixed, required, chosen and optional
    attributes `]`; None when a required part has no value in this ruleset."""
    needs = _OP_NEEDS.get((family, op)) or _OP_NEEDS.get((family, "*"))
    if needs is not None and not needs(rs, party):
        return None
    domains = {k: _domain(rs, family, op, k, party) for k in (*shape.required, *shape.choose_one, *shape.optional)}
    paired = frozenset().union(*(d.keys for d in domains.values() if isinstance(d, Paired)))
    seq: list[Item] = [Lit(f"[{family}:"), *subject, *(Lit(f" {k}={quote(v)}") for k, v in shape.fixed)]
    for k in shape.required:
        part = None if k in paired else _attr_value(b, k, domains[k])
        if part is None and k not in paired:
            return None
        seq.extend(part or ())
    chosen = [p for k in shape.choose_one if k not in paired and (p := _attr_value(b, k, domains[k])) is not None]
    if chosen:
        seq.append(b.rule(f"one-{family}-{op}", chosen))
    elif shape.choose_one and not paired & set(shape.choose_one):
        return None
    for k in shape.optional:
        part = None if k in paired else _attr_value(b, k, domains[k])
        if part is not None:
            if (family, op, k) == ("sheet", "hit", "type") and _types_marking(rs) is not None:
                seq.extend(part)  # needed where marks have types
            else:
                seq.append(Rep(b.rule(f"opt-{k}", (part,)), 0, 1))
    seq.append(Lit("]"))
    return tuple(seq)


def _attr_value(b: _Builder, key: str, domain: Domain | None) -> Seq | None:
    return None if domain is None else b.value(key, domain)


def _family_tags(b: _Builder, rs: Ruleset, state: GameState, fam: Family) -> list[Seq]:
    """Every way to write a tag of one family; the tag syntax alone for an op without a Shape."""
    cards = unique_names(_Value(n, n) for n in state.cards if normalise(n) != "party")
    out: list[Seq] = []
    for op, shape in fam.shapes.items():
        if shape is None:
            out.append(_any_tag(b, fam.name))
            continue
        subjects: list[tuple[bool, Seq]] = []
        if shape.character and cards:
            subjects.append((False, (Lit(" who="), b.rule("who", [(Lit(quote(n)),) for n in (*cards, "party")]))))
        if shape.roller and cards:
            subjects.append((False, (Lit(" who="), b.rule("who-one", [(Lit(quote(n)),) for n in cards]))))
        if shape.party and rs.party is not None:
            subjects.append((True, (Lit(' sheet="party"'),)))
        if not (shape.character or shape.roller or shape.party):
            subjects.append((False, ()))
        for party, subject in subjects:
            tag = _written_tag(b, rs, fam.name, op, shape, party, subject)
            if tag is not None:
                out.append(tag)
    return list(dict.fromkeys(out))


def _any_tag(b: _Builder, name: str) -> Seq:
    """`[name:` then attributes `key` or `key="value"` `]`: the tag syntax (grammars/tags.lark), no names known."""
    key = (Cls("abcdefghijklmnopqrstuvwxyz_"), Rep(Cls("abcdefghijklmnopqrstuvwxyz0123456789_-"), 0, 31))
    value = (Lit('="'), Rep(TEXT, 0, TEXT_MAX), Lit('"'))
    attr = b.rule("any-attr", [(Lit(" "), *key, Rep(b.rule("any-value", [value]), 0, 1))])
    return (Lit(f"[{name}:"), Rep(attr, 0, 16), Lit("]"))


def grammar_of(rs: Ruleset, state: GameState) -> Grammar:
    """The reply's grammar as rules (see the module's docstring)."""
    b = _Builder()
    kinds = families()
    tags: list[Seq] = []
    for name, fam in kinds.items():
        if name not in UNCOUNTED:  # an edit receipt is the engine's to write, never the model's (ED-7)
            tags.extend(_family_tags(b, rs, state, fam))
    # runs of narration between brackets, never two runs side by side: one way to read each text, so neither a
    # server's grammar engine nor llguidance's mask keeps alternatives alive (its items are bounded)
    head = [Rule("reply", ((Rep(Ref("narr"), 0, 1), Rep(Ref("piece"), 0, None)),)),
            Rule("piece", ((Ref("brk"), Rep(Ref("narr"), 0, 1)),
                           *(((Ref("tag"), Rep(Ref("narr"), 0, 1)),) if tags else ())))]
    if tags:
        head.append(Rule("tag", tuple(tags)))
    return Grammar((*head, *narration_rules(tuple(kinds)), *(Rule(n, alts) for n, alts in b.rules.items())))


_KEPT: IdentityCache[dict[tuple[tuple[str, ...], str], str]] = IdentityCache(64)
_KEPT_PER_RULESET = 256


def kept_grammar(ruleset: Ruleset, state: GameState, format: str = "gbnf") -> str | None:
    """`reply_grammar`'s text when it is kept already, else None: a server builds a new one off its event loop."""
    kept = _KEPT.get((ruleset,), dict)
    return kept.get((tuple(state.cards), format))


def reply_grammar(ruleset: Ruleset, state: GameState, format: str = "gbnf") -> str:
    """The grammar of a reply to `state` under `ruleset`, as text in `format` (`gbnf`, `lark` or `llguidance`).

    Kept per ruleset and per the part of the state it reads (the characters' names), so a turn whose state
    differs only in values gets its grammar from memory."""
    if format not in FORMATS:
        raise ValueError(f"grammar format must be one of {', '.join(FORMATS)}, not {format!r}")
    kept = _KEPT.get((ruleset,), dict)
    key = (tuple(state.cards), format)
    text = kept.get(key)
    if text is None:
        if len(kept) >= _KEPT_PER_RULESET:
            kept.clear()
        text = kept[key] = grammar_of(ruleset, state).write(format)
    return text
