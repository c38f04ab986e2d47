"""Issue 26 items 5 and 8 (decisions TR-1..TR-3): what the server believes of a request's Host and Origin, CORS
for an `--allow-origin` page, who may frame the pages, and `--trust-proxy`.

A real server on loopback (make_app under uvicorn, tests/serve_kit.py) in front of the scripted upstream; a
real headless Chromium where the browser is the point (a page on another origin that posts to the server and
frames its pages, a name rebound to 127.0.0.1 with Chromium's own resolver rules); the real `tagengine serve`
for `--trust-proxy`, which is uvicorn's configuration."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_kit import launched
from serve_kit import Fake, Running
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from test_serve import SCRIPT, make_campaigns

from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext

TURN = {"model": "m", "messages": [{"role": "user", "content": "TURN:one"}]}


@contextmanager
def serving(tmp_path: Path, **options: Any) -> Iterator[tuple[str, Fake, ServerContext]]:
    data = tmp_path / "data"
    make_campaigns(data)
    fake = Fake(SCRIPT)
    with Running(fake.app()) as up:
        app = make_app(Options(upstream=f"{up.url}/v1", data=data, campaign="heist", **options))
        with Running(app) as srv:
            yield srv.url, fake, app.state.context


def kept_head(ctx: ServerContext) -> tuple[str, int, str]:
    """The pages' newest turn, once the turn that answered has kept it (after its answer went, S-24)."""
    for _ in range(500):  # bounded: 5 s
        head = ctx.store.head("heist")
        if head is not None:
            return head
        time.sleep(0.01)
    raise AssertionError("the turn kept no head")


def post(url: str, headers: dict[str, str], body: Any = TURN, path: str = "/v1/chat/completions") -> httpx.Response:
    with httpx.Client(timeout=30) as h:
        return h.post(url + path, content=json.dumps(body), headers=headers)


# -- Host: a name rebound to 127.0.0.1 reads nothing (TR-1)

def test_a_host_the_server_does_not_answer_to_is_refused_before_anything_runs(tmp_path):
    with serving(tmp_path) as (url, fake, ctx):
        assert post(url, {}).status_code == 200  # a turn: the prompt page and the next dice have something to show
        head = kept_head(ctx)
        port = url.rsplit(":", 1)[1]
        with httpx.Client(timeout=30, headers={"host": f"attacker.example:{port}"}) as h:
            for path in ("/ui/", "/ui/c/heist", "/ui/c/heist/prompt", "/ui/c/heist/version", "/v1/models"):
                r = h.get(url + path)
                assert r.status_code == 400, path
                assert r.json()["error"]["code"] == "host_not_allowed" and "attacker.example" in r.text
                assert "heist" not in r.text and "Cutter" not in r.text
            r = h.post(url + "/v1/chat/completions", json=TURN)
            assert r.status_code == 400 and r.headers["x-content-type-options"] == "nosniff"
            assert h.get(url + "/healthz").status_code == 200  # says nothing, and a probe may use any name
        assert len(fake.bodies) == 1 and ctx.store.head("heist") == head  # the upstream was never asked again
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost.", "[::1]:5005", "10.1.2.3", "LOCALHOST"):
            with httpx.Client(timeout=30, headers={"host": host}) as h:
                assert h.get(url + "/ui/c/heist/prompt").status_code == 200, host


def test_allow_host_names_more_and_a_star_any(tmp_path):
    from tagengine._internal.server.guard.origins import host_names

    with serving(tmp_path, allow_host=("Game.LAN.",)) as (url, _, _), httpx.Client(timeout=30) as h:
        assert h.get(url + "/ui/", headers={"host": "game.lan:5005"}).status_code == 200
        assert h.get(url + "/ui/", headers={"host": "other.lan"}).status_code == 400
    assert host_names("127.0.0.1", ["*"]) is None
    assert host_names("mybox.lan", []) == {"localhost", "mybox.lan"}
    assert host_names("::1", []) == {"localhost"}


def test_listening_on_every_address_answers_to_this_machines_name():
    import socket

    from tagengine._internal.server.guard.origins import host_names

    own = socket.gethostname().lower()
    names = host_names("0.0.0.0", ["game.lan"])
    assert names is not None and {own, own.split(".")[0] + ".local", "game.lan", "localhost"} <= names


