"""The command line (DESIGN.md section 3): exit 0 ok, 1 bad input, 2 usage; no tracebacks for any file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conftest import SAMPLES
from tagengine._internal.cli import run


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_check_ok_prints_lowest_version():
    code, out, _ = call("check", str(SAMPLES / "rulesets" / "gravewatch.json"))
    assert code == 0 and "needs Capability API 1.145" in out


def test_check_json(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"sheet": {"live": {"pools": [{"id": "x", "label": "X", "max": {"const": 1}, "start": "half"}]}}}')
    code, out, _ = call("check", str(bad), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False
    assert doc["problems"] == [{"path": "sheet.live.pools[0].start", "code": "not-allowed",
                                "message": "Input should be 'full' or 'empty'", "value": "half"}]


def test_check_one_line_per_problem(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"sheet": {"colour": 1}, "clocks": {"max": 40}}')
    code, out, _ = call("check", str(bad))
    assert code == 1
    assert out.splitlines() == ["sheet.colour: unknown-key: unknown key 'colour'",
                                "clocks.max: out-of-range: clocks.max is 1 to 12, not 40 (CLOCK-5)"]


def test_dec_24_shape_and_rule_problems_in_one_run(tmp_path: Path):
    """A refused key is dropped and the rule checks still run on the rest (DEC-24)."""
    doc = json.loads((SAMPLES / "rulesets" / "gravewatch.json").read_text())
    doc["sheet"]["live"]["pools"][0]["colour"] = "red"  # shape: unknown key
    doc["sheet"]["live"]["tracks"][0]["max"] = 5  # rule: WOUND-13
    doc["gm"]["opposition"] = "players"  # shape: not allowed
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = call("check", str(bad))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 3
    assert lines[0] == "sheet.live.pools[0].colour: unknown-key: unknown key 'colour'"
    assert lines[1].startswith("gm.opposition: not-allowed:")
    assert lines[2].startswith("sheet.live.tracks[0].max: wound-max-mismatch:")


JUNK = {
    "empty": b"",
    "not-json": b"hello",
    "array": b"[1, 2]",
    "string": b'"sheet"',
    "wrong-types": b'{"sheet": {"abilities": "many", "live": 3}, "gmReference": 7}',
    "binary": bytes(range(256)),
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"sheet": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001,
    "huge": b'{"gmReference": "' + b"x" * (10 * 1024 * 1024) + b'", "sheet": {}}',
    "nul": b'{"sheet": {}, "gmReference": "a\\u0000b"}',
}


@pytest.mark.parametrize("name", sorted(JUNK))
def test_no_input_file_makes_check_print_a_traceback(tmp_path: Path, name: str):
    f = tmp_path / f"{name}.json"
    f.write_bytes(JUNK[name])
    code, out, err = call("check", str(f))
    assert code == 1
    assert "Traceback" not in out + err
    lines = out.splitlines()
    assert lines and all(": " in line for line in lines)


def test_missing_file_is_exit_1():
    code, out, _ = call("check", "/nonexistent/rules.json")
    assert code == 1 and "unreadable" in out


def test_usage_errors_exit_2():
    assert call()[0] == 2
    assert call("check")[0] == 2
    assert call("frobnicate")[0] == 2
    assert call("schema", "party")[0] == 2


def test_version():
    code, out, _ = call("--version")
    assert code == 0 and out.startswith("tagengine ")


def test_state_new_and_reserved_name(tmp_path: Path):
    rs = str(SAMPLES / "rulesets" / "blades-like.json")
    code, out, _ = call("state", "new", rs, "Cutter", "Lurk")
    assert code == 0 and list(json.loads(out)["gameCharacterCards"]) == ["Cutter", "Lurk"]
    code, _, err = call("state", "new", rs, "$party")
    assert code == 1 and "reserved-name" in err


@pytest.mark.parametrize("kind", ["ruleset", "state"])
def test_schema(kind: str):
    code, out, _ = call("schema", kind)
    doc = json.loads(out)
    assert code == 0 and doc["type"] == "object" and doc["properties"]


def test_demo_runs_on_the_samples():
    code, out, _ = call("demo")
    assert code == 0 and "gravewatch.json: ok" in out


def test_apply_and_narrate(tmp_path: Path):
    rs = str(SAMPLES / "rulesets" / "blades-like.json")
    state = tmp_path / "state.json"
    assert call("state", "new", rs, "Cutter", "-o", str(state))[0] == 0
    reply = tmp_path / "reply.md"
    reply.write_text('The bells ring.\n[clock: name="Alarm raised" size="6"]\nRun!')
    code, out, _ = call("apply", rs, str(state), str(reply), "--state-out", str(tmp_path / "next.json"))
    assert code == 0 and out == 'The bells ring.\n[clock: name="Alarm raised" size="6" result="ok" now="0/6"]\nRun!'
    assert json.loads((tmp_path / "next.json").read_text())["rulesetClocks"] == [
        {"name": "Alarm raised", "size": 6, "filled": 0}]
    code, out, _ = call("apply", rs, str(state), str(reply), "--json")
    doc = json.loads(out)
    assert set(doc) == {"text", "state", "receipts"}
    (r,) = doc["receipts"]
    assert doc["text"][r["span"][0]:r["span"][1]].startswith("[clock: ")
    assert r == {"span": r["span"], "tag": "clock", "attrs": {"name": "Alarm raised", "size": "6"},
                 "result": "ok", "now": "0/6"}
    code, out, _ = call("narrate", str(reply))
    assert code == 0 and out == "The bells ring.\nRun!"


def test_apply_bad_state_is_exit_1(tmp_path: Path):
    rs = str(SAMPLES / "rulesets" / "blades-like.json")
    bad = tmp_path / "state.json"
    bad.write_text("[]")
    code, _, err = call("apply", rs, str(bad), str(bad))
    assert code == 1 and "not-state" in err


def test_apply_keeps_bytes_that_are_not_utf8(tmp_path: Path):
    reply = tmp_path / "reply.md"
    reply.write_bytes(b"caf\xe9 [OOC: x]")
    out = io.StringIO()
    assert run(["narrate", str(reply)], out, io.StringIO()) == 0
    assert out.getvalue().encode("utf-8", "surrogateescape") == b"caf\xe9 [OOC: x]"


def test_serves_key_may_come_from_the_environment_out_of_the_process_list(monkeypatch):
    """`serve --api-key` defaults to $TAGENGINE_API_KEY (a key on the command line is in every user's `ps`); the
    flag, given, wins; neither: no key."""
    from tagengine._internal.cli.arguments import arg_parser

    def key(*argv: str) -> str | None:
        args = ["serve", "--upstream", "demo", *argv]
        return arg_parser(args).parse_args(args).api_key  # type: ignore[no-any-return]

    monkeypatch.delenv("TAGENGINE_API_KEY", raising=False)
    assert key() is None
    monkeypatch.setenv("TAGENGINE_API_KEY", "from-env")
    assert key() == "from-env"
    assert key("--api-key", "given") == "given"
    monkeypatch.setenv("TAGENGINE_API_KEY", "")
    assert key() is None
