"""`serve --grammar KIND`: the turn's reply grammar (commands/reply_grammar.py) added to the upstream request in
the field that kind of model server reads (docs/middleware.md, decisions GR-5..GR-7).

    gbnf        `grammar`: GBNF. llama.cpp's server, KoboldCpp
    llguidance  `grammar`: llguidance's Lark-like form, `%llguidance {}` first. llama.cpp built with llguidance
    vllm        `structured_outputs: {"grammar": ...}`: GBNF (xgrammar reads it). vLLM 0.12 and later
    sglang      `ebnf`: GBNF (xgrammar, its default grammar backend). SGLang
    off         nothing added (the default): no upstream gets a field it might refuse

A request that brings a constraint of its own (its `grammar`, `response_format`, ...) keeps it and gets none of
ours: two constraints at once are refused by vLLM and SGLang, and the client asked for its own on purpose. A
continued reply gets none either: its prefill may end inside a tag, and a grammar starts at a reply's start.
"""

from __future__ import annotations

from typing import Any

from ...commands.reply_grammar import kept_grammar, reply_grammar
from ...ruleset import Ruleset
from ...state import GameState
from ..runtime.worker_threads import Workers

# what each kind writes: (the grammar's format, the field)
_WRITES = {"gbnf": ("gbnf", "grammar"), "llguidance": ("llguidance", "grammar"), "vllm": ("gbnf", "structured_outputs"),
           "sglang": ("gbnf", "ebnf")}
GRAMMAR_KINDS = ("off", *_WRITES)
# fields by which a request constrains its own reply, in the servers above (and OpenAI's response_format)
CONSTRAINTS = frozenset({"grammar", "grammar_string", "json_schema", "regex", "ebnf", "structured_outputs",
                         "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structural_tag"})


def own_constraint(body: dict[str, Any]) -> bool:
    """Whether the request constrains its reply itself (a `response_format` other than plain text counts)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        return True
    return any(body.get(k) is not None for k in CONSTRAINTS)


async def with_grammar(body: dict[str, Any], kind: str, rs: Ruleset, state: GameState, workers: Workers) -> str | None:
    """Add the grammar of a reply to `state` to the upstream `body` (in place) as `kind` says; the grammar's
    format when one was added, else None (`off`, or a request with a constraint of its own). A grammar not kept
    yet is built in a worker thread: a few milliseconds for a large ruleset, off the event loop (SEC-2)."""
    if kind == "off" or own_constraint(body):
        return None
    form, field = _WRITES[kind]
    text = kept_grammar(rs, state, form) or await workers.run(reply_grammar, rs, state, form)
    body[field] = {"grammar": text} if field == "structured_outputs" else text
    return form
