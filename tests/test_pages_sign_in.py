"""UI-10: with `--api-key`, a browser signs in to the pages once (a form) and gets a cookie that opens them,
and only them; the API still needs its header. A real server on loopback, a real client."""

from __future__ import annotations

import logging

import httpx
import pytest
from serve_kit import Running

from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.auth import COOKIE
from tagengine._internal.server.sessions import SESSION_SECONDS, Sessions

KEY = "sk-pages-only"


@pytest.fixture
def server(tmp_path):
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=tmp_path, api_key=KEY))) as srv:
        yield srv


def client(srv: Running, cookie: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=srv.url, timeout=30, follow_redirects=False,
                        headers={"cookie": f"{COOKIE}={cookie}"} if cookie is not None else None)


def test_a_page_without_the_key_goes_to_the_sign_in_form_and_back(server):
    with client(server) as h:
        r = h.get("/ui/check")
        assert r.status_code == 303 and r.headers["location"] == "/ui/login?next=/ui/check"
        form = h.get("/ui/login", params={"next": "/ui/check"})
        assert form.status_code == 200 and 'action="/ui/login"' in form.text
        assert 'name="next" value="/ui/check"' in form.text
        assert h.get("/ui/pages.css").status_code == 200  # the form's own stylesheet
        assert h.get("/v1/models").status_code == 401  # the API: its header, as before


def test_the_right_key_sets_a_cookie_that_opens_the_pages_and_not_the_api(server, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    with client(server) as h:
        wrong = h.post("/ui/login", data={"key": "nope", "next": "/ui/check"})
        assert wrong.status_code == 401 and "not this server" in wrong.text and "set-cookie" not in wrong.headers
        r = h.post("/ui/login", data={"key": KEY, "next": "/ui/check"})
    assert r.status_code == 303 and r.headers["location"] == "/ui/check"
    cookie = r.headers["set-cookie"]
    token = cookie.split(";")[0].removeprefix(f"{COOKIE}=")
    assert KEY not in cookie
    attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/ui", f"max-age={SESSION_SECONDS}"} <= attributes
    assert "secure" not in attributes  # plain http (TR-3: Secure behind https)
    with client(server, token) as h:
        assert h.get("/ui/").status_code == 200 and h.get("/ui/check").status_code == 200
        assert h.get("/v1/models").status_code == 401
    (tmp_path / "elsewhere").mkdir()
    other = Sessions(tmp_path / "elsewhere", "another key").issue()
    for forged in (KEY, "", other, token.split(".")[1], "0." + token.split(".")[1]):
        with client(server, forged) as h:
            assert h.get("/ui/").status_code == 303
    assert KEY not in caplog.text


def test_the_header_still_opens_the_pages_and_a_sign_in_goes_nowhere_but_this_server(server):
    with client(server) as h:
        assert h.get("/ui/", headers={"authorization": f"Bearer {KEY}"}).status_code == 200
        for elsewhere in ("https://example.com/", "//example.com/", "/v1/models"):
            r = h.post("/ui/login", data={"key": KEY, "next": elsewhere})
            assert r.status_code == 303 and r.headers["location"] == "/ui/"


def test_without_a_key_there_is_nothing_to_sign_in_to(tmp_path):
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=tmp_path))) as srv, client(srv) as h:
        assert h.get("/ui/").status_code == 200
        r = h.get("/ui/login")
        assert r.status_code == 303 and r.headers["location"] == "/ui/"