@pytest.mark.parametrize(("value", "split"), [("a.example:80", ("a.example", 80)), ("[::1]:5", ("::1", 5)),
                                              ("[::1]", ("::1", None)), ("A.Example.", ("a.example", None)),
                                              ("a:b", ("", None)), ("[::1]x", ("", None)), ("::1", ("::1", None))])
def test_a_host_header_is_split_into_its_name_and_port(value, split):
    from tagengine._internal.server.guard.origins import split_host

    assert split_host(value) == split


# -- Origin: a page of another origin changes nothing (TR-2)

@pytest.mark.parametrize("headers", [
    {"origin": "http://evil.example", "content-type": "text/plain"},
    {"origin": "null", "content-type": "text/plain"},
    {"origin": "http://127.0.0.1:1", "content-type": "application/x-www-form-urlencoded"},
    {"sec-fetch-site": "cross-site", "content-type": "text/plain"},
    {"sec-fetch-site": "same-site"}])
def test_a_post_from_another_origin_is_refused_and_the_sheet_does_not_move(tmp_path, headers):
    with serving(tmp_path) as (url, fake, ctx):
        r = post(url, headers)
        assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
        assert "--allow-origin" in r.text and "access-control-allow-origin" not in r.headers
        assert fake.bodies == [] and ctx.store.head("heist") is None
        for path in ("/tagengine/api/checks", "/ui/login", "/ui/check"):
            assert post(url, headers, {}, path).status_code == 403, path


def test_a_request_with_no_origin_or_the_servers_own_goes_on(tmp_path):
    with serving(tmp_path) as (url, fake, ctx):
        port = url.rsplit(":", 1)[1]
        for headers in ({}, {"origin": url}, {"origin": f"http://localhost:{port}", "host": f"localhost:{port}"},
                        {"sec-fetch-site": "same-origin"}, {"sec-fetch-site": "none"}):
            assert post(url, headers).status_code == 200, headers
        assert len(fake.bodies) == 5 and kept_head(ctx)


def test_an_allowed_origin_gets_cors_with_the_tagengine_headers(tmp_path):
    st = "http://127.0.0.1:8000"
    with serving(tmp_path, allow_origin=(st + "/",)) as (url, fake, _):
        with httpx.Client(timeout=30) as h:
            pre = h.options(url + "/v1/chat/completions", headers={
                "origin": st, "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type, x-tagengine-type"})
            assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == st
            assert "x-tagengine-type" in pre.headers["access-control-allow-headers"].lower()
            r = h.post(url + "/v1/chat/completions", json=TURN, headers={"origin": st})
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == st
            exposed = r.headers["access-control-expose-headers"].lower()
            assert "x-tagengine-campaign" in exposed and "x-tagengine-tokens" in exposed
            other = h.options(url + "/v1/chat/completions", headers={"origin": "http://evil.example",
                                                                      "access-control-request-method": "POST"})
            assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
            assert h.post(url + "/v1/chat/completions", json=TURN, headers={"origin": "http://evil.example"}
                          ).status_code == 403
        assert len(fake.bodies) == 1


def test_without_an_allowed_origin_no_preflight_is_answered(tmp_path):
    with serving(tmp_path) as (url, _, _), httpx.Client(timeout=30) as h:
        pre = h.options(url + "/v1/chat/completions", headers={"origin": "http://127.0.0.1:8000",
                                                                "access-control-request-method": "POST"})
        assert pre.status_code == 405 and "access-control-allow-origin" not in pre.headers


