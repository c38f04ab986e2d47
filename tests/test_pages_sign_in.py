"""UI-10: with `--api-key`, a browser signs in to the pages once (a form) and gets a cookie that opens them,
and only them; the API still needs its header. A real server on loopback, a real client."""

from __future__ import annotations

import logging

import httpx
import pytest
from serve_kit import Running

from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.guard.auth import COOKIE

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
    from tagengine._internal.server.guard.sessions import Sessions
    from tagengine._internal.server.limits import SESSION_SECONDS

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


# -- issue 26 item 10 (TR-4): the scheme in any case, wrong keys limited, sign-ins that end

def test_the_bearer_scheme_is_read_in_any_case(server):
    """RFC 9110 11.1: the scheme's name is matched without case; one or more spaces after it (RFC 6750 2.1)."""
    with client(server) as h:
        for given in (f"bearer {KEY}", f"BEARER {KEY}", f"Bearer   {KEY}", f"bEaReR {KEY}"):
            assert h.get("/ui/", headers={"authorization": given}).status_code == 200, given
        for given in (f"Basic {KEY}", f"Bearer{KEY}", KEY, f"Bearer {KEY}x", f"Bearer x{KEY}"):
            assert h.get("/v1/models", headers={"authorization": given}).status_code == 401, given


def test_wrong_keys_are_limited_per_address_and_then_even_the_right_one_waits(server):
    with client(server) as h:
        codes = [h.post("/ui/login", data={"key": f"guess {n}"}).status_code for n in range(10)]
        assert codes == [401] * 10
        r = h.post("/ui/login", data={"key": KEY})
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0 and "set-cookie" not in r.headers
        assert "Too many wrong keys" in r.text
        assert h.get("/ui/", headers={"authorization": f"Bearer {KEY}"}).status_code == 200  # the API's header


def test_the_limit_refills_with_time_and_forgets_the_oldest_address_first():
    from tagengine._internal.server.limits import WRONG_KEY_EVERY, WRONG_KEYS_BURST
    from tagengine._internal.server.routes.sign_in import SignInLimit

    now = [1000.0]
    limit = SignInLimit(clock=lambda: now[0], most=3)
    for _ in range(WRONG_KEYS_BURST):
        assert limit.wait("a") == 0
        limit.wrong("a")
    assert limit.wait("a") == WRONG_KEY_EVERY
    now[0] += WRONG_KEY_EVERY
    assert limit.wait("a") == 0
    for who in ("b", "c", "d"):
        limit.wrong(who)
    assert list(limit.buckets) == ["b", "c", "d"] and limit.wait("a") == 0  # bounded: "a" was forgotten


def test_an_ipv6_client_counts_by_its_64_network():
    from starlette.requests import Request

    from tagengine._internal.server.routes.sign_in import SignInLimit

    def at(host: str) -> str:
        return SignInLimit.address(Request({"type": "http", "client": (host, 1), "headers": []}))

    assert at("2001:db8:1:2:aaaa::1") == at("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert at("2001:db8:1:3::1") != at("2001:db8:1:2::1") and at("127.0.0.1") == "127.0.0.1"


def signed_cookie(h: httpx.Client) -> str:
    r = h.post("/ui/login", data={"key": KEY, "next": "/ui/"})
    assert r.status_code == 303
    return r.headers["set-cookie"].split(";")[0].removeprefix(f"{COOKIE}=")


def test_sign_out_everywhere_ends_every_cookie(server):
    with client(server) as h:
        first, second = signed_cookie(h), signed_cookie(h)
    with client(server, first) as h:
        assert h.get("/ui/").status_code == 200 and "/ui/logout" in h.get("/ui/").text  # the bar's sign-out
        assert "Sign out everywhere" in h.get("/ui/logout").text
        r = h.post("/ui/logout", data={"everywhere": "1"})
        assert r.status_code == 303 and r.headers["location"] == "/ui/login"
        assert f'{COOKIE}=""' in r.headers["set-cookie"] and "max-age=0" in r.headers["set-cookie"].lower()
    for old in (first, second):
        with client(server, old) as h:
            assert h.get("/ui/").status_code == 303
    with client(server) as h, client(server, signed_cookie(h)) as again:
        assert again.get("/ui/").status_code == 200  # a new sign-in works at once


def test_a_plain_sign_out_leaves_other_browsers_signed_in(server):
    with client(server) as h:
        mine, theirs = signed_cookie(h), signed_cookie(h)
    with client(server, mine) as h:
        assert h.post("/ui/logout").status_code == 303
    with client(server, theirs) as h:
        assert h.get("/ui/").status_code == 200


def test_sessions_end_from_the_command_line_while_the_server_runs(tmp_path):
    import io
    import os
    import stat

    from tagengine._internal.cli import run
    from tagengine._internal.server.guard.sessions import SECRET_FILE

    data = tmp_path / "data"
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=data, api_key=KEY))) as srv:
        assert stat.S_IMODE(os.stat(data / SECRET_FILE).st_mode) == 0o600  # the owner's only
        with client(srv) as h:
            token = signed_cookie(h)
        with client(srv, token) as h:
            assert h.get("/ui/").status_code == 200
        out = io.StringIO()
        assert run(["sessions", "end", "--data", str(data)], out, io.StringIO()) == 0
        assert "every sign-in to the pages ended" in out.getvalue()
        with client(srv, token) as h:
            assert h.get("/ui/").status_code == 303


def test_a_cookie_lasts_30_days_and_one_key(tmp_path):
    from tagengine._internal.server.guard.sessions import Sessions
    from tagengine._internal.server.limits import SESSION_SECONDS

    now = [1_000_000.0]
    sessions = Sessions(tmp_path, KEY, clock=lambda: now[0])
    token = sessions.issue()
    assert sessions.valid(token)
    assert not Sessions(tmp_path, "another key").valid(token)  # a new --api-key ends the old sign-ins
    now[0] += SESSION_SECONDS + 1
    assert not sessions.valid(token)
    now[0] = 1_000_000.0 - 200  # a clock set back a little: still good; far back: not
    assert sessions.valid(token)
    now[0] = 1_000_000.0 - 1000
    assert not sessions.valid(token)
    for forged in ("", ".", "x.y", "99999999999999." + token.split(".")[1], token + "0", "1e5." + token[-64:]):
        assert not sessions.valid(forged), forged


def test_a_data_folder_that_cannot_keep_the_secret_keeps_it_in_memory(tmp_path, caplog):
    from tagengine._internal.server.guard.sessions import Sessions

    caplog.set_level(logging.WARNING)
    folder = tmp_path / "a file, not a folder"
    folder.write_text("")
    sessions = Sessions(folder, KEY)
    token = sessions.issue()
    assert sessions.valid(token)
    sessions.end_all()
    assert not sessions.valid(token)
    assert "they end when the server stops" in caplog.text
