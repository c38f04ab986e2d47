"""The `[edit: ...]` kind: a player's edit written into the chat, so the chat alone gives the state
(docs/editor.md, decisions ED-6..ED-10).

A player edits a sheet between two replies (the editor, the game sheet); the edit applies at once, and the
engine writes it as a receipt at the start of the next reply:

    [edit: by="player" who="Mira" changes="fields.oath=Never again&marks.harm.2=tear" mac="..." result="ok" ...]

so a replay of the chat (`tagengine replay`, a server that lost its data folder, an exported chat) makes the
same edit at the same point. The model sees these receipts in the history and could imitate one: `mac` is an
HMAC over the tag and the state it applies to, keyed by the game's dice seed, which the model never sees, so
an imitation is refused `unverified-edit`, and so is a real receipt copied to another point of the chat (the
state there is another). The kind is not taught: only the engine writes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..records import frozen
from ..ruleset import Ruleset
from ..sheet.edit_paths import Change, change_of, value_text
from ..state import GameState
from ..tags import Tag, canonical, scan
from ..text import normalise
from .family import Family, Op
from .result import Outcome, Result, ok, refuse, refused

if TYPE_CHECKING:
    from .sheet_edits import Edited

ATTRIBUTES = ("by", "who", "sheet", "changes", "mac")
AUTHORS = ("player",)  # who made an edit: only a player, for now
MAC_DIGITS = 16  # hex digits of the HMAC kept: 64 bits, against a model that guesses (ED-8)
# What a change's key or value keeps as it is in `changes`: printable ASCII but the separators (`&`, `=`), the
# escape (`%`), what a tag value cannot hold (`[`, `]`, `"`, `\`) and macro braces a chat app could expand.
_KEPT = "".join(chr(c) for c in range(0x20, 0x7f) if chr(c) not in '%&="[]\\{}')


@frozen(slots=True)
class PlayerEdit:
    """An edit a player made and the chat does not hold yet: the character's card name (None: the party sheet)
    and the changes as applied (`Edited.changes`)."""

    who: str | None
    changes: tuple[Change, ...]


def _percent_encoded(text: str) -> str:
    """Percent-encoded (UTF-8) where a character must be: what `_KEPT` leaves out, and beyond ASCII what does not
    print (a line separator, a bidirectional override); other letters of any script stay readable."""
    return "".join(ch if ch in _KEPT or (ch > "\x7f" and ch.isprintable()) else quote(ch, safe="") for ch in text)


def encode_changes(changes: Sequence[Change]) -> str:
    """`key=value&key=value`, each key and value percent-encoded where it must be (a tag value is one line with
    no brackets or quotes, DEC-25), readable where it can be."""
    out = []
    for c in changes:
        text = value_text(c.value)
        out.append(_percent_encoded(c.key) + ("" if text is None else f"={_percent_encoded(text)}"))
    return "&".join(out)


def decode_changes(text: str) -> list[Change]:
    """The changes `encode_changes` wrote (each value as text, as a form posts it). Raises UnicodeDecodeError for
    an escape that is not UTF-8."""
    out = []
    for part in text.split("&") if text else []:
        key, sep, value = part.partition("=")
        out.append(change_of(unquote(key, errors="strict"), unquote(value, errors="strict") if sep else None))
    return out


def edit_key(state: GameState) -> bytes:
    """The MAC's key: derived from the dice seed, which every replay has (it is in the start state) and the model
    never sees (no prompt and no receipt shows it, ED-8)."""
    return hashlib.sha256(f"tagengine.edit/1\0{state.dice.seed}".encode()).digest()


def state_digest(state: GameState) -> str:
    """Where in the game an edit applies: SHA-256 of the state's document, keys sorted, without the party sheet's
    revision (chat metadata a chat app may move on by itself, M-3)."""
    doc = state.to_json()
    doc.pop("gamePartySheetRevision", None)
    text = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def edit_mac(state: GameState, attrs: tuple[tuple[str, str | None], ...]) -> str:
    """The MAC of an edit tag's attributes (all but `mac`, in their order) applied to `state`."""
    body = f"{canonical('edit', attrs, ())}\0{state_digest(state)}"
    return hmac.new(edit_key(state), body.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:MAC_DIGITS]


