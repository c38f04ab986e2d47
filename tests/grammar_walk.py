"""Random walks over a reply's grammar (tagengine/_internal/tags/grammar_forms.py values): texts the grammar
writes, to read back with the engine (tests/test_reply_grammar.py, tests/test_llguidance_mask.py)."""

from __future__ import annotations

import random

from tagengine._internal.tags.grammar_forms import Cls, Grammar, Item, Lit, Ref

# what a negated class draws from: prose, punctuation, the characters the reader cares about, and some beyond ASCII
POOL = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\n.,;:!?'\"-_()[]{}\\/=*#`~"
        "\u00e9\u00df\u201c\u201d\u2014\u4e2d\U0001f600")


def walk(g: Grammar, rnd: random.Random, *, most: int = 40) -> str:
    """One text of `g`: `most` bounds each unbounded repetition, so a walk always ends."""
    rules = {r.name: r for r in g.rules}
    out: list[str] = []

    def item(it: Item) -> None:
        if isinstance(it, Lit):
            out.append(it.text)
        elif isinstance(it, Ref):
            rule = rules[it.name]
            for x in rnd.choice(rule.alts):
                item(x)
        elif isinstance(it, Cls):
            if it.negated:
                out.append(rnd.choice([c for c in POOL if c not in it.chars]))
            else:
                out.append(rnd.choice(it.chars))
        else:
            hi = it.most if it.most is not None else it.least + rnd.randint(0, most)
            for _ in range(rnd.randint(it.least, min(hi, it.least + most))):
                item(it.item)

    for x in g.rules[0].alts[rnd.randrange(len(g.rules[0].alts))]:
        item(x)
    return "".join(out)
