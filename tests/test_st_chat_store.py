"""Issue 16, "check against the real program": SillyTavern's server (tests/st_kit.py) stores a hand-written chat
posted to /api/chats/save exactly, gives it back from /api/chats/get, and refuses a save whose
`chat_metadata.integrity` differs from the stored file's. The chat follows the field list of issue 16 and
the header SillyTavern 1.19.0's page writes (public/script.js saveChat: `chat_metadata`, then
`user_name`/`character_name` set to "unused")."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from st_kit import (
    SillyTavern,
    chat_file,
    get_chat,
    get_group_chat,
    group_chat_file,
    save_chat,
    save_group_chat,
    sillytavern,
    st_jsonl,
)

pytestmark = pytest.mark.slow

CHARACTER = "Gravewatch GM"
INTEGRITY = "0b6f2a6e-3c1d-4f7e-9a55-2d8c1e7b4a90"
HIT = '[sheet: who="Mira" op="spend" pool="grit" amount="1" result="ok" now="2/3"]'
SWIPE0 = 'Mira steadies herself. [clock: name="Dawn" size="4" result="ok" now="0/4"]'
SWIPE1 = f'Mira digs deep — “not yet”. {HIT}'


def info(date: str, **extra: Any) -> dict[str, Any]:
    return {"send_date": date, "gen_started": "2026-11-30T17:00:01.000Z", "gen_finished": "2026-11-30T17:00:04.000Z",
            "extra": {"api": "custom", "model": "scripted", **extra}}


def chat() -> list[dict[str, Any]]:
    return [
        {"chat_metadata": {"integrity": INTEGRITY, "note_prompt": '[tagengine: campaign="vault"]', "note_interval": 1,
                           "note_position": 1, "note_depth": 4, "note_role": 0, "tainted": False,
                           "someExtension": {"keep": [1, None, "x"]}},
         "user_name": "unused", "character_name": "unused"},
        {"name": CHARACTER, "is_user": False, "is_system": False, "send_date": "November 30, 2026 5:00pm",
         "mes": "The bell tolls at the gate.", "extra": {}, "swipe_id": 0, "swipes": ["The bell tolls at the gate."],
         "swipe_info": [{"send_date": "November 30, 2026 5:00pm", "extra": {}}]},
        {"name": "Player", "is_user": True, "is_system": False, "send_date": "November 30, 2026 5:01pm",
         "mes": "Mira pushes on.", "extra": {"isSmallSys": False}, "force_avatar": "User Avatars/user-default.png"},
        {"name": CHARACTER, "is_user": False, "is_system": False, "send_date": "November 30, 2026 5:02pm",
         "mes": SWIPE1, "title": "", "gen_started": "2026-11-30T17:02:01.000Z",
         "gen_finished": "2026-11-30T17:02:04.000Z", "extra": {"api": "custom", "model": "scripted", "reasoning": "",
                                                              "otherExt": {"n": 3}},
         "swipe_id": 1, "swipes": [SWIPE0, SWIPE1],
         "swipe_info": [info("November 30, 2026 5:02pm"), info("November 30, 2026 5:03pm", otherExt={"n": 3})]},
        {"name": "Player", "is_user": True, "is_system": True, "send_date": "November 30, 2026 5:04pm",
         "mes": "(hidden with /hide) [clock: name=\"Dawn\" tick=\"1\"]", "extra": {"isSmallSys": False}},
        {"name": "SillyTavern System", "is_user": False, "is_system": True, "send_date": "November 30, 2026 5:05pm",
         "mes": "A system note.\u2028Line two\ttabbed, \"quoted\", back\\slash, \x01 control, ☃.",
         "extra": {"type": "narrator"}},
    ]


@pytest.fixture(scope="module")
def st(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SillyTavern]:
    with sillytavern(tmp_path_factory.mktemp("sillytavern")) as s:
        yield s


def test_a_chat_posted_is_stored_as_posted_and_given_back(st: SillyTavern) -> None:
    sent = chat()
    got = save_chat(st, CHARACTER, "round trip", sent)
    assert got.status_code == 200 and got.json() == {"ok": True}
    # stored verbatim: JSON.stringify of each object, one a line, keys in the order sent, no key added
    assert chat_file(st, CHARACTER, "round trip").read_text(encoding="utf-8") == st_jsonl(sent)
    back = get_chat(st, CHARACTER, "round trip")
    assert back == sent
    assert [list(m) for m in back] == [list(m) for m in sent]  # key order too
    assert back[3]["mes"] == back[3]["swipes"][back[3]["swipe_id"]]
    assert get_chat(st, CHARACTER, "no such chat") == []  # a missing chat: [], or {} with no folder for the character
    assert get_chat(st, "Nobody", "no such chat") == {}


def test_a_save_whose_integrity_changed_is_refused(st: SillyTavern) -> None:
    first = chat()
    assert save_chat(st, CHARACTER, "integrity", first).status_code == 200
    path = chat_file(st, CHARACTER, "integrity")
    # the same integrity with other messages (the app saving a new turn): accepted
    longer = [*first, {"name": "Player", "is_user": True, "is_system": False, "send_date": "later", "mes": "On.",
                       "extra": {}}]
    assert save_chat(st, CHARACTER, "integrity", longer).status_code == 200
    assert path.read_text(encoding="utf-8") == st_jsonl(longer)
    # another integrity (another copy of the chat, opened elsewhere): refused, the file untouched
    other = copy.deepcopy(longer)
    other[0]["chat_metadata"]["integrity"] = "11111111-2222-4333-8444-555555555555"
    got = save_chat(st, CHARACTER, "integrity", other)
    assert got.status_code == 400 and got.json() == {"error": "integrity"}
    assert path.read_text(encoding="utf-8") == st_jsonl(longer)
    # `force` (the user typed OVERWRITE): saved
    assert save_chat(st, CHARACTER, "integrity", other, force=True).status_code == 200
    assert get_chat(st, CHARACTER, "integrity") == other
    # a header without an integrity is never checked: an exporter dropping the key would overwrite silently
    bare = copy.deepcopy(first)
    del bare[0]["chat_metadata"]["integrity"]
    assert save_chat(st, CHARACTER, "integrity", bare).status_code == 200
    assert get_chat(st, CHARACTER, "integrity") == bare


def test_a_line_that_is_not_json_is_dropped_silently_by_get(st: SillyTavern) -> None:
    """What /api/chats/get does with a damaged file: the line is left out, with no error (so a chat file
    an exporter breaks loses messages without a word)."""
    sent = chat()
    assert save_chat(st, CHARACTER, "damaged", sent).status_code == 200
    path = chat_file(st, CHARACTER, "damaged")
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2][:-1]  # cut the closing brace of a message
    path.write_text("\n".join(lines), encoding="utf-8")
    back = get_chat(st, CHARACTER, "damaged")
    assert back == [m for i, m in enumerate(sent) if i != 2]
    assert json.loads(path.read_text(encoding="utf-8").split("\n")[0]) == sent[0]


def test_a_group_chat_without_a_header_is_stored_and_given_back_as_posted(st: SillyTavern) -> None:
    """Issue 16: group chats may have no header. Saving adds none (1.19.0 adds one only when it starts and
    finds the chat's metadata in the old place, the group's own file); with a header, group saves are
    checked for integrity like any chat."""
    messages = [dict(m, name="Mira") for m in chat()[1:4]]
    assert save_group_chat(st, "1764522000000", messages).status_code == 200
    assert group_chat_file(st, "1764522000000").read_text(encoding="utf-8") == st_jsonl(messages)
    assert get_group_chat(st, "1764522000000") == messages
    with_header = [chat()[0], *messages]
    assert save_group_chat(st, "1764522000001", with_header).status_code == 200
    other = copy.deepcopy(with_header)
    other[0]["chat_metadata"]["integrity"] = "another"
    got = save_group_chat(st, "1764522000001", other)
    assert got.status_code == 400 and got.json() == {"error": "integrity"}
    assert get_group_chat(st, "1764522000001") == with_header
