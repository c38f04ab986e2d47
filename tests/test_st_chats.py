"""SillyTavern chat files (issue 16, item 1): `st import`, `replay` reading them, `st export` writing them back.

The round trip's promise: an exported chat differs from the original only in the tags' receipts and the
`tagengine` keys; every other line keeps its bytes, every key its place, `chat_metadata.integrity` its value.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLES
from tagengine._internal.cli import run
from tagengine._internal.commands import apply_reply
from tagengine._internal.errors import Problem
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sillytavern.chatfile import ChatFileError, js_dumps, parse_chat, read_chat
from tagengine._internal.sillytavern.chatreplay import Start, export_chat, transcript
from tagengine._internal.state import GameState, from_json

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "st"
CHATS = sorted(FIXTURES.glob("*.jsonl"))
RULES = str(SAMPLES / "rulesets" / "blades-like.json")
CREW = ["--character", "Cutter", "--character", "Lurk"]
NODE = shutil.which("node")
RECEIPT = re.compile(r'\s(?:result|now|reason)="[^"]*"')


@pytest.fixture(scope="module")
def rs() -> Ruleset:
    return Ruleset.load(RULES)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def no_receipts(value: Any) -> Any:
    """The value with every tag's `result`/`now`/`reason` taken out of its text."""
    if isinstance(value, str):
        return RECEIPT.sub("", value)
    if isinstance(value, list):
        return [no_receipts(v) for v in value]
    if isinstance(value, dict):
        return {k: no_receipts(v) for k, v in value.items()}
    return value


def without_tagengine(new: Any, old: Any) -> Any:
    """`new` without its `tagengine` keys, and without an object that only held them where `old` had none."""
    if isinstance(new, dict):
        out = {}
        for k, v in new.items():
            if k == "tagengine":
                continue
            was = old.get(k) if isinstance(old, dict) else None
            v = without_tagengine(v, was)
            if v == {} and (not isinstance(old, dict) or k not in old):
                continue
            out[k] = v
        return out
    if isinstance(new, list):
        olds = old if isinstance(old, list) else []
        return [without_tagengine(v, olds[i] if i < len(olds) else None) for i, v in enumerate(new)]
    return new


def structural_diff(original: Path, exported: Path) -> list[str]:
    """What differs beyond receipts and `tagengine` keys, key order included; [] when nothing does."""
    a, b = lines(original), lines(exported)
    if len(a) != len(b):
        return [f"{len(a)} lines became {len(b)}"]
    out = []
    for n, (x, y) in enumerate(zip(a, b, strict=True), 1):
        if x == y:
            continue
        old, new = json.loads(x), json.loads(y)
        stripped = without_tagengine(new, old)
        if json.dumps(no_receipts(stripped)) != json.dumps(no_receipts(old)):  # order-sensitive
            out.append(f"line {n}: {no_receipts(old)} -> {no_receipts(stripped)}")
    return out


def export_all(tmp_path: Path, *extra: str) -> Path:
    folder = tmp_path / "out"
    code, _, err = cli("st", "export", RULES, *map(str, CHATS), "--out-dir", str(folder), *CREW, *extra)
    assert code == 0, err
    return folder


def test_round_trip_differs_only_in_receipts_and_tagengine_keys(tmp_path):
    """Done-when of issue 16: import, replay, export; a structural diff of each file against the original."""
    imported = tmp_path / "imported.jsonl"
    assert cli("st", "import", *map(str, CHATS), *CREW, "-o", str(imported))[0] == 0
    replayed = tmp_path / "replayed.jsonl"
    code, _, err = cli("replay", RULES, str(imported), "-o", str(replayed))
    assert code == 0, err
    folder = export_all(tmp_path)
    docs = [json.loads(x) for x in replayed.read_text().splitlines()]
    assert [d["id"] for d in docs] == [str(p) for p in CHATS]
    changed_receipts = 0
    for chat, doc in zip(CHATS, docs, strict=True):
        out = folder / chat.name
        assert structural_diff(chat, out) == [], chat.name
        before = [e.doc["mes"] for e in read_chat(str(chat)).messages]
        changed_receipts += sum(x != y for x, y in zip(before, [e.doc["mes"] for e in read_chat(str(out)).messages],
                                                        strict=True))
        assert not out.read_bytes().endswith(b"\n")  # as SillyTavern writes it: no line break after the last line
        # the export's texts and final state are the replay's
        entries = read_chat(str(out))
        texts = [e.doc["mes"] for e in entries.messages if not e.is_note]
        assert texts == [m["content"] for m in doc["messages"]]
        if entries.header is not None:
            meta = entries.header.doc["chat_metadata"]
            assert meta["tagengine"]["state"] == doc["state"]
            assert meta["tagengine"]["characters"] == ["Cutter", "Lurk"]
            assert meta["integrity"] == json.loads(lines(chat)[0])["chat_metadata"]["integrity"]
        last = [e for e in entries.messages if not e.is_user and not e.is_note][-1]
        assert last.doc["extra"]["tagengine"] == doc["state"]
    assert changed_receipts >= 4  # the receipts did change: the test can fail


