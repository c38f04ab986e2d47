"""A chat with a state snapshot after every assistant reply: receive, regenerate, swipes, deletes, and the
players' edits.

Regenerating starts from the snapshot before the reply, continuing from the current one (CLOCK-26,
PARTY-25); selecting or deleting a swipe or a message restores that snapshot, clocks and party sheet
included (CLOCK-27). Snapshots are immutable GameStates, so going back costs nothing.

A player's edit (`edit`, `edit_party`, `save_party`) applies at once and waits, made on the current snapshot,
for the next reply, which opens with its receipt: from then on the chat's text holds it, and a regenerated
reply keeps it. Going back past that snapshot (a swipe, a delete) leaves it out (docs/decisions.md ED-6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .commands import Applied, apply_reply
from .commands.edit import PlayerEdit, decode_changes, edit_receipts, encode_changes, opening_of
from .commands.party_save import PartyConflict, draft_changes
from .commands.sheet_edits import Changes, Edited, edit_party, edit_sheet
from .errors import NotFoundError, Problem, StateError
from .history import read_messages
from .ruleset import Ruleset
from .sheet.edit_paths import Change
from .state import GameState, clocks_json, dice_json, from_json, live_json, name_problems, thaw

CHAT_FORMAT = "tagengine.chat/1"


@dataclass
class Message:
    role: str
    content: str = ""  # the selected swipe's text for an assistant message
    swipes: list[Applied] = field(default_factory=list)
    selected: int = 0

    @property
    def snapshot(self) -> GameState | None:
        return self.swipes[self.selected].state if self.swipes else None


class Chat:
    def __init__(self, rs: Ruleset, state: GameState) -> None:
        self.rs = rs
        self.start = state
        self.messages: list[Message] = []
        self.revision = state.party_revision  # chat metadata: only ever grows (PARTY-36)
        # the players' edits the chat does not hold yet: made on the snapshot `_edited_on` (an Applied, or the
        # start), from the state `_edited_from`, giving `_edited_state` (ED-6)
        self._edits: tuple[PlayerEdit, ...] = ()
        self._edited_on: object = None
        self._edited_from: GameState | None = None
        self._edited_state: GameState | None = None

    # -- reading -----------------------------------------------------------------------------------
    def _snapshot(self) -> tuple[object, GameState]:
        """The current snapshot (the selected swipe of the last reply, else the start) and its state."""
        for m in reversed(self.messages):
            if m.swipes:
                return m.swipes[m.selected], replace(m.swipes[m.selected].state, party_revision=self.revision)
        return self.start, replace(self.start, party_revision=self.revision)

    def _pending(self) -> bool:
        """Edits wait for the next reply, while the snapshot they were made on is still the current one."""
        return bool(self._edits) and self._edited_on is self._snapshot()[0]

    @property
    def edits(self) -> tuple[PlayerEdit, ...]:
        """The players' edits made since the last reply, which the next one writes (ED-6)."""
        return self._edits if self._pending() else ()

    @property
    def state(self) -> GameState:
        """The current snapshot (after the last assistant reply, else the start), with the players' edits made
        since."""
        if self._pending() and self._edited_state is not None:
            return self._edited_state
        return self._snapshot()[1]

    def _before(self, index: int) -> GameState:
        for m in reversed(self.messages[:index]):
            if m.snapshot is not None:
                return m.snapshot
        return self.start

    def _bump_revision(self, before: GameState) -> None:
        """A restore that changes the party sheet is a story change: the revision moves on (PARTY-36)."""
        after = self.state
        if after.party_sheet != before.party_sheet or after.party_revision != before.party_revision:
            self.revision = max(self.revision + 1, after.party_revision)

    # -- turns -------------------------------------------------------------------------------------
    def user(self, content: str) -> None:
        self.messages.append(Message("user", content))

    def receive(self, reply: str) -> Applied:
        """A new assistant reply, applied to the current snapshot (continue, CLOCK-26); it opens with the receipts
        of the edits made since (ED-6)."""
        before, opening = self._snapshot()[1], ""
        if self._pending() and self._edited_from is not None:
            before = self._edited_from
            opening = edit_receipts(self.rs, before, self._edits).text
        applied = apply_reply(self.rs, before, opening + reply)
        self.messages.append(Message("assistant", applied.text, [applied]))
        self.revision = max(self.revision, applied.state.party_revision)
        self._edits = ()
        return applied

    # -- a player's edits --------------------------------------------------------------------------
    def edit(self, who: str, changes: Changes) -> Edited:
        """A player's edit of the character `who`, checked as the editor checks it (`edit_sheet`): made at once
        when every change is allowed, written at the start of the next reply; else nothing changes and the
        problems say why."""
        state = self.state
        edited = edit_sheet(self.rs, state, who, changes)
        name = state.character(who)
        if edited.ok and name is not None and edited.state.to_json() != state.to_json():
            self._keep(PlayerEdit(name, edited.changes), state, edited.state)
        return edited

    def edit_party(self, changes: Changes, opened_at: int | None = None) -> Edited:
        """A player's edit of the party sheet (`edit_party`): refused `stale-revision` when it was opened at a
        revision that is no longer the chat's (PARTY-37)."""
        state = self.state
        edited = edit_party(self.rs, state, changes, opened_at=opened_at)
        if edited.ok and edited.state.to_json() != state.to_json():
            self._keep(PlayerEdit(None, edited.changes), state, edited.state)
            self.revision = max(self.revision, edited.state.party_revision)
        return edited

    def _keep(self, edit: PlayerEdit, before: GameState, after: GameState) -> None:
        snapshot = self._snapshot()[0]
        if not self._pending():
            self._edits, self._edited_on, self._edited_from = (), snapshot, before
        self._edits = (*self._edits, edit)
        self._edited_state = after

    def _last_assistant(self) -> int:
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "assistant":
                return i
        raise NotFoundError("assistant reply", "last")

    def regenerate(self, reply: str) -> Applied:
        """A new swipe of the last reply, applied to the snapshot before it (CLOCK-26, PARTY-25). Raises
        NotFoundError when the chat has no reply yet."""
        i = self._last_assistant()
        before = self.state
        m = self.messages[i]
        opening = opening_of(m.content)  # the edits the reply opened with stay in the chat (ED-6)
        applied = apply_reply(self.rs, replace(self._before(i), party_revision=self.revision), opening + reply)
        m.swipes.append(applied)
        m.selected, m.content = len(m.swipes) - 1, applied.text
        self._bump_revision(before)
        return applied

    def select_swipe(self, k: int) -> GameState:
        """Show swipe k of the last reply; its snapshot becomes current (CLOCK-27). Raises NotFoundError
        for a swipe or a reply that is not there."""
        before = self.state
        m = self.messages[self._last_assistant()]
        if not 0 <= k < len(m.swipes):
            raise NotFoundError("swipe", k, tuple(str(i) for i in range(len(m.swipes))))
        m.selected, m.content = k, m.swipes[k].text
        self._bump_revision(before)
        return self.state

    def delete_swipe(self, k: int) -> GameState:
        """Delete swipe k of the last reply (the reply too, with its last swipe). Raises NotFoundError for a
        swipe or a reply that is not there."""
        before = self.state
        i = self._last_assistant()
        m = self.messages[i]
        if not 0 <= k < len(m.swipes):
            raise NotFoundError("swipe", k, tuple(str(i) for i in range(len(m.swipes))))
        del m.swipes[k]
        if not m.swipes:
            del self.messages[i]
        else:
            m.selected = min(m.selected if m.selected < k else max(0, m.selected - 1), len(m.swipes) - 1)
            m.content = m.swipes[m.selected].text
        self._bump_revision(before)
        return self.state

    def delete_message(self, index: int) -> GameState:
        """Remove one message; the current snapshot is the last remaining reply's (CLOCK-27). Raises
        NotFoundError for an index that is not there."""
        before = self.state
        if not -len(self.messages) <= index < len(self.messages):
            raise NotFoundError("message", index, tuple(str(i) for i in range(len(self.messages))))
        del self.messages[index]
        self._bump_revision(before)
        return self.state

    def save_party(self, draft: Mapping[str, Any], opened_at: int) -> GameState:
        """A player's save of the whole party sheet (PARTY-36, PARTY-37): PartyConflict carrying the newer sheet
        when stale, StateError when the draft does not fit the ruleset. Made as an edit (`edit_party`)."""
        state = self.state
        if self.rs.file.party is not None and opened_at != state.party_revision:
            raise PartyConflict(state.party_sheet, state.party_revision)
        edited = self.edit_party(draft_changes(self.rs, state, draft), opened_at)
        if not edited.ok:
            raise StateError(edited.problems, "party save")
        return self.state

    # -- history -----------------------------------------------------------------------------------
    def history(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]

    @classmethod
    def from_history(cls, rs: Ruleset, state: GameState, messages: Iterable[Mapping[str, Any]]) -> Chat:
        """Rebuild the snapshots by replaying the receipts already in the history; exact by DEC-5. Raises
        HistoryError naming every message that is not `{"role", "content"}`."""
        chat = cls(rs, state)
        for m in read_messages(messages):
            if m["role"] == "assistant":
                chat.receive(m["content"])
            else:
                chat.messages.append(Message(m["role"], m["content"]))
        return chat

    # -- JSON --------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Chat metadata as the spec stores it, and per snapshot `rulesetLive`, `rulesetClocks`, `rulesetDice`."""
        current = self.state.to_json()
        doc: dict[str, Any] = {
            "format": CHAT_FORMAT,
            "metadata": {k: current[k] for k in ("gameCharacterCards", "gamePartySheet", "gamePartySheetRevision")},
            "start": self.start.to_json(),
            "messages": [],
        }
        for m in self.messages:
            entry: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.swipes:
                entry["selected"] = m.selected
                entry["swipes"] = [{"text": a.text, "snapshot": snapshot_json(a.state)} for a in m.swipes]
            doc["messages"].append(entry)
        if self._pending():  # made since the last reply: the next one writes them (ED-6)
            doc["edits"] = [{"who": e.who, "changes": encode_changes(e.changes)} for e in self._edits]
        return doc

    @classmethod
    def from_json(cls, rs: Ruleset, doc: Any) -> Chat:
        """A chat from its JSON document. Any malformed document is a StateError listing every problem
        with its path (`messages[3].swipes[0].text`); nothing else comes out (docs/decisions.md H-5)."""
        if not isinstance(doc, Mapping) or doc.get("format") != CHAT_FORMAT:
            raise StateError([Problem("format", "not-chat", f"expected format {CHAT_FORMAT!r}", None)], "chat")
        problems: list[Problem] = []
        meta = _part(doc, "metadata", Mapping, {}, "metadata", problems)
        cards = meta.get("gameCharacterCards")
        if cards is not None:
            if not isinstance(cards, Mapping):
                problems.append(Problem("metadata.gameCharacterCards", "wrong-type", "must be an object",
                                        type(cards).__name__))
                cards = None
            else:
                problems += name_problems(list(cards), "metadata.gameCharacterCards")
        revision = meta.get("gamePartySheetRevision")
        if revision is not None and (not isinstance(revision, int) or isinstance(revision, bool) or revision < 0):
            problems.append(Problem("metadata.gamePartySheetRevision", "wrong-type",
                                    "the revision is a whole number, 0 or more", revision))
            revision = None
        start = _read_state(rs, doc.get("start"), "start", problems)
        base = start.to_json() if start is not None else {}
        messages: list[Message] = []
        for i, entry in enumerate(_part(doc, "messages", list, [], "messages", problems)):
            mp = f"messages[{i}]"
            if not isinstance(entry, Mapping):
                problems.append(Problem(mp, "wrong-type", "a message is an object", type(entry).__name__))
                continue
            role = _part(entry, "role", str, "user", f"{mp}.role", problems)
            m = Message(role, _part(entry, "content", str, "", f"{mp}.content", problems))
            for j, sw in enumerate(_part(entry, "swipes", list, [], f"{mp}.swipes", problems)):
                sp = f"{mp}.swipes[{j}]"
                if not isinstance(sw, Mapping):
                    problems.append(Problem(sp, "wrong-type", "a swipe is an object", type(sw).__name__))
                    continue
                text = _part(sw, "text", str, "", f"{sp}.text", problems)
                snapshot = _part(sw, "snapshot", Mapping, {}, f"{sp}.snapshot", problems)
                if start is None:
                    continue
                snap = {**base, **snapshot}
                if cards is not None and "gameCharacterCards" not in snapshot:  # a document from before ED-6
                    snap["gameCharacterCards"] = cards
                state = _read_state(rs, snap, f"{sp}.snapshot", problems)
                if state is not None:
                    m.swipes.append(Applied(text, state, ()))
            selected = entry.get("selected", 0)
            if not isinstance(selected, int) or isinstance(selected, bool) or selected < 0:
                problems.append(Problem(f"{mp}.selected", "wrong-type", "the selected swipe is a whole number, "
                                        "0 or more", selected))
                selected = 0
            m.selected = min(selected, max(0, len(m.swipes) - 1))
            messages.append(m)
        if problems or start is None:
            raise StateError(problems, "chat")
        chat = cls(rs, start)
        chat.messages = messages
        chat.revision = start.party_revision if revision is None else revision
        for i, entry in enumerate(_part(doc, "edits", list, [], "edits", problems)):
            who, text = (entry.get("who"), entry.get("changes")) if isinstance(entry, Mapping) else (None, None)
            if not isinstance(text, str) or not isinstance(who, str | None):
                problems.append(Problem(f"edits[{i}]", "wrong-type", "an edit is {who, changes}", None))
                continue
            try:
                changes = decode_changes(text)
            except UnicodeDecodeError:
                changes = [Change("set", "changes", text)]  # not a path: reported below as unknown-path
            edited = chat.edit_party(changes) if who is None else chat.edit(who, changes)
            problems += [replace(p, path=f"edits[{i}].{p.path}") for p in edited.problems]
        if problems:
            raise StateError(problems, "chat")
        return chat


