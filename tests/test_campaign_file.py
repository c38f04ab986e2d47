"""A campaign as one file (`tagengine campaign export` / `import`, `replay`/`st export --campaign`; decisions
CX-1..CX-3): the chat and that file give the game without the data folder. A campaign made with its own random
dice, played through `tagengine serve` with players' edits (their receipts' MACs keyed by those dice, ED-8), then
the data folder deleted: replayed elsewhere from the file, every `[edit:]` receipt verifies; from anything else,
none does. Then the round trip, and each kind of bad file named by its key, exit 1, nothing written."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from serve_kit import Fake, Running
from test_serve_edits import EDIT, SCRIPT, Player

from conftest import SAMPLES, load_sample
from tagengine._internal.chat import Chat
from tagengine._internal.cli import run
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.memory.campaigns import RULESETS_FOLDER, Campaigns, new_campaign
from tagengine._internal.server.memory.export import FORMAT
from tagengine._internal.server.memory.store import DB_NAME, Store
from tagengine._internal.state import from_json

RULESET = str(SAMPLES / "rulesets" / "gravewatch.json")
RS = load_sample("gravewatch")
VERDICT = re.compile(r'\[edit: [^\]]*result="(\w+)"(?: reason="([\w-]+)")?')


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def played(tmp_path: Path) -> list[dict[str, str]]:
    """A campaign made as `campaign new` makes one (its own random dice), three turns through the server with an
    edit before each of the last two: the chat app's messages (the system prompt first)."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "vault", RULESET, ["Mira", "Bram"])  # no seed: a random one, which only the folder holds
    store.close()
    with Running(Fake(script=SCRIPT).app()) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=data))) as srv:
        p = Player(srv.url)
        p.turn("one")
        assert p.edit("Mira", EDIT).status_code == 200
        p.turn("two")
        assert p.edit("Bram", {"fields.oath": "Hold the gate", "pools.resolve": "2"}).status_code == 200
        p.turn("three")
    return p.messages


def st_chat(path: Path, messages: list[dict[str, str]]) -> Path:
    """The chat as SillyTavern keeps it: a header, then one line a message (the system prompt is the card's)."""
    head = {"user_name": "Player", "character_name": "GM", "create_date": "2026-12-01@10h00m00s", "chat_metadata": {}}
    rows = [{"name": "GM" if m["role"] == "assistant" else "Player", "is_user": m["role"] == "user",
             "is_system": False, "send_date": "December 1, 2026 10:00am", "mes": m["content"]}
            for m in messages if m["role"] != "system"]
    path.write_text("\n".join(json.dumps(x) for x in (head, *rows)) + "\n")
    return path


def verdicts(text: str) -> list[tuple[str, str | None]]:
    """(result, reason) of every edit receipt in a replay's output."""
    return [(m.group(1), m.group(2)) for m in VERDICT.finditer(text.replace('\\"', '"'))]


def test_the_chat_and_the_campaign_file_give_the_game_without_the_data_folder(tmp_path):
    """ED-8, ED-6: every edit receipt of a chat verifies in a replay elsewhere from the exported file (the replay's
    own and a server's over a data folder the file was imported into), where the same replay from the same
    characters with other dice refuses each `unverified-edit` (what a lost data folder gave)."""
    messages = played(tmp_path)
    replies = "".join(m["content"] for m in messages if m["role"] == "assistant")
    assert [v for v, _ in verdicts(replies)] == ["ok", "ok"]  # the server's own receipts, written into the replies
    exported = tmp_path / "vault.campaign.json"
    code, _, err = cli("campaign", "export", "vault", "--data", str(tmp_path / "data"), "-o", str(exported))
    assert code == 0 and "seed" in err, err
    shutil.rmtree(tmp_path / "data")  # the folder is gone: only the chat and the file are left
    chat = st_chat(tmp_path / "vault.jsonl", messages)

    code, out, err = cli("replay", RULESET, str(chat), "--format", "st", "--campaign", str(exported))
    assert code == 0, err
    assert verdicts(out) == [("ok", None), ("ok", None)] and "unverified-edit" not in out
    state = json.loads(out)["state"]
    assert state["gameCharacterCards"]["Mira"]["fields"]["oath"] == EDIT["fields.oath"]
    assert state["gameCharacterCards"]["Bram"]["fields"]["oath"] == "Hold the gate"

    code, out, _ = cli("replay", RULESET, str(chat), "--format", "st", "--character", "Mira", "--character", "Bram")
    assert code == 0 and verdicts(out) == [("refused", "unverified-edit")] * 2  # without it: what the issue found

    code, _, err = cli("st", "export", RULESET, str(chat), "--campaign", str(exported), "-o", str(tmp_path / "x.jsonl"))
    assert code == 0, err
    written = (tmp_path / "x.jsonl").read_text()
    assert verdicts(written) == [("ok", None), ("ok", None)]

    transcript = tmp_path / "transcript.jsonl"
    code, _, err = cli("st", "import", str(chat), "--campaign", str(exported), "-o", str(transcript))
    assert code == 0 and json.loads(transcript.read_text())["start"] == json.loads(exported.read_text())["start"]
    code, out, err = cli("replay", RULESET, str(transcript))  # our JSONL: the line carries the campaign's start
    assert code == 0 and verdicts(out) == [("ok", None), ("ok", None)] and json.loads(out)["state"] == state

    code, _, err = cli("campaign", "import", str(exported), "--data", str(tmp_path / "elsewhere"))
    assert code == 0, err
    ctx = ServerContext(Options(upstream="demo", data=tmp_path / "elsewhere"))  # a server over the new folder
    try:
        c = ctx.campaign("vault")
        served = asyncio.run(ctx.replayed(c, [m for m in messages if m["role"] != "system"]))
    finally:
        asyncio.run(ctx.close())
    assert served.state.to_json() == state  # the server's chain replays the chat to the same game
    alone = Chat.from_history(RS, from_json(RS, json.loads(exported.read_text())["start"]),
                              [m for m in messages if m["role"] != "system"])
    assert alone.state.to_json() == state  # and so does the library, from the file's start