def test_origins_are_compared_as_the_browser_writes_them():
    from tagengine._internal.server.guard.origins import allowed_origins, origin_of

    assert origin_of("HTTP://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert origin_of("https://a.example:443") == "https://a.example"
    assert origin_of("http://[::1]:8000") == "http://[::1]:8000"
    for bad in ("null", "file:///x", "http://a.example/path", "127.0.0.1:8000", "http://u@a.example", "http://a:x"):
        assert origin_of(bad) is None, bad
    with pytest.raises(ValueError, match=r"--allow-origin 'http://a\.example/st'"):
        allowed_origins(["http://a.example/st"])


def test_the_pages_say_who_may_frame_them_and_nosniff(tmp_path):
    with serving(tmp_path) as (url, _, _), httpx.Client(timeout=30) as h:
        for path in ("/ui/", "/ui/c/heist", "/ui/pages.css", "/ui/login"):
            r = h.get(url + path)
            assert r.headers["x-content-type-options"] == "nosniff", path
            assert r.headers["content-security-policy"] == "frame-ancestors 'none'"
            assert r.headers["x-frame-options"] == "DENY"
    with serving(tmp_path / "2", allow_origin=("http://127.0.0.1:8000",)) as (url, _, _), \
            httpx.Client(timeout=30) as h:
        r = h.get(url + "/ui/c/heist")
        assert r.headers["content-security-policy"] == "frame-ancestors http://127.0.0.1:8000"
        assert "x-frame-options" not in r.headers


def test_an_origin_that_is_not_one_is_a_usage_error(tmp_path):
    import io

    from tagengine._internal.cli import run

    err = io.StringIO()
    code = run(["serve", "--upstream", "demo", "--data", str(tmp_path), "--allow-origin", "127.0.0.1:8000"],
               io.StringIO(), err)
    assert code == 2 and "an origin is scheme://host[:port]" in err.getvalue()


# -- in a real browser

@pytest.fixture(scope="module")
def rebinding_browser() -> Iterator[Any]:
    """Chromium that resolves attacker.example to 127.0.0.1: a DNS rebinding, done by the browser's resolver."""
    yield from launched("--host-resolver-rules=MAP attacker.example 127.0.0.1,MAP st.example 127.0.0.1")


def page_server(shown: dict[str, str]) -> Running:
    """A web page of its own origin: `shown["html"]`, read at each request (set once the server's URL is known)."""
    async def index(request: Any) -> HTMLResponse:
        return HTMLResponse(shown["html"])

    return Running(Starlette(routes=[Route("/", index)]))


ATTACK = """<!doctype html><title>a page the player visits</title>
<iframe id="f" src="SERVER/ui/c/heist" width="400" height="300"></iframe>
<form id="form" method="post" action="SERVER/v1/chat/completions" enctype="text/plain" target="sink">
<input name='{"model": "m", "messages": [{"role": "user", "content": "TURN:one"}], "x": "' value='"}'></form>
<iframe name="sink"></iframe>
<script>
window.done = (async () => {
  const body = JSON.stringify({model: "m", messages: [{role: "user", content: "TURN:one"}]});
  await fetch("SERVER/v1/chat/completions", {method: "POST", mode: "no-cors", body,
                                             headers: {"Content-Type": "text/plain"}}).catch(() => null);
  try { await (await fetch("SERVER/v1/models")).text(); window.readModels = true; }
  catch (e) { window.readModels = false; }
  document.getElementById("form").submit();
  return true;
})();
</script>"""


def test_a_page_on_another_origin_can_neither_play_a_turn_nor_frame_the_sheet(rebinding_browser, tmp_path):
    """Issue 26 item 5, the attack itself: a text/plain fetch (no preflight) and a form post from another
    origin, and an iframe of the sheet. Before, the fetch was applied (the sheet moved)."""
    with serving(tmp_path) as (url, fake, ctx), page_server({"html": ATTACK.replace("SERVER", url)}) as evil:
        page = rebinding_browser.new_page()
        with page.expect_response(lambda r: r.request.method == "POST" and r.request.resource_type == "document",
                                  timeout=30_000) as posted:
            page.goto(evil.url + "/")
            assert page.evaluate("window.done") is True
        assert posted.value.status == 403  # the form's post, which the page cannot read
        assert page.evaluate("window.readModels") is False  # CORS: no answer is readable
        sheet = page.query_selector("#f").content_frame()
        assert sheet is not None and "Cutter" not in sheet.content()  # not drawn in another origin's frame
        assert fake.bodies == [] and ctx.store.head("heist") is None  # nothing was played
        page.close()


def test_a_rebound_name_reads_nothing_in_a_real_browser(rebinding_browser, tmp_path):
    with serving(tmp_path) as (url, _, _):
        assert post(url, {}).status_code == 200
        port = url.rsplit(":", 1)[1]
        page = rebinding_browser.new_page()
        got = page.goto(f"http://attacker.example:{port}/ui/c/heist/prompt")
        assert got is not None and got.status == 400 and "Cutter" not in page.content()
        assert "host_not_allowed" in page.content()
        page.close()


SILLYTAVERN = """<!doctype html><title>an extension's page</title>
<iframe id="f" src="SERVER/ui/c/heist" width="400" height="300"></iframe>
<script>
window.done = (async () => {
  const body = JSON.stringify({model: "m", messages: [{role: "user", content: "TURN:one"}]});
  const r = await fetch("SERVER/v1/chat/completions", {method: "POST", body,
    headers: {"Content-Type": "application/json", "X-Tagengine-Type": "normal"}});
  const text = (await r.json()).choices[0].message.content;
  return {status: r.status, campaign: r.headers.get("x-tagengine-campaign"), text};
})();
</script>"""


def test_an_allowed_origins_page_plays_reads_the_headers_and_frames_the_sheet(rebinding_browser, tmp_path):
    shown = {"html": ""}
    with page_server(shown) as st:
        origin = st.url.replace("127.0.0.1", "st.example")  # another origin than the server's, by name
        with serving(tmp_path, allow_origin=(origin,)) as (url, fake, ctx):
            shown["html"] = SILLYTAVERN.replace("SERVER", url)
            page = rebinding_browser.new_page()
            page.goto(origin + "/")
            got = page.evaluate("window.done")
            assert got["status"] == 200 and got["campaign"] == "heist" and "result=" in got["text"]
            assert len(fake.bodies) == 1 and kept_head(ctx)
            frame = page.frame_locator("#f")
            assert frame.locator("h1").count() >= 1  # the sheet is drawn inside the frame
            page.close()


# -- --trust-proxy: the real command (uvicorn's own proxy headers), TR-3

@contextmanager
def tagengine_serve(tmp_path: Path, *extra: str) -> Iterator[str]:
    data = tmp_path / "data"
    make_campaigns(data)
    exe = Path(sys.executable).parent / "tagengine"
    proc = subprocess.Popen([str(exe), "serve", "--upstream", "demo", "--port", "0", "--data", str(data),
                             "--api-key", "K", *extra], stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for _ in range(200):  # bounded: uvicorn says where it listens within its first lines
            line = proc.stderr.readline()
            found = re.search(r"Uvicorn running on (\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the server did not start"
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def sign_in(url: str, headers: dict[str, str], key: str = "K") -> httpx.Response:
    with httpx.Client(timeout=30) as h:
        return h.post(url + "/ui/login", data={"key": key, "next": "/ui/"}, headers=headers)


def test_the_cookie_is_secure_behind_a_trusted_https_proxy_only(tmp_path):
    forwarded = {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.7"}
    with tagengine_serve(tmp_path / "a") as url:  # no --trust-proxy: the headers are anyone's
        r = sign_in(url, forwarded)
        assert r.status_code == 303 and "secure" not in r.headers["set-cookie"].lower()
    with tagengine_serve(tmp_path / "b", "--trust-proxy") as url:  # a proxy on this machine
        r = sign_in(url, forwarded)
        assert r.status_code == 303
        assert "secure" in {a.strip().lower() for a in r.headers["set-cookie"].split(";")}
        assert "secure" not in sign_in(url, {}).headers["set-cookie"].lower()  # plain http through it
        # wrong keys count per client: the proxy's X-Forwarded-For is believed
        codes = [sign_in(url, {"x-forwarded-for": "203.0.113.9"}, "wrong").status_code for _ in range(11)]
        assert codes == [401] * 10 + [429]
        assert sign_in(url, {"x-forwarded-for": "203.0.113.10"}).status_code == 303


def test_without_trust_proxy_a_forged_client_address_does_not_reset_the_limit(tmp_path):
    with tagengine_serve(tmp_path) as url:
        codes = [sign_in(url, {"x-forwarded-for": f"198.51.100.{n}"}, "wrong").status_code for n in range(11)]
        assert codes == [401] * 10 + [429]
