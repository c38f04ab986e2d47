"""Issue 26 items 1, 2, 3, 4 and 7: one request, one upstream answer or a crowd of slow connections cannot take
down `tagengine serve`, run here as a process of its own (its memory, its file descriptors and its log are what
these tests read) against a scripted upstream that misbehaves on request (serve_kit.Misbehaving).

While each attack runs, `Probes` asks for /healthz and plays a small chat turn, again and again, from a thread
of its own, and every answer must be right. No test asserts how fast they come (the machine is shared): an
attack that held the event loop would hold a probe for as long as its work, so the heavy attacks check only that
no probe waited for half the attack's own time (before issue 26 one waited for all but a few milliseconds
of it)."""

from __future__ import annotations

import json
import random
import socket
import sqlite3
import string
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import SMALL_REPLY, Misbehaving, Running, Served

from conftest import SAMPLES
from tagengine._internal.server.limits import MAX_ANSWER, MAX_MESSAGE, MAX_REPLY
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import DB_NAME, Store

# slow: a `tagengine serve` process taking each attack whole (gigabytes read, megabytes counted and scanned),
# some 15 s of CPU in all; the full lane runs them
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="reads the server's memory from /proc"),
              pytest.mark.slow]
MARK = '[tagengine: campaign="heist"]'
SMALL_TURN = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"Probe. {MARK}"},
                                              {"role": "user", "content": "TURN:small"}]}


class Probes:
    """/healthz and a small chat turn, by turns, from a thread of their own, each answer noted with when it was
    asked and when it came; the server's memory sampled on the way (its peak in `peak_mb`)."""

    def __init__(self, server: Served) -> None:
        self.server = server
        self.answers: list[tuple[str, int, float, float]] = []  # (what, status, asked, answered)
        self.stop = threading.Event()
        self.peak_mb = 0.0
        self.failures: list[str] = []

    def __enter__(self) -> Probes:
        self.start_mb = self.server.rss_mb()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def run(self) -> None:
        with httpx.Client(base_url=self.server.url, timeout=120) as c:
            while not self.stop.is_set():
                for what in ("healthz", "turn"):
                    asked = time.monotonic()
                    try:
                        r = c.get("/healthz") if what == "healthz" else c.post("/v1/chat/completions", json=SMALL_TURN)
                    except httpx.HTTPError as e:
                        self.failures.append(f"{what}: {type(e).__name__}")
                        continue
                    self.answers.append((what, r.status_code, asked, time.monotonic()))
                    if r.status_code != 200 or (what == "turn" and "Quiet now" not in r.text):
                        self.failures.append(f"{what}: {r.status_code} {r.text[:200]}")
                    self.peak_mb = max(self.peak_mb, self.server.rss_mb())

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(150)  # bounded: a probe's own timeout is 120 s
        assert not self.thread.is_alive()

    def held_by_nothing(self, start: float, end: float) -> None:
        """While the attack ran (from `start` to `end`), both kinds of probe were asked, and none waited for as
        long as half the attack: a loop held by the attack's work would hold a probe for as long as that work
        (it did, for all but a few milliseconds of the attack, before issue 26)."""
        asked = [w for w, _, at, _ in self.answers if start <= at <= end]
        assert asked.count("healthz") >= 3 and asked.count("turn") >= 1, (end - start, self.answers[-5:])
        waits = [answered - at for _, _, at, answered in self.answers if at < end and answered > start]
        assert max(waits) < (end - start) / 2, (f"a probe waited {max(waits):.2f} s of an attack of "
                                                f"{end - start:.2f} s")


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Misbehaving, str]]:
    bad = Misbehaving(huge=64 * 1024 * 1024)
    with Running(bad.app()) as up:
        yield bad, up.url
        bad.stop.set()  # whatever has no end ends now