def test_a_campaign_round_trips_through_its_file(tmp_path):
    """Export, import (elsewhere, and beside itself under another name), export again: the same file but its
    name; the imported campaign's ruleset is kept in the data folder, and its start and digest are the ones the
    chain's first key is made of."""
    store = Store(tmp_path / "one")
    made = new_campaign(store, "vault", RULESET, ["Mira", "Bram"])
    before = Campaigns(store).get("vault")
    store.close()
    code, text, err = cli("campaign", "export", "vault", "--data", str(tmp_path / "one"))
    assert code == 0, err
    doc = json.loads(text)
    assert doc["format"] == FORMAT and doc["name"] == "vault" and doc["ruleset"]["sha256"] == made.digest
    assert doc["ruleset"]["text"].encode() == Path(RULESET).read_bytes() and doc["ruleset"]["file"] == "gravewatch.json"
    (tmp_path / "vault.json").write_text(text)
    for folder, name in (("two", None), ("one", "vault-copy")):
        args = ["campaign", "import", str(tmp_path / "vault.json"), "--data", str(tmp_path / folder)]
        code, out, err = cli(*args, *(["--as", name] if name else []))
        assert code == 0 and out.startswith(f"campaign {name or 'vault'}: "), err
        store = Store(tmp_path / folder)
        try:
            after = Campaigns(store).get(name or "vault")
            kept = Path(store.campaign_row(name or "vault").ruleset)
        finally:
            store.close()
        assert kept == (tmp_path / folder / RULESETS_FOLDER / f"{made.digest}.json").resolve()
        assert (after.digest, after.start_json) == (before.digest, before.start_json)
        code, again, _ = cli("campaign", "export", name or "vault", "--data", str(tmp_path / folder))
        assert code == 0 and {**json.loads(again), "name": "vault"} == {**doc, "ruleset": {**doc["ruleset"],
                                                                                           "file": kept.name}}


