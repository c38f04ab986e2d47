"""A property of the server's edits (docs/editor.md, decisions ED-6, ED-25..ED-28): for any interleaving of edits,
turns, edits made while a reply is written and regenerates, from two chats that start from the same greeting, every
edit the server acknowledged is made by the next reply of its own chat (and is in the state that chat's messages
alone replay to), exactly once along the chat as it stands, and never in the other chat.

The server's own steps are driven without HTTP (as a chat route calls them: `begin`, `open_with_edits`, the reply
applied as `answer_whole` applies it, `record_reply`), so Hypothesis can try many orders quickly; the HTTP paths of
the same steps are in tests/test_serve_edit_lifecycle.py."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_serve_edits import MARK, SEED, replayed

from conftest import SAMPLES, examples
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.edits.points import history_point, save_edit
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.server.options import Options
from tagengine._internal.server.turn.request import read_marked
from tagengine._internal.server.turn.steps import begin, open_with_edits, record_reply, whole_reply
from tagengine._internal.sheet.edit_paths import change_of

GREETING = "The crypt waits. Who goes first?"
REPLY = "The night passes."
WHO = ("Mira", "Bram")


@dataclass
class ChatSide:
    """One chat app's chat: its id, its messages, and what the test expects of them."""

    id: str
    messages: list[dict[str, str]] = field(default_factory=lambda: [
        {"role": "system", "content": f"You are the GM. {MARK}"}, {"role": "assistant", "content": GREETING}])
    pending: list[tuple[str, str]] = field(default_factory=list)  # acknowledged, not yet in a reply: (who, oath)
    replies: list[list[tuple[str, str]]] = field(default_factory=list)  # the edits each reply made, reply by reply

    def expected_oaths(self) -> dict[str, str]:
        oaths: dict[str, str] = {}
        for made in self.replies:
            oaths.update(dict(made))
        return oaths


OPS = st.lists(st.tuples(st.sampled_from(["edit", "turn", "edit-during-turn", "regenerate"]),
                         st.sampled_from([0, 1]), st.sampled_from(WHO)), max_size=10)


class Game:
    def __init__(self, data: Path) -> None:
        store = Store(data)
        new_campaign(store, "vault", str(SAMPLES / "rulesets" / "gravewatch.json"), list(WHO), seed=SEED)
        store.close()
        self.ctx = ServerContext(Options(upstream="demo", data=data))
        self.c = self.ctx.campaign("vault")
        self.oaths = (f"oath {n}" for n in itertools.count())  # every edit's value its own

    def edit(self, chat: ChatSide, who: str) -> None:
        point = asyncio.run(history_point(self.ctx, self.c, chat.messages, chat.id))
        oath = next(self.oaths)
        edited = save_edit(self.ctx, self.c, point, who, [change_of("fields.oath", oath)])
        assert edited.ok, edited.problems
        chat.pending.append((who, oath))  # acknowledged: it must reach this chat's next reply

    def reply(self, chat: ChatSide, during: tuple[ChatSide, str] | None = None) -> None:
        """A turn: the reply opens with the edits waiting, and an edit may be made while it is written (`during`),
        which the reply does not hold (it opened before) and the next one must."""
        asked = [*chat.messages, {"role": "user", "content": "TURN"}]
        turn = asyncio.run(begin(self.ctx, self.ctx.campaign("vault"), read_marked(asked), chat.id))
        open_with_edits(self.ctx, turn)
        made, chat.pending = chat.pending, []
        if during is not None:
            self.edit(*during)
        text = REPLY if turn.opening is None else turn.opening.text + REPLY
        _, applied, filt, raw = whole_reply(turn, text)
        record_reply(self.ctx, turn, applied, filt, raw)
        chat.messages = [*asked, {"role": "assistant", "content": applied.text}]
        chat.replies.append(made)

    def regenerate(self, chat: ChatSide) -> None:
        """The chat's last reply made again: it is dropped, with the edits it made waiting again before what was
        acknowledged since."""
        if len(chat.messages) < 4:
            return
        chat.messages = chat.messages[:-2]
        chat.pending = chat.replies.pop() + chat.pending
        self.reply(chat)

    def check(self, chat: ChatSide, other: ChatSide) -> None:
        state = replayed(chat.messages)
        for who in WHO:
            assert state.cards[who]["fields"].get("oath", "") == chat.expected_oaths().get(who, ""), who
        receipts = sum(m["content"].count("[edit:") for m in chat.messages if m["role"] == "assistant")
        assert receipts == sum(len(made) for made in chat.replies)  # each edit made once, along the chat
        theirs = {o for made in other.replies for _, o in made} | {o for _, o in other.pending}
        assert not theirs & {o for made in chat.replies for _, o in made}


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_every_acknowledged_edit_reaches_the_next_reply_of_its_chat_once_and_no_other(tmp_path_factory, ops):
    game = Game(tmp_path_factory.mktemp("edits") / "data")
    chats = (ChatSide("A"), ChatSide("B"))
    try:
        for op, n, who in ops:
            chat = chats[n]
            if op == "edit":
                game.edit(chat, who)
            elif op == "turn":
                game.reply(chat)
            elif op == "edit-during-turn":
                game.reply(chat, during=(chat, who))
            else:
                game.regenerate(chat)
            for mine, theirs in ((chats[0], chats[1]), (chats[1], chats[0])):
                game.check(mine, theirs)
        for chat in chats:  # the last turn of each chat: whatever was acknowledged is made now
            game.reply(chat)
            assert not chat.pending
        for mine, theirs in ((chats[0], chats[1]), (chats[1], chats[0])):
            game.check(mine, theirs)
    finally:
        asyncio.run(game.ctx.close())


def test_the_property_fails_when_an_edit_made_during_a_reply_is_not_carried(tmp_path, monkeypatch):
    """The property above can fail: without the carry (ED-26) an edit made while a reply is written is lost."""
    from tagengine._internal.server.edits.pending import PendingEdits

    monkeypatch.setattr(PendingEdits, "carry", lambda *a, **k: 0)
    game = Game(tmp_path / "data")
    chat, other = ChatSide("A"), ChatSide("B")
    try:
        game.reply(chat, during=(chat, "Mira"))
        game.reply(chat)
        try:
            game.check(chat, other)
        except AssertionError:
            return
        raise AssertionError("the check did not see the lost edit")
    finally:
        asyncio.run(game.ctx.close())