@pytest.fixture(scope="module")
def server(upstream: tuple[Misbehaving, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("attack") / "data"
    store = Store(data)
    for name in ("heist", "vault"):  # "vault": an attack's own campaign, to see what the store kept of it
        new_campaign(store, name, str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="s")
    store.close()
    with Served(data, f"{upstream[1]}/v1") as srv:
        with httpx.Client(base_url=srv.url, timeout=60) as c:  # warm: the tokenizer built, the campaign loaded
            assert c.post("/v1/chat/completions", json=SMALL_TURN).status_code == 200
        yield srv
    assert "Traceback" not in srv.log, srv.log[-3000:]


def attacked(server: Served, body: dict[str, Any] | bytes, *, stream: bool = False) -> tuple[Probes, httpx.Response,
                                                                                             list[str], float, float]:
    """`body` sent while the probes run: the probes, the answer (read whole: a stream up to 256 MiB at most), its
    SSE data lines when streamed, and when it was sent and when it had come back."""
    lines: list[str] = []
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with Probes(server) as probes, httpx.Client(base_url=server.url, timeout=300) as c:
        time.sleep(0.3)  # the probes first: some answers before the attack begins
        start = time.monotonic()
        headers = {"content-type": "application/json"}
        if not stream:
            r = c.post("/v1/chat/completions", content=content, headers=headers)
        else:
            with c.stream("POST", "/v1/chat/completions", content=content, headers=headers) as r:
                got = 0
                for line in r.iter_lines():
                    got += len(line)
                    if line.startswith("data: "):
                        lines.append(line[6:])
                    if got > 256 * 1024 * 1024:  # bounded: an answer without end would stop the test here
                        break
        end = time.monotonic()
        time.sleep(0.3)
    assert not probes.failures, probes.failures[:5]
    return probes, r, lines, start, end


def letters(n: int, seed: int) -> str:
    """`n` lowercase letters and no space: the costliest text to count (one piece for the tokenizer)."""
    return "".join(random.Random(seed).choices(string.ascii_lowercase, k=n))


def test_a_message_that_is_slow_to_count_holds_no_other_request(server):
    """Item 1: three messages of a million letters each (within the limits) take seconds of the tokenizer;
    counted in a worker thread, so /healthz and other chats are answered all along."""
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"GM. {MARK}"},
                                            *({"role": "user", "content": letters(MAX_MESSAGE - 10, k)}
                                              for k in range(3)),
                                            {"role": "user", "content": "TURN:small"}]}
    probes, r, _, start, end = attacked(server, body)
    assert r.status_code in (200, 400), r.text[:300]  # served with the big messages dropped, or refused
    probes.held_by_nothing(start, end)