def _part(doc: Mapping[str, Any], key: str, kind: type[Any], default: Any, path: str,
          problems: list[Problem]) -> Any:
    """`doc[key]` when it is a `kind` (absent or null: `default`); else a problem naming `path`."""
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        wants: dict[type[Any], str] = {Mapping: "an object", list: "a list", str: "text"}
        want = wants.get(kind, kind.__name__)
        problems.append(Problem(path, "wrong-type", f"must be {want}", type(value).__name__))
        return default
    return value


def _read_state(rs: Ruleset, raw: Any, path: str, problems: list[Problem]) -> GameState | None:
    """A state inside the chat; its problems are reported under `path`."""
    try:
        return from_json(rs, raw, "chat")
    except StateError as e:
        problems += [replace(p, path=path if p.path == "$" else f"{path}.{p.path}") for p in e.problems]
        return None


def snapshot_json(state: GameState) -> dict[str, Any]:
    """What one snapshot keeps: live values, clocks, the party sheet as it stood (PARTY-25), the dice (a reloaded
    chat rolls on where it stopped, decision CK-12), and the cards, which a player's edit receipt changes (ED-6)."""
    return {
        "gameCharacterCards": {n: thaw(c) for n, c in state.cards.items()},
        "rulesetLive": {k: doc for k, v in state.live.items() if (doc := live_json(v))},
        "rulesetClocks": clocks_json(state.clocks),
        "gamePartySheet": thaw(state.party_sheet),
        "gamePartySheetRevision": state.party_revision,
        "rulesetDice": dice_json(state.dice),
    }
