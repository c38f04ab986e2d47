"""Issue 26 item 14 (TR-8): a near-miss campaign marker (another case, quotes or spaces: a no-break space) is
not read, so the request goes on as it would have (the default campaign, or passed through), but it is said:
`x-tagengine-warning` on the answer and a line in the log. A real server on loopback, a scripted upstream."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from serve_kit import Fake
from test_serve import SCRIPT, serving

from tagengine._internal.server.turn.request import read_marked, text_size

NEAR = ["[TAGENGINE: campaign='heist']", '[tagengine:\u00a0campaign="heist"]', '[Tagengine: campaign="heist"]',
        '[tagengine: campaign=\u201cheist\u201d]', '[tagengine campaign="heist"]']


def ask(url: str, system: str, stream: bool = False) -> httpx.Response:
    body = {"model": "m", "stream": stream, "messages": [{"role": "system", "content": f"You are the GM. {system}"},
                                                         {"role": "user", "content": "TURN:one"}]}
    with httpx.Client(timeout=30) as h:
        if not stream:
            return h.post(f"{url}/v1/chat/completions", json=body)
        with h.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
            r.read()
            return r


@pytest.mark.parametrize("marker", NEAR)
def test_a_near_miss_marker_is_warned_in_a_header_and_the_log(tmp_path, caplog, marker):
    caplog.set_level(logging.WARNING, "tagengine.serve")
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake, campaign="heist") as srv:
        r = ask(srv.url, marker)
        assert r.status_code == 200 and r.headers["x-tagengine-campaign"] == "heist"  # the default, as before
        warning = r.headers["x-tagengine-warning"]
        assert "a campaign marker was not read" in warning and ascii(marker) in warning
        assert 'write it [tagengine: campaign="NAME"]' in warning
        sent = json.loads(fake.bodies[-1])["messages"]
        assert any(marker in m["content"] for m in sent)  # goes to the model as it is: said, not guessed
    logged = [rec.getMessage() for rec in caplog.records if "was not read" in rec.getMessage()]
    assert len(logged) == 1 and "plays campaign heist" in logged[0]


def test_without_a_default_the_near_miss_passes_through_with_the_warning(tmp_path, caplog):
    caplog.set_level(logging.WARNING, "tagengine.serve")
    fake = Fake(SCRIPT)
    with serving(tmp_path, fake) as srv:
        for stream in (False, True):
            r = ask(srv.url, NEAR[0], stream)
            assert r.status_code == 200 and "x-tagengine-campaign" not in r.headers
            assert ascii(NEAR[0]) in r.headers["x-tagengine-warning"]
    assert sum("passes through" in rec.getMessage() for rec in caplog.records) == 2


def test_a_marker_as_written_and_text_in_a_reply_say_nothing(tmp_path):
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        r = ask(srv.url, '[tagengine: campaign="heist"]')
        assert r.headers["x-tagengine-campaign"] == "heist" and "x-tagengine-warning" not in r.headers
    quoted = [{"role": "assistant", "content": NEAR[0]}, {"role": "user", "content": "a [tag] and [TAGENGINE] alone"}]
    assert read_marked(quoted).near_miss is None  # a model's reply cannot name a campaign; no `campaign` word
    both = [{"role": "system", "content": f'[tagengine: campaign="heist"] {NEAR[1]}'}]
    got = read_marked(both)
    assert (got.campaign, got.near_miss) == ("heist", NEAR[1])


def test_a_replys_text_counts_for_the_event_loop_only_when_it_holds_a_markers_start():
    """What `read_marked` scans with a regular expression decides where it runs (SEC-11, LOOP_CHARS): a system or
    user message's text (the near-miss scan) and a reply's only when it holds `[tagengine:` (the marker taken
    out); a reply without it is searched for that literal alone, so a long chat's replies keep the read on the
    event loop, where a worker thread's hop would cost more than the read."""
    brackets = "[" * 50_000
    assert text_size([{"role": "assistant", "content": brackets}, {"role": "user", "content": "go on"}]) == 5
    assert text_size([{"role": "user", "content": brackets}]) == 50_000
    marked = "[tagengine: x] " * 10
    assert text_size([{"role": "assistant", "content": marked}, {"content": "no role"}]) == len(marked) + 7
    assert read_marked([{"role": "assistant", "content": brackets}]).near_miss is None
