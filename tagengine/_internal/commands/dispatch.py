"""`apply_reply`: every tag of a reply, in reply order (CLOCK-18), against an immutable state."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..records import frozen
from ..ruleset import Ruleset
from ..state import GameState
from ..tags import Tag, canonical, found_in
from ..tags.vocabulary import UNCOUNTED
from .reasons import COMMAND_LIMIT
from .result import Outcome, Result, refuse, refused
from .table import family_of


@frozen(slots=True)
class Receipt:
    """One answered tag: where it stands in the output text, what it asked, what came of it."""

    start: int
    end: int
    name: str
    attrs: tuple[tuple[str, str | None], ...]
    result: str
    now: str | None = None
    reason: str | None = None
    detail: str | None = None
    record: tuple[tuple[str, str], ...] = ()  # a check's roll record, as its receipt writes it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"span": [self.start, self.end], "tag": self.name,
                               "attrs": {k: v for k, v in self.attrs}, "result": self.result}
        for key in ("now", "reason", "detail"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.record:
            out["record"] = dict(self.record)
        return out


_RECEIPT_SLOTS = tuple(getattr(Receipt, name).__set__ for name in
                       ("start", "end", "name", "attrs", "result", "now", "reason", "detail", "record"))


def receipt(start: int, end: int, name: str, attrs: tuple[tuple[str, str | None], ...], result: str, now: str | None,
            reason: str | None, detail: str | None, record: tuple[tuple[str, str], ...]) -> Receipt:
    """`Receipt(...)`, each slot set by its own setter, where a frozen dataclass's `__init__` calls
    `object.__setattr__` nine times: 0.64 against 0.84 us, and every tag gets one."""
    new = object.__new__(Receipt)
    s_start, s_end, s_name, s_attrs, s_result, s_now, s_reason, s_detail, s_record = _RECEIPT_SLOTS
    s_start(new, start)
    s_end(new, end)
    s_name(new, name)
    s_attrs(new, attrs)
    s_result(new, result)
    s_now(new, now)
    s_reason(new, reason)
    s_detail(new, detail)
    s_record(new, record)
    return new


@frozen(slots=True)
class Applied:
    """A reply applied: its text with every tag rewritten as a receipt, the state after, the receipts."""

    text: str
    state: GameState
    receipts: tuple[Receipt, ...] = field(default=())

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.receipts:
            out[r.result] = out.get(r.result, 0) + 1
        return out


_NO_RAW = (("raw", ""),)  # a malformed tag with nothing in it: 150,000 openers share one


def run_command(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    """One well-formed tag through its family's handler. Never raises for any tag."""
    if not tag.writable:
        return refuse(state, "bad-text")  # before any handler can store it (docs/decisions.md H-3)
    if tag.repeated:
        return refuse(state, "duplicate-attribute")
    fam = family_of(tag.name)
    if fam is None:  # pragma: no cover - the scanner proposes only names of the vocabulary
        return refuse(state, "malformed")
    op = fam.op_of(rs, tag)
    if isinstance(op, Result):
        return Outcome(op, state)
    handler = fam.ops.get(op)
    if handler is None:
        return refuse(state, "unknown-op")
    return handler(rs, state, tag)


def apply_reply(rs: Ruleset, state: GameState, text: str) -> Applied:
    """The reply with every tag rewritten as a receipt, the new state and the receipts.

    `state` is never mutated: regenerating and swipes go back to it (CLOCK-26, CLOCK-27). Raises
    nothing, whatever the text: a tag that cannot be applied is refused in its receipt.
    """
    return apply_part(rs, state, text)[0]


def apply_part(rs: Ruleset, state: GameState, text: str, commands: int = 0) -> tuple[Applied, int]:
    """`apply_reply` for a part of a reply that starts and ends outside any tag, after `commands`
    well-formed tags of the same reply (DEC-6 counts them per reply); also returns the new count. A
    streamed reply applied part by part gives apply_reply's text and state (server/turn/receipts.py)."""
    out: list[str] = []
    receipts: list[Receipt] = []
    pos = length = 0
    malformed = refused("malformed")
    attrs: tuple[tuple[str, str | None], ...]
    for start, end, name, tag, raw, detail in found_in(text):
        if start != pos:
            chunk = text[pos:start]
            out.append(chunk)
            length += len(chunk)
        if tag is None:
            attrs, res = _NO_RAW if not raw else (("raw", raw),), malformed
            tag_text = canonical(name, attrs, res.written)
        else:
            name, attrs = tag.name, tag.attrs
            counted = name not in UNCOUNTED  # an edit receipt is not one of the model's commands (ED-7)
            commands += counted
            if counted and commands > COMMAND_LIMIT:
                res = refused("command-limit")
            else:
                res, state, detail = _run_safely(rs, state, tag)
            tag_text = tag.head + res.text + "]"  # render.canonical, its parts worked out once each
        out.append(tag_text)
        written = length + len(tag_text)
        receipts.append(receipt(length, written, name, attrs, res.result, res.now, res.reason, detail, res.record))
        length = written
        pos = end
    if not receipts:
        return Applied(text, state, ()), commands
    out.append(text[pos:])
    return Applied("".join(out), state, tuple(receipts)), commands


def _run_safely(rs: Ruleset, state: GameState, tag: Tag) -> tuple[Result, GameState, str | None]:
    """A bug in one handler must not lose the reply: that tag is refused, the state kept."""
    try:
        outcome = run_command(rs, state, tag)
    except Exception as e:
        return refused("malformed"), state, f"internal error: {type(e).__name__}: {e}"
    return outcome.result, outcome.state, None
