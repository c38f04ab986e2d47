"""Issue 12: a request with no campaign goes to the upstream as it came (S-18): the body byte for byte and
the client's headers, except the hop-by-hop ones, Host and Content-Length; Authorization never logged."""

from __future__ import annotations

import logging

import httpx
from serve_kit import Fake
from test_serve import SCRIPT, serving

RAW = b'{"model": "m",\n  "messages": [{"role": "user", "content": "hi"}], "extra": {"k": [1, 2.50]}}'
ANSWER = b'{"id":"x",  "choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]}'


def test_the_clients_headers_reach_the_upstream_and_the_body_is_byte_identical(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    fake = Fake(SCRIPT, raw_answer=ANSWER)
    with serving(tmp_path, fake) as srv, httpx.Client(timeout=30) as h:
        r = h.post(f"{srv.url}/v1/chat/completions", content=RAW, headers={
            "content-type": "application/json", "authorization": "Bearer client-secret-77",
            "x-custom-thing": "42", "openai-organization": "org-1", "user-agent": "ChatApp/9",
            "connection": "keep-alive, x-private-hop", "x-private-hop": "no", "te": "trailers"})
        ours = srv.url.removeprefix("http://")
    assert r.content == ANSWER and fake.bodies == [RAW]
    got = fake.headers[-1]
    assert got["x-custom-thing"] == "42" and got["openai-organization"] == "org-1"
    assert got["user-agent"] == "ChatApp/9" and got["authorization"] == "Bearer client-secret-77"
    assert "x-private-hop" not in got and "te" not in got  # hop-by-hop, and what Connection names
    assert got["host"] != ours  # the upstream's own host
    assert got["content-length"] == str(len(RAW))
    assert "client-secret-77" not in caplog.text


def test_the_servers_own_key_is_not_forwarded(tmp_path, monkeypatch):
    fake = Fake(SCRIPT, raw_answer=ANSWER)
    with serving(tmp_path, fake, api_key="server-key") as srv, httpx.Client(timeout=30) as h:
        r = h.post(f"{srv.url}/v1/chat/completions", content=RAW,
                   headers={"authorization": "Bearer server-key", "x-custom-thing": "1"})
        assert r.status_code == 200
        assert "authorization" not in fake.headers[-1] and fake.headers[-1]["x-custom-thing"] == "1"
        monkeypatch.setenv("TAGENGINE_UPSTREAM_KEY", "upstream-key")
        h.post(f"{srv.url}/v1/chat/completions", content=RAW, headers={"authorization": "Bearer server-key"})
        assert fake.headers[-1]["authorization"] == "Bearer upstream-key"