def test_a_campaign_file_can_come_on_standard_input(tmp_path, good, monkeypatch):
    """`campaign import -` (`campaign export NAME | ssh there tagengine campaign import -`); a bad one is named as
    `<stdin>` with its key."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(good).encode())))
    code, out, err = cli("campaign", "import", "-", "--data", str(tmp_path / "data"))
    assert code == 0 and out.startswith("campaign vault: "), err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(bad(good, start=None)).encode())))
    code, _, err = cli("campaign", "import", "-", "--data", str(tmp_path / "data"), "--as", "other")
    assert code == 1 and "<stdin>: start: missing-key: " in err, err


def bad(doc: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    for key, value in changes.items():
        where, _, last = key.rpartition("__")
        target = out[where] if where else out
        if value is None:
            del target[last]
        else:
            target[last] = value
    return out


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("good")
    store = Store(folder)
    new_campaign(store, "vault", RULESET, ["Mira", "Bram"])
    store.close()
    code, text, _ = cli("campaign", "export", "vault", "--data", str(folder))
    assert code == 0
    return dict(json.loads(text))


@pytest.mark.parametrize(("change", "said"), [
    ({"format": "tagengine.state/1"}, "format: wrong-format"),
    ({"ruleset__sha256": "0" * 64}, "ruleset.sha256: digest-mismatch"),
    ({"ruleset__text": None}, "ruleset.text: missing-key"),
    ({"ruleset": "gravewatch.json"}, "ruleset: wrong-type"),
    ({"start": None}, "start: missing-key"),
    ({"name": "../etc"}, "name: bad-name"),
])
def test_a_bad_campaign_file_is_named_by_its_key_and_nothing_is_kept(tmp_path, good, change, said):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad(good, **change)))
    code, out, err = cli("campaign", "import", str(path), "--data", str(tmp_path / "data"))
    assert code == 1 and out == "" and f"{path}: {said}: " in err, err
    assert_nothing_kept(tmp_path / "data")
    code, _, err = cli("replay", RULESET, str(tmp_path / "chat.jsonl"), "--format", "st", "--campaign", str(path))
    assert code == 1 and f"{path}: {said}: " in err, err


def assert_nothing_kept(folder: Path) -> None:
    if (folder / DB_NAME).exists():
        store = Store(folder)
        try:
            assert store.campaigns() == []
        finally:
            store.close()
    assert not (folder / RULESETS_FOLDER).exists() or not any((folder / RULESETS_FOLDER).iterdir())


def test_a_campaign_file_that_does_not_load_names_the_part_at_fault(tmp_path, good):
    """Not JSON; a ruleset text that is no ruleset (its digest right); a start that is not a state of the
    ruleset; a name taken: each exit 1 with the file and the key, and nothing kept."""
    cases = []
    path = tmp_path / "not.json"
    path.write_text("{")
    cases.append((path, f"{path}: $: not-json"))
    text = '{"manifest": 1}'
    path = tmp_path / "ruleset.json"
    path.write_text(json.dumps(bad(good, ruleset__text=text, ruleset__sha256=hashlib.sha256(text.encode()).hexdigest(
    ))))
    cases.append((path, f"{path}: ruleset.text: "))
    path = tmp_path / "start.json"
    path.write_text(json.dumps(bad(good, start__format="tagengine.state/9")))
    cases.append((path, f"{path}: start: "))
    for path, said in cases:
        code, _, err = cli("campaign", "import", str(path), "--data", str(tmp_path / "data"))
        assert code == 1 and said in err, err
        assert_nothing_kept(tmp_path / "data")
    path = tmp_path / "good.json"
    path.write_text(json.dumps(good))
    assert cli("campaign", "import", str(path), "--data", str(tmp_path / "data"))[0] == 0
    code, _, err = cli("campaign", "import", str(path), "--data", str(tmp_path / "data"))
    assert code == 1 and "'vault' exists already" in err and "--as NAME" in err
    code, _, err = cli("campaign", "export", "nobody", "--data", str(tmp_path / "data"))
    assert code == 1 and "unknown campaign 'nobody'" in err


def test_the_campaign_option_is_for_sillytavern_chats_and_warns_of_another_ruleset(tmp_path, good):
    """A JSONL chat names its own start: `replay --campaign` with one is a usage error (exit 2). With a RULESET
    that is not the campaign's (edited since), the replay says so on stderr and goes on (ED-8: the receipts
    still verify; ED-9: one the new file no longer allows is refused invalid-edit)."""
    path = tmp_path / "vault.json"
    path.write_text(json.dumps(good))
    crew = str(SAMPLES / "transcripts" / "crew-night.jsonl")
    code, _, err = cli("replay", str(SAMPLES / "rulesets" / "blades-like.json"), crew, "--campaign", str(path))
    assert code == 2 and "--campaign" in err and "--format st" in err
    edited = tmp_path / "gravewatch-fixed.json"
    edited.write_text(Path(RULESET).read_text() + "\n")
    chat = st_chat(tmp_path / "chat.jsonl", [{"role": "user", "content": "hi"},
                                            {"role": "assistant", "content": "Quiet."}])
    code, out, err = cli("replay", str(edited), str(chat), "--format", "st", "--campaign", str(path))
    assert code == 0 and "is not the ruleset the campaign vault was exported with" in err, err
    assert json.loads(out)["state"]["rulesetDice"] == from_json(RS, good["start"]).to_json()["rulesetDice"]


def test_an_imported_campaign_is_given_its_owner(tmp_path, good, monkeypatch):
    """OW-6, docs/security.md: a campaign is given to another user of a chat app by exporting it and importing it
    under a new name with `--owner`, as `campaign new --owner` makes one theirs; without it the import is nobody's
    (the first user who plays it claims it)."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(good).encode())))
    code, _, err = cli("campaign", "import", "-", "--data", str(tmp_path / "data"), "--as", "bobs", "--owner", "bob")
    assert code == 0, err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(good).encode())))
    code, _, err = cli("campaign", "import", "-", "--data", str(tmp_path / "data"), "--as", "free")
    assert code == 0, err
    store = Store(tmp_path / "data")
    try:
        assert store.owners() == {"bobs": "bob"}
    finally:
        store.close()