def test_a_history_of_long_tagged_replies_holds_no_other_request(server):
    """Item 1: eight replies of about a megabyte of tags each, replayed (a worker thread) and counted."""
    tags = '[clock: name="Alarm" tick="1"] ' * ((MAX_MESSAGE - 100) // 31)
    msgs: list[dict[str, str]] = [{"role": "system", "content": f"GM. {MARK}"}]
    for n in range(8):
        msgs += [{"role": "user", "content": f"go {n}"}, {"role": "assistant", "content": f"{n} {tags}"}]
    probes, r, _, start, end = attacked(server, {"model": "gpt-4o", "messages": [
        *msgs, {"role": "user", "content": "TURN:small"}]})
    assert r.status_code in (200, 400), r.text[:300]
    probes.held_by_nothing(start, end)


def test_messages_slow_to_scan_for_a_near_miss_marker_hold_no_other_request(server):
    """SEC-11: fifteen messages of a million brackets each (within the limits), the near-miss marker scan's
    costliest text (TR-8), with no campaign named, so the request passes through after the scan: the scan ran on
    the event loop and held /healthz for most of the attack; it runs in a worker thread now."""
    body = {"model": "gpt-4o", "messages": [*({"role": "user", "content": "[" * (MAX_MESSAGE - 10)}
                                              for _ in range(15)), {"role": "user", "content": "TURN:small"}]}
    probes, r, _, start, end = attacked(server, body)
    assert r.status_code == 200, r.text[:300]
    probes.held_by_nothing(start, end)


def test_a_huge_whole_answer_is_a_502_and_the_server_holds_a_bounded_part_of_it(server, upstream):
    """Item 2: an upstream that answers 64 MiB of JSON: the server stops reading past MAX_ANSWER (a 502 naming
    the bound, where it read it all, tokenized it on the event loop and could be killed for its memory)."""
    probes, r, _, _, _ = attacked(server, {"model": "gpt-4o", "messages": [
        {"role": "system", "content": f"GM. {MARK}"}, {"role": "user", "content": "TURN:huge"}]})
    assert r.status_code == 502, r.text[:300]
    error = r.json()["error"]
    assert error["code"] == "upstream_too_large" and str(MAX_ANSWER) in error["message"]
    assert probes.peak_mb - probes.start_mb < 4 * MAX_ANSWER / 2**20, (probes.start_mb, probes.peak_mb)


@pytest.mark.parametrize(("how", "code"), [("endless", "reply_too_large"), ("thinking", "upstream_too_large")])
def test_a_stream_without_end_is_ended_with_an_error_event_and_nothing_is_kept(server, upstream, how, code):
    """Item 3: an upstream that streams without end: a reply past MAX_REPLY characters, or a stream past
    MAX_STREAM bytes (reasoning that never comes to a reply), ends with an error event in the OpenAI format;
    nothing is kept (campaign "vault" has no snapshot and no newest turn after it), and the server's memory
    does not grow with the stream."""
    probes, r, lines, _, _ = attacked(server, {"model": "gpt-4o", "stream": True, "messages": [
        {"role": "system", "content": '[tagengine: campaign="vault"]'}, {"role": "user", "content": f"TURN:{how}"}]},
        stream=True)
    assert r.status_code == 200 and lines, r.headers
    assert "[DONE]" not in lines
    assert json.loads(lines[-1])["error"]["code"] == code, lines[-1][:300]
    shown = sum(len(json.loads(d)["choices"][0]["delta"].get("content") or "")
                for d in lines[:-1] if json.loads(d).get("choices"))
    assert shown <= MAX_REPLY
    db = sqlite3.connect(f"file:{server_db(server)}?mode=ro", uri=True)
    try:
        assert db.execute("SELECT count(*) FROM snapshots WHERE campaign = 'vault'").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM heads WHERE campaign = 'vault'").fetchone()[0] == 0
    finally:
        db.close()
    assert probes.peak_mb - probes.start_mb < 64, (probes.start_mb, probes.peak_mb)
    assert upstream[0].sent[-1] < upstream[0].cap  # the server stopped reading, not the upstream sending


def server_db(server: Served) -> Path:
    return Path(server.argv[server.argv.index("--data") + 1]) / DB_NAME


def test_half_open_connections_past_the_file_descriptor_limit_lock_no_client_out(upstream, tmp_path):
    """Item 4: with 256 file descriptors, 300 connections that send half a request line. The server caps its
    connections below the limit (closing the one idle longest), so /healthz and a chat turn are still answered
    while they stay open; before, every new client waited until the slow ones left (minutes)."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="s")
    store.close()
    with Served(data, f"{upstream[1]}/v1", nofile=256) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        slow = []
        try:
            for _ in range(300):
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                s.sendall(b"GET /healthz HTTP/1.1\r\n")
                slow.append(s)
            with httpx.Client(base_url=srv.url, timeout=httpx.Timeout(60, connect=60)) as c:
                for _ in range(3):
                    assert c.get("/healthz").status_code == 200
                    r = c.post("/v1/chat/completions", json=SMALL_TURN)
                    assert r.status_code == 200 and SMALL_REPLY.split(".")[0] in r.text, r.text[:300]
            closed = 0
            for s in slow:  # the ones closed to make room: their end of file has come
                s.settimeout(0.001)
                try:
                    closed += s.recv(1) == b""
                except (TimeoutError, BlockingIOError):
                    pass
                except OSError:
                    closed += 1
            assert closed >= 300 - 256 // 2, closed
        finally:
            for s in slow:
                s.close()
        assert "client connections, the most this server keeps open" in srv.log


def test_a_client_that_leaves_mid_body_is_one_log_line(server):
    """Item 7: a request whose client closes before its body has come (Content-Length 1000, 12 bytes sent) is
    one access line (status 499, nginx's "client closed request"), not an "internal error" and a traceback."""
    before = len(server.lines)
    port = int(server.url.rsplit(":", 1)[1])
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{\"model\": \"m")
    for _ in range(300):  # bounded: about 30 s for three lines
        if sum("499" in line for line in server.lines[before:]) == 3:
            break
        time.sleep(0.1)
    new = server.lines[before:]
    assert sum(" 499" in line for line in new) == 3, new
    assert [line for line in new if "/v1/chat/completions" in line] == [line for line in new if " 499" in line]
    assert not [line for line in new if "Traceback" in line or "internal error" in line or "ERROR" in line], new