def test_replay_reads_chat_files_directly_and_equals_replaying_the_import(tmp_path):
    imported = tmp_path / "imported.jsonl"
    assert cli("st", "import", *map(str, CHATS), *CREW, "-o", str(imported))[0] == 0
    via_import = cli("replay", RULES, str(imported))
    direct = cli("replay", RULES, *map(str, CHATS), *CREW)  # told from the first line
    forced = cli("replay", RULES, *map(str, CHATS), *CREW, "--format", "st")
    assert via_import[0] == direct[0] == forced[0] == 0
    assert via_import[1] == direct[1] == forced[1] and direct[1].count("\n") == len(CHATS)
    assert "4 chats replayed" in direct[2]


def test_two_workers_equal_one(tmp_path):
    one = tmp_path / "one.jsonl"
    two = tmp_path / "two.jsonl"
    assert cli("replay", RULES, *map(str, CHATS), *CREW, "-o", str(one))[0] == 0
    assert cli("replay", RULES, *map(str, CHATS), *CREW, "-o", str(two), "--workers", "2")[0] == 0
    assert one.read_bytes() == two.read_bytes()


@pytest.mark.slow
def test_a_chat_from_standard_input_among_files_on_two_workers(tmp_path):
    """A worker's standard input is not the command's: with `--workers 2` a chat read from `-` was replayed from
    an empty or half-read stream (a bad chat, exit 1). It is replayed in the parent, in its place, whether the
    workers write in turn (`-o`) or their lines travel through the parent (stdout a pipe)."""
    hidden, others = FIXTURES / "hidden.jsonl", [str(c) for c in CHATS if c.name != "hidden.jsonl"]
    argv = [sys.executable, "-m", "tagengine", "replay", RULES, others[0], "-", *others[1:], "--format", "st", *CREW]
    outputs = []
    for workers, target in (("1", "one.jsonl"), ("2", "two.jsonl")):
        with open(hidden, "rb") as f:
            p = subprocess.run([*argv, "--workers", workers, "-o", str(tmp_path / target)], stdin=f,
                               capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outputs.append((tmp_path / target).read_bytes())
    with open(hidden, "rb") as f:
        piped = subprocess.run([*argv, "--workers", "2"], stdin=f, capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert outputs[0] == outputs[1] == piped.stdout and outputs[0].count(b"\n") == len(CHATS)


def test_two_workers_write_in_turn_into_memory_or_a_descriptor(tmp_path, rs):
    """`replay_files` with two workers: into a file's descriptor the processes write in turn (PF-13), into text
    in memory the lines travel through the parent; both are one worker's bytes."""
    from tagengine._internal.sillytavern.chatbatch import given_start
    from tagengine._internal.sillytavern.chatreplay import replay_files

    given = given_start(["Cutter", "Lurk"], None, rs)
    paths = [str(c) for c in CHATS] * 3
    one = io.StringIO()
    replay_files(RULES, paths, one, workers=1, given=given)
    memory = io.StringIO()
    replay_files(RULES, paths, memory, workers=2, given=given)
    with open(tmp_path / "out.jsonl", "wb") as f:
        summary = replay_files(RULES, paths, f, workers=2, given=given)
    assert one.getvalue() == memory.getvalue() == (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    assert summary.chats == len(paths) and not summary.errors


def test_swipes_invariants_and_each_swipe_from_the_state_before_its_reply(tmp_path, rs):
    """CLOCK-26, CLOCK-27, PARTY-25: every swipe starts from the snapshot before the reply; the state after
    each is kept in its swipe_info entry, the selected one's also in the message's extra (SillyTavern copies
    one to the other when it swipes)."""
    folder = export_all(tmp_path)
    for chat in CHATS:
        exported = read_chat(str(folder / chat.name))
        original = read_chat(str(chat))
        state = GameState.new(rs, ["Cutter", "Lurk"])
        for new, old in zip(exported.messages, original.messages, strict=True):
            doc = new.doc
            if "swipes" in doc and "swipe_id" in doc:
                assert doc["mes"] == doc["swipes"][doc["swipe_id"]]
            if "swipe_info" in old.doc:
                assert len(doc["swipes"]) == len(doc["swipe_info"]) == len(old.doc["swipe_info"])
            else:
                assert "swipe_info" not in doc  # none is made up (extensions.jsonl has swipes without it)
            if new.is_user or new.is_note:
                assert new.doc == old.doc
                continue
            for j, text in enumerate(old.doc.get("swipes", [])):
                alt = apply_reply(rs, state, text)
                assert doc["swipes"][j] == alt.text
                if "swipe_info" in doc:
                    assert doc["swipe_info"][j]["extra"]["tagengine"] == alt.state.to_json()
            state = apply_reply(rs, state, old.doc["mes"]).state
            assert doc["extra"]["tagengine"] == state.to_json()
            if "swipe_info" in doc:
                assert doc["swipe_info"][doc["swipe_id"]]["extra"]["tagengine"] == doc["extra"]["tagengine"]
    last = read_chat(str(folder / "swipes.jsonl")).messages[-1].doc
    states = [info["extra"]["tagengine"] for info in last["swipe_info"]]
    assert len({json.dumps(s, sort_keys=True) for s in states}) == 3  # three swipes, three different states
    assert 'result="ok" now="2/8"' in last["swipes"][2]  # a swipe not selected gets its receipts too


def test_hidden_messages_are_replayed_and_system_notes_skipped(tmp_path, rs):
    chat = read_chat(str(FIXTURES / "hidden.jsonl"))
    t = transcript(chat, Start(characters=("Cutter", "Lurk")))
    assert [m["role"] for m in t["messages"]] == ["assistant", "user", "assistant", "user", "assistant"]
    assert not any("Note:" in m["content"] for m in t["messages"])  # the comment (extra.type) is no message
    folder = export_all(tmp_path)
    out = read_chat(str(folder / "hidden.jsonl"))
    hidden, note, last = out.messages[2].doc, out.messages[3].doc, out.messages[5].doc
    assert hidden["is_system"] is True and 'size="6" result="ok" now="0/6"' in hidden["mes"]
    assert 'pool="stress" amount="2" result="ok" now="2/9"' in hidden["mes"]
    assert 'tick="2" result="ok" now="2/6"' in last["mes"]  # the hidden reply's clock counted
    assert lines(folder / "hidden.jsonl")[4] == lines(FIXTURES / "hidden.jsonl")[4]  # the note: byte for byte
    assert note["mes"].endswith('tick="5"]') and "tagengine" not in note["extra"]
    assert out.metadata is not None
    final = from_json(rs, out.metadata["tagengine"]["state"])
    assert [(c.name, c.filled) for c in final.clocks] == [("Alarm raised", 2)]  # tick 5 of the note not applied


def test_group_chat_without_header(tmp_path):
    path = str(FIXTURES / "group.jsonl")
    chat = read_chat(path)
    assert chat.header is None and len(chat.messages) == 5
    code, _, err = cli("replay", RULES, path)
    assert code == 1 and f"{path}: $: no-start" in err  # no header to remember a start in: it must be given
    folder = export_all(tmp_path)
    out = lines(folder / "group.jsonl")
    assert len(out) == 5 and b"chat_metadata" not in out[0]  # no header is added
    assert out[1] == lines(FIXTURES / "group.jsonl")[1]
    assert json.loads(out[0])["extra"]["gen_id"] == 864123456789012400  # a number beyond 2**53 kept as JS does
    assert b'"gen_id":864123456789012400' in out[0] and b'"gen_id":1.5e-7' in out[4]


def test_unknown_keys_are_kept_exactly(tmp_path):
    folder = export_all(tmp_path)
    before, after = lines(FIXTURES / "extensions.jsonl"), lines(folder / "extensions.jsonl")
    assert after[1] == before[1]  # a user message: byte for byte
    header = json.loads(after[0])
    assert list(header) == ["user_name", "character_name", "create_date", "chat_metadata"]
    assert list(header["chat_metadata"]) == [*json.loads(before[0])["chat_metadata"], "tagengine"]
    assert header["chat_metadata"]["my_extension"]["ctrl"] == "tab\there\u0001\u2028\u007f"
    reply = json.loads(after[2])
    assert reply["my_tracker"] == {"time": "morning", "weather": "rain", "present": ["Host", "Cutter"]}
    assert list(reply["extra"]) == ["api", "model", "token_count", "my_extension", "reasoning_duration", "tagengine"]
    # a changed line is written as JSON.stringify writes it: its bytes, tagengine key aside, are the original's
    for x, y in zip(before, after, strict=True):
        old, new = json.loads(x), json.loads(y)
        assert js_dumps(no_receipts(without_tagengine(new, old))).encode() == js_dumps(no_receipts(old)).encode()


@pytest.mark.skipif(NODE is None, reason="needs node to run JSON.stringify")
def test_changed_lines_are_what_json_stringify_writes(tmp_path):
    folder = export_all(tmp_path)
    for chat in CHATS:
        text = (folder / chat.name).read_text(encoding="utf-8")
        script = ("const s=require('fs').readFileSync(0,'utf8');"
                  "process.stdout.write(s.split('\\n').map(l=>JSON.stringify(JSON.parse(l))).join('\\n'))")
        node = subprocess.run([NODE, "-e", script], input=text, capture_output=True, text=True, check=True,
                              timeout=60)
        assert node.stdout == text, chat.name


@pytest.mark.skipif(NODE is None, reason="needs node to run JSON.stringify")
def test_js_dumps_equals_json_stringify():
    import random

    rng = random.Random(16)
    values: list[Any] = [0.1, 1e21, 1e-7, 1.5e-7, 123456789012345680000.0, 2**53 + 1, 2**60, -0.0, 5e-324,
                         1.7976931348623157e308, 100.0, 1e-6, 1e16, "a\u2028\x7f\x00\x1f\"\\/é😀\ud800",
                         {"0": "x", "b": [1, True, None, {}], "a": []}]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(400)]
    values += [rng.randint(-2**70, 2**70) for _ in range(100)]
    source = json.dumps([json.dumps(v) for v in values])
    script = ("const a=JSON.parse(require('fs').readFileSync(0,'utf8'));"
              "process.stdout.write(JSON.stringify(a.map(x=>JSON.stringify(JSON.parse(x)))))")
    node = subprocess.run([NODE, "-e", script], input=source, capture_output=True, text=True, check=True, timeout=60)
    assert [js_dumps(v) for v in values] == json.loads(node.stdout)
    # one difference, on purpose: keys keep the file's order, where JavaScript puts "0", "1"... first (STF-4);
    # a file SillyTavern wrote has them first already
    assert js_dumps({"b": 1, "0": 2}) == '{"b":1,"0":2}'


def test_export_again_changes_nothing_and_needs_no_start(tmp_path):
    """DEC-5 (idempotence) for chat files: exporting an export changes no byte; and it needs no --character,
    the start being in chat_metadata.tagengine (STF-3, STF-6)."""
    folder = export_all(tmp_path)
    for name in ("swipes.jsonl", "hidden.jsonl", "extensions.jsonl"):
        first = folder / name
        again = tmp_path / f"again-{name}"
        code, _, err = cli("st", "export", RULES, str(first), "-o", str(again))
        assert code == 0, err
        assert again.read_bytes() == first.read_bytes()


def test_malformed_files_are_named_by_line_and_key_and_the_rest_go_on(tmp_path):
    good = FIXTURES / "hidden.jsonl"
    bad = tmp_path / "bad.jsonl"
    src = lines(FIXTURES / "swipes.jsonl")
    last = json.loads(src[5])
    last["swipe_id"] = 7
    mes_missing = json.loads(src[2])
    del mes_missing["mes"]
    bad.write_bytes(b"\n".join([src[0], src[1], b"{not json", js_dumps(mes_missing).encode(), src[4],
                                js_dumps(last).encode(), b'{"mes": 5, "is_user": "yes", "swipes": "x"}']))
    paths = [str(good), str(bad), str(good)]
    code, out, err = cli("replay", RULES, *paths, *CREW)
    assert code == 1
    docs = [json.loads(x) for x in out.splitlines()]
    assert ["error" in d for d in docs] == [False, True, False]
    for needle in (f"{bad}:3: $: not-json", f"{bad}:4: mes: missing-key", f"{bad}:6: swipe_id: out-of-range",
                   f"{bad}:7: mes: wrong-type", f"{bad}:7: is_user: wrong-type"):
        assert needle in err
    # the offending values are quoted
    assert f'{bad}:7: mes: wrong-type: text, not a number, 5' in err
    assert f'{bad}:7: is_user: wrong-type: true or false, not text, "yes"' in err
    assert "1 bad line(s)" in err
    with pytest.raises(ChatFileError) as e:
        read_chat(str(bad))
    assert [(p.line, p.path) for p in e.value.problems] == [(3, "$"), (4, "mes"), (6, "swipe_id"), (7, "mes"),
                                                          (7, "is_user"), (7, "swipes")]
    # each is the package's Problem (code + path + message) with its line: one idea, one type
    assert all(isinstance(p, Problem) for p in e.value.problems)
    assert e.value.problems[1].to_json() == {"path": "mes", "code": "missing-key", "line": 4, "value": None,
                                             "message": "a message has its text in `mes`"}
    folder = tmp_path / "out"
    code, _, err = cli("st", "export", RULES, str(good), str(bad), "--out-dir", str(folder), *CREW)
    assert code == 1 and f"{bad}:6: swipe_id: out-of-range" in err and "1 chat(s) exported" in err
    assert sorted(os.listdir(folder)) == ["hidden.jsonl"]  # the bad chat is not written
    code, out, err = cli("st", "import", str(good), str(bad), *CREW)
    assert code == 1 and out.count("\n") == 1 and f"{bad}:3: $: not-json" in err


def test_in_place_is_atomic_and_output_onto_the_input_is_refused(tmp_path):
    chat = tmp_path / "c.jsonl"
    shutil.copy(FIXTURES / "swipes.jsonl", chat)
    chat.chmod(0o640)
    code, _, err = cli("st", "export", RULES, str(chat), "-o", str(chat), *CREW)
    assert code == 2 and "give --in-place" in err and chat.read_bytes() == (FIXTURES / "swipes.jsonl").read_bytes()
    assert cli("st", "export", RULES, str(chat), "--in-place", *CREW)[0] == 0
    assert structural_diff(FIXTURES / "swipes.jsonl", chat) == []
    assert chat.read_bytes() != (FIXTURES / "swipes.jsonl").read_bytes()
    assert stat.S_IMODE(chat.stat().st_mode) == 0o640 and os.listdir(tmp_path) == ["c.jsonl"]  # no temporary left
    code, _, err = cli("st", "export", RULES, str(chat), str(chat), "-o", str(tmp_path / "x"), *CREW)
    assert code == 2 and "--out-dir" in err


def test_line_endings_and_byte_order_mark_are_kept(tmp_path, rs):
    raw = (FIXTURES / "hidden.jsonl").read_bytes().replace(b"\n", b"\r\n")
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + raw + b"\r\n")
    exported = export_chat(rs, read_chat(str(path)), Start(characters=("Cutter", "Lurk"))).data
    assert exported.startswith(b"\xef\xbb\xbf") and exported.endswith(b"\r\n")
    assert exported.count(b"\r\n") == raw.count(b"\r\n") + 1 and exported.count(b"\n") == exported.count(b"\r\n")
    assert exported.split(b"\r\n")[4] == raw.split(b"\r\n")[4]


def option_help(help_text: str, option: str) -> str:
    """What `--help` says of one option, its wrapped lines joined: its line and the deeper-indented ones below."""
    lines = help_text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{option} "))
    said = [lines[at]]
    for line in lines[at + 1:]:
        if not line.startswith(" " * 6) or line.lstrip().startswith("-"):
            break
        said.append(line)
    return " ".join(" ".join(said).split())


def test_replay_help_says_the_start_options_are_for_sillytavern_chats(capsys, monkeypatch):
    """`replay` reads our JSONL (each chat names its own start) and SillyTavern chats: `--character`, `--start` and
    `--campaign` are refused with JSONL, so their help says they are for `--format st`. `st import` and `st export`
    read only SillyTavern chats: their help needs no such word."""
    monkeypatch.setenv("COLUMNS", "60")  # wrapped, as on a narrow terminal
    for argv, told in ((["replay", "--help"], True), (["st", "export", "--help"], False)):
        assert run(argv, io.StringIO(), io.StringIO()) == 0
        shown = capsys.readouterr().out
        for option in ("--character", "--start", "--campaign"):
            said = option_help(shown, option)
            assert ("--format st" in said) is told, (argv, said)
            assert told is False or "JSONL chat names its own start" in said


def test_format_detection_and_usage(tmp_path):
    crew = str(SAMPLES / "transcripts" / "crew-night.jsonl")
    assert cli("replay", RULES, crew)[0] == 0  # our JSONL, as before
    code, _, err = cli("replay", RULES, crew, crew)
    assert code == 2 and "--format st" in err
    code, _, err = cli("replay", RULES, crew, "--character", "Mira")
    assert code == 2 and "--character and --start" in err
    code, _, err = cli("replay", RULES, str(FIXTURES / "hidden.jsonl"), "--format", "jsonl")
    assert code == 1  # read as our JSONL, its lines are not chats: named, as any bad line
    state = tmp_path / "start.json"
    state.write_text(GameState.new(Ruleset.load(RULES), ["Cutter", "Lurk"]).dumps())
    a = cli("replay", RULES, str(FIXTURES / "group.jsonl"), "--start", str(state))
    b = cli("replay", RULES, str(FIXTURES / "group.jsonl"), *CREW)
    assert a[0] == b[0] == 0 and json.loads(a[1])["state"] == json.loads(b[1])["state"]
    assert "start" in json.loads(a[1]) and "characters" in json.loads(b[1])
    code, _, err = cli("replay", RULES, str(FIXTURES / "group.jsonl"), "--character", "$party")
    assert code == 1 and "reserved-name" in err


def test_import_reads_stdin_and_names_the_start(tmp_path, monkeypatch):
    data = (FIXTURES / "hidden.jsonl").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = cli("st", "import", "-", *CREW)
    doc = json.loads(out)
    assert code == 0 and doc["id"] == "<stdin>" and doc["characters"] == ["Cutter", "Lurk"]
    assert {m.get("name") for m in doc["messages"]} == {"Game Master", "Lurk"}


def test_parse_tolerates_blank_lines_and_reads_an_old_header():
    data = b'{"user_name":"You","character_name":"GM","create_date":"x"}\n\n{"name":"GM","is_user":false,"mes":"hi"}\n'
    chat = parse_chat(data, "old.jsonl")
    assert chat.header is not None and chat.metadata is None and len(chat.messages) == 1
    assert chat.render({}) == data  # the blank line and the final line break are kept


@pytest.mark.slow  # starts SillyTavern
def test_an_exported_chat_loads_and_saves_in_sillytavern(tmp_path):
    """Issue 16 against the real program (tests/st_kit.py, SillyTavern's own server; skipped where it is not
    installed): SillyTavern stores the fixture as it is written; `st export --in-place` on its stored file;
    SillyTavern reads the export back, saves it again (same integrity) byte for byte, and still refuses a
    save whose integrity changed."""
    st_kit = pytest.importorskip("st_kit", reason="the SillyTavern test kit (tests/st_kit.py) is not here")
    original = FIXTURES / "swipes.jsonl"
    chat = [json.loads(x) for x in lines(original)]
    with st_kit.sillytavern(tmp_path / "st") as st:
        stored = st_kit.chat_file(st, "GM", "heist")
        stored.parent.mkdir(parents=True, exist_ok=True)
        assert st_kit.save_chat(st, "GM", "heist", chat).status_code == 200
        assert stored.read_bytes() == original.read_bytes()  # the fixture is what SillyTavern writes
        code, _, err = cli("st", "export", RULES, str(stored), "--in-place", *CREW)
        assert code == 0, err
        exported = stored.read_bytes()
        assert structural_diff(original, stored) == []
        loaded = st_kit.get_chat(st, "GM", "heist")
        assert loaded == [json.loads(x) for x in exported.split(b"\n")]
        assert loaded[0]["chat_metadata"]["integrity"] == chat[0]["chat_metadata"]["integrity"]
        assert st_kit.save_chat(st, "GM", "heist", loaded).status_code == 200  # the app saving what it loaded
        assert stored.read_bytes() == exported  # SillyTavern's JSON.stringify wrote the very same bytes
        changed = json.loads(json.dumps(loaded))
        changed[0]["chat_metadata"]["integrity"] = "another-slug"
        refused = st_kit.save_chat(st, "GM", "heist", changed)
        assert refused.status_code == 400 and refused.json() == {"error": "integrity"}
        assert stored.read_bytes() == exported
        # a group chat without a header, through SillyTavern's group routes
        group = FIXTURES / "group.jsonl"
        body = {"id": "crew", "chat": [json.loads(x) for x in lines(group)]}
        assert st.client.post("/api/chats/group/save", json=body).status_code == 200
        stored = st.user_dir() / "group chats" / "crew.jsonl"
        assert stored.read_bytes() == group.read_bytes()
        assert cli("st", "export", RULES, str(stored), "--in-place", *CREW)[0] == 0
        exported = stored.read_bytes()
        assert structural_diff(group, stored) == [] and exported != group.read_bytes()
        loaded = st.client.post("/api/chats/group/get", json={"id": "crew"}).json()
        assert loaded == [json.loads(x) for x in exported.split(b"\n")]
        assert st.client.post("/api/chats/group/save", json={"id": "crew", "chat": loaded}).status_code == 200
        assert stored.read_bytes() == exported


def test_a_bug_in_one_chat_is_named_and_the_rest_go_on(tmp_path, monkeypatch):
    """F-4 for chat files: whatever goes wrong with one chat, the others are still written."""
    from tagengine._internal.sillytavern import chatreplay

    real = chatreplay.export_chat

    def flaky(rs: Ruleset, chat: Any, given: Any) -> Any:
        if chat.path.endswith("hidden.jsonl"):
            raise RuntimeError("boom")
        return real(rs, chat, given)

    monkeypatch.setattr(chatreplay, "export_chat", flaky)
    folder = tmp_path / "out"
    code, _, err = cli("st", "export", RULES, *map(str, CHATS), "--out-dir", str(folder), *CREW)
    assert code == 1 and f"{FIXTURES / 'hidden.jsonl'}: RuntimeError: boom" in err
    assert sorted(os.listdir(folder)) == ["extensions.jsonl", "group.jsonl", "swipes.jsonl"]


def test_the_summary_counts_bad_files_not_their_bad_lines(tmp_path):
    """A file with three bad lines is one bad file (each line is still named)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"mes": 5}\n[1]\n{"mes": "a", "swipes": "no"}\n')
    for argv in (["st", "import", str(bad), str(CHATS[0]), *CREW],
                 ["st", "export", RULES, str(bad), str(CHATS[0]), "--out-dir", str(tmp_path / "out"), *CREW]):
        code, _, err = cli(*argv)
        assert code == 1 and "1 chat(s)" in err and "; 1 bad file(s)" in err, err
        assert all(f"{bad}:{n}: " in err for n in (1, 2, 3)), err


def test_replay_of_chat_files_moves_the_progress_bar_on_a_terminal(tmp_path):
    """`replay --format st` on a terminal: the bar counts the chats (it used to be drawn and stay at 0)."""
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Tty()
    code = run(["replay", RULES, *map(str, CHATS), "-o", str(tmp_path / "o.jsonl"), *CREW], io.StringIO(), err)
    assert code == 0, err.getvalue()
    drawn = re.findall(r"replay: (\d+)chat", err.getvalue())  # tqdm's frames: `replay: 4chat [00:00, ...]`
    assert drawn and int(drawn[-1]) == len(CHATS), err.getvalue()
