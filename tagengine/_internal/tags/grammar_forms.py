"""A context-free grammar as plain values, written out in the forms model servers take: GBNF (llama.cpp's
grammars/README.md, KoboldCpp, vLLM's and SGLang's `grammar`), Lark (the `lark` package: the tests read replies
with it and Hypothesis draws from it) and llguidance's Lark-like form (`%llguidance {}` first).

The reply's grammar (commands/reply_grammar.py) is built from these values; the narration around tags is built
here from the tag names of the vocabulary, so a bracket that opens none of our tags stays free text and one that
does can only open a tag the grammar writes.
"""

from __future__ import annotations

import json

from ..records import frozen

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BLANKS = " \t"  # what the scanner's opener allows around a tag's name (tags/vocabulary.py)
FORMATS = ("gbnf", "lark", "llguidance")


@frozen(slots=True)
class Lit:
    """Text written as it is."""

    text: str


@frozen(slots=True)
class Ref:
    """Another rule, by name (lower-case letters, digits and `-`)."""

    name: str


@frozen(slots=True)
class Cls:
    """One character of a set, or (`negated`) of any character but those. `chars` holds single characters."""

    chars: str
    negated: bool = False


@frozen(slots=True)
class Rep:
    """`item` from `least` to `most` times (None: no bound)."""

    item: Item
    least: int
    most: int | None


Item = Lit | Ref | Cls | Rep
Seq = tuple[Item, ...]


@frozen(slots=True)
class Rule:
    name: str
    alts: tuple[Seq, ...]


@frozen(slots=True)
class Grammar:
    """Rules in order; the first is where a text starts."""

    rules: tuple[Rule, ...]

    def write(self, form: str) -> str:
        if form == "gbnf":
            return _gbnf(self)
        if form == "lark":
            return _lark(self)
        if form == "llguidance":
            return "%llguidance {}\n\n" + _lark(self)
        raise ValueError(f"grammar format must be one of {', '.join(FORMATS)}, not {form!r}")


# -- narration: any text, and brackets that open none of the tags ------------------------------------------------
def narration_rules(names: tuple[str, ...]) -> tuple[Rule, ...]:
    """`narr`: a run of narration (anything but `[`: one lexeme, as llguidance's mask wants long ones); `brk`: a
    `[` and what follows it up to the first
    character that shows it opens none of `names` (`[` blanks name blanks `:`, in either case, as the scanner's
    opener reads it). That character is taken too, so what comes after a bracket can never complete an opener;
    a bracket right before another `[`, or at the very end, is not written (the grammar is a subset of what the
    reader takes)."""
    trie: dict[str, dict] = {}  # type: ignore[type-arg]
    for n in names:
        node = trie
        for c in n:
            node = node.setdefault(c, {})
        node[""] = {}
    rules = [Rule("narr", ((Rep(Cls("[", negated=True), 1, None),),)),
             Rule("brk", ((Lit("["), Rep(Cls(BLANKS), 0, None), Ref("brk-0")),))]

    def walk(prefix: str, node: dict) -> None:  # type: ignore[type-arg]
        kids = sorted(c for c in node if c)
        alts: list[Seq] = [(Cls(c.upper() + c), Ref(f"brk-{prefix + c}")) for c in kids]
        others = "".join(x for x in LETTERS if x.lower() not in kids)
        if others:
            alts.append((Cls(others),))  # a word none of the names begins so: free text from here
        if not prefix:
            alts.append((Cls(LETTERS + BLANKS + "[", negated=True),))
        elif "" in node:  # a whole name: after blanks, anything but the `:` that would open the tag
            alts.append((Cls(LETTERS + BLANKS + ":[", negated=True),))
            alts.append((Rep(Cls(BLANKS), 1, None), Cls(BLANKS + ":[", negated=True)))
        else:
            alts.append((Cls(LETTERS + "[", negated=True),))
        rules.append(Rule(f"brk-{prefix or 0}", tuple(alts)))
        for c in kids:
            walk(prefix + c, node[c])

    walk("", trie)
    return tuple(rules)