def now_of(edited: Edited) -> str:
    """The receipt's `now`: how many changes, and each roll's total (the dice the player saw)."""
    n = len(edited.changes)
    parts = [f"{n} change{'s' if n != 1 else ''}"] + [f"{path} rolled {total}" for path, total in edited.rolled]
    return "; ".join(parts)


def op_of(rs: Ruleset, tag: Tag) -> str | Result:
    """`character` (`who=`) or `party` (`sheet="party"`), once the tag has what every edit receipt has."""
    if any(k not in ATTRIBUTES for k in tag.keys):
        return refused("unknown-attribute")
    if tag.get("changes") is None or tag.get("mac") is None or tag.get("by") is None:
        return refused("missing-attribute")
    if tag.has("who") == tag.has("sheet"):
        return refused("one-action" if tag.has("who") else "missing-attribute")
    if tag.get("by") not in AUTHORS:
        return refused("invalid-value")
    if tag.has("sheet"):
        return "party" if rs.party is not None and normalise(tag.get("sheet") or "") == "party" else refused(
            "unknown-sheet")
    return "character"


def _made_edit(rs: Ruleset, state: GameState, tag: Tag) -> Outcome:
    # The edit machinery is imported when a receipt is met, not when the families load: a reply seldom holds one,
    # and a cold `tagengine apply` would pay about 10 ms for it (CL-3)
    from .sheet_edits import edit_party, edit_sheet

    attrs = tuple((k, v) for k, v in tag.attrs if k != "mac")
    if not hmac.compare_digest(tag.get("mac") or "", edit_mac(state, attrs)):
        return refuse(state, "unverified-edit")  # imitated, altered, or copied from another point (ED-8)
    try:
        changes = decode_changes(tag.get("changes") or "")
    except UnicodeDecodeError:
        return refuse(state, "invalid-edit")
    who = tag.get("who")
    edited = edit_party(rs, state, changes) if who is None else edit_sheet(rs, state, who, changes)
    if not edited.ok or not edited.changes:
        return refuse(state, "invalid-edit")  # the changes no longer fit the sheet (a ruleset changed since, ED-9)
    return Outcome(ok(now_of(edited)), edited.state)


@frozen(slots=True)
class Receipted:
    """`edit_receipts`' answer: the receipts to put at the start of the next reply (one line each), the state
    after them, and the edits that no longer apply to that state (left out)."""

    text: str
    state: GameState
    dropped: tuple[PlayerEdit, ...] = ()


def edit_receipts(rs: Ruleset, state: GameState, edits: Sequence[PlayerEdit]) -> Receipted:
    """The receipts of `edits`, made in this order on `state` (the snapshot the next reply starts from), for the
    server or a chat to put at the start of that reply: `apply_reply(rs, state, text + reply)` then makes the
    edits, then the reply's tags (DEC-5: the receipts apply as written). An edit that no longer applies to what
    the ones before it left (its sheet changed under it) is dropped and named; one that changes nothing is not
    written."""
    from .sheet_edits import edit_party, edit_sheet  # as in _made_edit

    lines: list[str] = []
    dropped: list[PlayerEdit] = []
    for e in edits:
        subject = ("sheet", "party") if e.who is None else ("who", e.who)
        attrs: tuple[tuple[str, str | None], ...] = (("by", "player"), subject, ("changes", encode_changes(e.changes)))
        edited = edit_party(rs, state, e.changes) if e.who is None else edit_sheet(rs, state, e.who, e.changes)
        if not edited.ok or not e.changes:
            dropped.append(e)
            continue
        if edited.state.to_json() == state.to_json():
            continue  # it changes nothing (a value set to what it was): nothing to write
        tag = (*attrs, ("mac", edit_mac(state, attrs)))
        lines.append(canonical("edit", tag, ok(now_of(edited)).attrs()) + "\n")
        state = edited.state
    return Receipted("".join(lines), state, tuple(dropped))


def opening_of(text: str) -> str:
    """The edit receipts a reply opens with (what `edit_receipts` put there), each with its line end: a chat
    keeps them when the reply is regenerated (ED-6)."""
    end = 0
    for found in scan(text):
        if found.name != "edit" or found.tag is None or text[end:found.start].strip():
            break
        end = found.end + (text[found.end:found.end + 1] == "\n")
    return text[:end]


FAMILY = Family.of("edit", op_of, (Op("character", _made_edit), Op("party", _made_edit)))
