"""Issue 26 items 1, 6 and 9: what a request may send is bounded, each bound refused with a 413 naming it
(server/limits.py, SEC-1); docs/security.md lists every bound with its value; a data folder the server cannot
write is one line and exit 1; a campaign whose ruleset file is gone says so without the server's paths."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import httpx
import pytest
from serve_kit import Fake, Running

from conftest import ROOT, SAMPLES
from tagengine._internal.server import limits
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import MAX_BODY, MAX_MESSAGE, MAX_MESSAGES
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store

MARK = '[tagengine: campaign="heist"]'


def heist(data, ruleset=SAMPLES / "rulesets" / "blades-like.json"):
    store = Store(data)
    new_campaign(store, "heist", str(ruleset), ["Cutter", "Lurk"], seed="s")
    store.close()
    return data


def test_each_request_limit_is_a_413_naming_it(tmp_path):
    """A body past MAX_BODY (its Content-Length is enough), more than MAX_MESSAGES messages, a message of more
    than MAX_MESSAGE characters: each a 413 whose message names the bound and, for a message, which one. Before,
    a 10 MB message was counted on the event loop for half a minute, then refused as not fitting."""
    fake = Fake({"a": "Fine."})
    with Running(fake.app()) as up, \
            Running(make_app(Options(upstream=f"{up.url}/v1", data=heist(tmp_path / "data")))) as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as c:
        system = {"role": "system", "content": f"GM. {MARK}"}
        big = {"model": "gpt-4o", "messages": [system, {"role": "user", "content": "ab" * (MAX_MESSAGE // 2 + 1)},
                                               {"role": "user", "content": "TURN:a"}]}
        r = c.post("/v1/chat/completions", json=big)
        assert r.status_code == 413 and r.json()["error"]["code"] == "message_too_large", r.text[:300]
        assert "messages[1]" in r.json()["error"]["message"] and str(MAX_MESSAGE) in r.json()["error"]["message"]
        many = {"model": "gpt-4o", "messages": [system] + [{"role": "user", "content": "TURN:a"}] * MAX_MESSAGES}
        r = c.post("/v1/chat/completions", json=many)
        assert r.status_code == 413 and r.json()["error"]["code"] == "too_many_messages"
        assert str(MAX_MESSAGES) in r.json()["error"]["message"]
        r = c.post("/v1/chat/completions", content=b"x" * (MAX_BODY + 1))
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
        assert str(MAX_BODY) in r.json()["error"]["message"]
        check = {"who": "Cutter", "skill": "Prowl"}
        r = c.post("/tagengine/api/checks", json={"messages": many["messages"], "check": check})
        assert r.status_code == 413 and r.json()["error"]["code"] == "too_many_messages"
        just = {"model": "gpt-4o", "messages": [system, {"role": "user", "content": "TURN:a"}] * 10}
        assert c.post("/v1/chat/completions", json=just).status_code == 200  # within them: served
    assert fake.bodies and all(len(b) < MAX_BODY for b in fake.bodies)


def test_docs_security_lists_every_limit_with_its_value():
    """docs/security.md's "Limits" table has a row per `limits.LIMITS` entry, with its value and unit."""
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## Limits", 1)[1].split("\n## ", 1)[0]
    rows = {cells[0]: cells for line in section.splitlines() if line.startswith("| ") and not line.startswith("|--")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}
    assert len(rows) == len(limits.LIMITS) + 1  # and the header
    for limit in limits.LIMITS:
        assert limit.name in rows, f"docs/security.md: no row for {limit.name!r}"
        _, value, unit, _ = rows[limit.name]
        number = re.match(r"[\d ]+", value)
        assert number and int(number.group().replace(" ", "")) == limit.value, (limit.name, value, limit.value)
        assert unit == limit.unit, (limit.name, unit)


def test_a_campaign_whose_ruleset_file_is_gone_says_so_without_the_servers_paths(tmp_path, caplog):
    """Item 9: the 500 (`campaign_broken`) and the sheet page name the campaign only; the server's log says
    which file and why."""
    ruleset = tmp_path / "rules" / "blades-like.json"
    ruleset.parent.mkdir()
    shutil.copy(SAMPLES / "rulesets" / "blades-like.json", ruleset)
    data = heist(tmp_path / "data", ruleset)
    ruleset.unlink()
    fake = Fake({"a": "Fine."})
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data))) as srv, \
            httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": [
            {"role": "system", "content": MARK}, {"role": "user", "content": "TURN:a"}]})
        assert r.status_code == 500 and r.json()["error"]["code"] == "campaign_broken", r.text
        page = c.get("/ui/c/heist")
        assert page.status_code == 500
        for text in (r.text, json.dumps(r.json()), page.text):
            assert str(tmp_path) not in text and "blades-like" not in text and "No such file" not in text, text
        assert "heist" in r.json()["error"]["message"]
    assert any(str(ruleset) in m for m in caplog.messages)  # the operator still learns which file


def read_only_data(tmp_path):
    """A data folder with a campaign that this process cannot write to; how to run a command that cannot
    either (as root, the capabilities that pass file permissions dropped with setpriv), or a skip."""
    data = heist(tmp_path / "data")
    for p in [data, *data.iterdir()]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    if os.geteuid() != 0:
        return data, []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root, and no setpriv to drop the capability to write past file permissions")
    return data, [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]


@pytest.mark.skipif(sys.platform == "win32", reason="file modes")
@pytest.mark.parametrize("command", [["serve", "--upstream", "demo", "--port", "0"], ["campaign", "list"]])
def test_a_data_folder_that_cannot_be_written_is_one_line_and_exit_1(tmp_path, command):
    """Item 6: the store cannot open its database for writing: `tagengine: <file>: ...` on one line, exit 1,
    no traceback (it was an sqlite3.OperationalError's)."""
    data, prefix = read_only_data(tmp_path)
    try:
        done = subprocess.run([*prefix, sys.executable, "-m", "tagengine", *command, "--data", str(data)],
                              capture_output=True, text=True, timeout=60)
    finally:
        for p in [data, *data.iterdir()]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    lines = [line for line in done.stderr.splitlines() if "Uvicorn" not in line and "tagengine serve:" not in line]
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and lines[0].startswith("tagengine: ") and "readonly" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