# -- GBNF --------------------------------------------------------------------------------------------------------
_GBNF_LIT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GBNF_CLS = {"\\": "\\\\", "]": "\\]", "[": "\\[", "^": "\\^", "-": "\\-", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_char(c: str, table: dict[str, str]) -> str:
    if c in table:
        return table[c]
    if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f:
        return f"\\x{ord(c):02X}"
    if ord(c) in (0x2028, 0x2029):
        return f"\\u{ord(c):04X}"
    return c


def _runs(chars: str) -> list[tuple[str, str]]:
    """The characters as ranges of consecutive code points, so a class stays short."""
    points = sorted(set(map(ord, chars)))
    out: list[tuple[str, str]] = []
    for p in points:
        if out and ord(out[-1][1]) == p - 1:
            out[-1] = (out[-1][0], chr(p))
        else:
            out.append((chr(p), chr(p)))
    return out


def _gbnf_item(item: Item) -> str:
    if isinstance(item, Lit):
        return '"' + "".join(_gbnf_char(c, _GBNF_LIT) for c in item.text) + '"'
    if isinstance(item, Ref):
        return item.name
    if isinstance(item, Cls):
        body = "".join(_gbnf_char(a, _GBNF_CLS) + ("" if a == b else "-" + _gbnf_char(b, _GBNF_CLS))
                       for a, b in _runs(item.chars))
        return f"[{'^' if item.negated else ''}{body}]"
    inner = _gbnf_item(item.item)
    return inner + _suffix(item.least, item.most)


def _suffix(least: int, most: int | None) -> str:
    if (least, most) == (0, None):
        return "*"
    if (least, most) == (1, None):
        return "+"
    if (least, most) == (0, 1):
        return "?"
    return f"{{{least},{'' if most is None else most}}}"


def _gbnf(g: Grammar) -> str:
    lines = []
    for i, r in enumerate(g.rules):
        name = "root" if i == 0 else r.name
        lines.append(f"{name} ::= " + " | ".join(" ".join(map(_gbnf_item, seq)) for seq in r.alts))
    return "\n".join(lines) + "\n"


# -- Lark (and llguidance's Lark-like form) -----------------------------------------------------------------------
_RE_CLS = {**_GBNF_CLS, "/": "\\/"}


def _re_char(c: str) -> str:
    if c in _RE_CLS:
        return _RE_CLS[c]
    if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or ord(c) in (0x2028, 0x2029):
        return f"\\u{ord(c):04x}"
    return c


def _re_cls(item: Cls) -> str:
    body = "".join(_re_char(a) + ("" if a == b else "-" + _re_char(b)) for a, b in _runs(item.chars))
    return f"[{'^' if item.negated else ''}{body}]"


def _lark_name(name: str) -> str:
    return name.replace("-", "_")


def _lark_item(item: Item) -> str:
    if isinstance(item, Lit):
        return json.dumps(item.text, ensure_ascii=False)
    if isinstance(item, Ref):
        return _lark_name(item.name)
    if isinstance(item, Cls):
        return f"/{_re_cls(item)}/"
    if isinstance(item.item, Cls):  # one regular expression: a lexer takes the run whole; none matches nothing
        if item.least == 0:
            return f"/{_re_cls(item.item)}{_suffix(1, item.most)}/?"
        return f"/{_re_cls(item.item)}{_suffix(item.least, item.most)}/"
    inner = _lark_item(item.item)
    if item.most is not None and (item.least, item.most) != (0, 1):
        return f"{inner} ~ {item.least}..{item.most}"
    return inner + _suffix(item.least, item.most)


def _lark(g: Grammar) -> str:
    lines = []
    for i, r in enumerate(g.rules):
        name = "start" if i == 0 else _lark_name(r.name)
        lines.append(f"{name}: " + " | ".join(" ".join(map(_lark_item, seq)) for seq in r.alts))
    return "\n".join(lines) + "\n"
