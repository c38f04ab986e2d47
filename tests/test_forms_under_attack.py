"""Issue 35 items 6, 7 and 8 at full size, against `tagengine serve` as a process of its own (serve_kit.Served),
while a thread asks for /healthz again and again: each attack is answered with a bounded answer, and no probe
waits for as long as half the attack (the project's way of bounding a loop's hold without a clock: a loop held
by the attack's work held a probe for all of it, SEC-8). Figures before and after: docs/security.md.

- item 6: multipart forms of 20 000 parts (1.2 MB, within the bytes bound) held the loop 7 s each in the email
  parser; past MAX_FORM_PARTS they are refused before a part is read, and one at the bound is read in a worker;
- item 7: the checker's page of a 2.7 MB object of 200 000 keys was 90 MB, drawn on the loop;
- item 8: a refused 15 MiB value was answered three times over (47 MB)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from serve_kit import Fake, Running, Served

from conftest import SAMPLES
from tagengine._internal.server.limits import MAX_EDIT_FORM, MAX_FORM_PARTS
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store

# slow: megabytes parsed, a ruleset of 200 000 problems checked (some 10 s of CPU in all); the full lane runs them
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="reads the server's memory from /proc"),
              pytest.mark.slow]
BOUNDARY = "b0und"
MULTIPART = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}


def multipart(n: int, size: int = 1) -> bytes:
    part = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="_n"\r\n\r\n{"v" * size}\r\n'
    return (part * n + f"--{BOUNDARY}--\r\n").encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("forms") / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"], seed="s")
    store.close()
    with Running(Fake(script={}).app()) as up, Served(data, f"{up.url}/v1") as srv:
        assert httpx.get(f"{srv.url}/ui/c/heist/edit/Cutter", timeout=60).status_code == 200  # warm
        yield srv
    assert "Traceback" not in srv.log, srv.log[-3000:]


class Probe:
    """/healthz asked again and again from a thread, each answer noted with when it was asked and when it came;
    the server's memory sampled on the way."""

    def __init__(self, server: Served) -> None:
        self.server = server
        self.answers: list[tuple[int, float, float]] = []
        self.stop = threading.Event()
        self.peak_mb = 0.0

    def __enter__(self) -> Probe:
        self.start_mb = self.server.rss_mb()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        time.sleep(0.3)  # some answers before the attack
        return self

    def run(self) -> None:
        with httpx.Client(base_url=self.server.url, timeout=120) as c:
            while not self.stop.is_set():
                asked = time.monotonic()
                status = c.get("/healthz").status_code
                self.answers.append((status, asked, time.monotonic()))
                self.peak_mb = max(self.peak_mb, self.server.rss_mb())
                time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.3)
        self.stop.set()
        self.thread.join(150)  # bounded: a probe's own timeout is 120 s
        assert not self.thread.is_alive()

    def held_by_nothing(self, start: float, end: float) -> float:
        """While the attack ran, /healthz was answered (200) at least three times and never waited for half the
        attack; the worst wait."""
        during = [a for a in self.answers if start <= a[1] <= end]
        assert len(during) >= 3 and all(s == 200 for s, _, _ in self.answers), (end - start, self.answers[-5:])
        worst = max(answered - asked for _, asked, answered in self.answers if asked < end and answered > start)
        assert worst < (end - start) / 2, f"a probe waited {worst:.2f} s of an attack of {end - start:.2f} s"
        return worst


def attack(server: Served, path: str, body: bytes, headers: dict[str, str], times: int
           ) -> tuple[Probe, list[httpx.Response], float, float]:
    with Probe(server) as probe, httpx.Client(base_url=server.url, timeout=300) as c:
        start = time.monotonic()
        answers = [c.post(path, content=body, headers=headers) for _ in range(times)]
        end = time.monotonic()
    return probe, answers, start, end


def test_multipart_forms_of_many_parts_hold_no_other_request(server):
    """Item 6: 20 000 parts (1.2 MB) were 7 s of the loop each; now a 413 before a part is read. A form at
    MAX_FORM_PARTS of 4 MiB is read, in a worker thread."""
    many = multipart(20_000)
    probe, answers, start, end = attack(server, "/ui/c/heist/draft/Cutter", many, MULTIPART, 10)
    assert all(r.status_code == 413 and r.json()["error"]["code"] == "request_too_large" for r in answers)
    probe.held_by_nothing(start, end)
    full = multipart(MAX_FORM_PARTS, MAX_EDIT_FORM // MAX_FORM_PARTS - 80)
    assert len(full) <= MAX_EDIT_FORM
    probe, answers, start, end = attack(server, "/ui/c/heist/draft/Cutter", full, MULTIPART, 10)
    assert all(r.status_code == 200 for r in answers), answers[0].text[:300]
    probe.held_by_nothing(start, end)


def test_the_checkers_page_of_200_000_problems_is_bounded_and_drawn_off_the_loop(server):
    """Item 7: a 90 MB page drawn on the loop (4 s of it); now 500 problems shown, the rest counted, the page drawn
    in a worker."""
    doc = json.dumps({f"k{i}": 0 for i in range(200_000)}).encode()
    body = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="r.json"\r\n\r\n'.encode() + doc
            + f"\r\n--{BOUNDARY}--\r\n".encode())
    probe, answers, start, end = attack(server, "/ui/check", body, MULTIPART, 1)
    page = answers[0]
    assert page.status_code == 200 and len(page.content) < 1 << 20, len(page.content)
    assert "200001 problems" in page.text and "…and 199501 more problems, not shown" in page.text
    probe.held_by_nothing(start, end)
    # the memory the check takes (some 320 MB while it runs) is the loader's: pydantic's 200 000 errors; not bounded


def test_a_refused_value_of_15_mib_is_answered_in_kilobytes_holding_no_other_request(server):
    """Item 8: a 47 MB 422 (the value three times), built on the loop; now the value's first 300 characters."""
    body = json.dumps({"changes": {"fields.vice": "x" * (15 << 20)}}).encode()
    probe, answers, start, end = attack(server, "/tagengine/api/c/heist/characters/Cutter", body,
                                        {"content-type": "application/json"}, 5)
    assert all(r.status_code == 422 and len(r.content) < 64 * 1024 for r in answers), len(answers[0].content)
    probe.held_by_nothing(start, end)
    page = b"fields.vice=" + b"x" * (MAX_EDIT_FORM - 100)
    probe, answers, start, end = attack(server, "/ui/c/heist/edit/Cutter", page,
                                        {"content-type": "application/x-www-form-urlencoded"}, 5)
    assert all(r.status_code == 422 and len(r.content) < 256 * 1024 for r in answers), len(answers[0].content)
    probe.held_by_nothing(start, end)
