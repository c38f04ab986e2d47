"""The sheet Function for Open WebUI (openwebui/tagengine_sheet.py, decision OW-5) and `tagengine openwebui
install`: the Function imported as Open WebUI imports it, called as Open WebUI 0.12.4's `chat_action` calls an
Action (utils/actions.py: `body` as the page posts it, `__user__`, `__id__` the sub-action, `__event_call__` the
input box), against a real tagengine server on loopback; the install command against a fake of Open WebUI's
Functions API (routers/functions.py) on loopback."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import io
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from owui_kit import install_dir, site_packages
from owui_kit import python as owui_python
from serve_kit import Fake, Running
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_serve_open_webui import BRANCHES, HEADER, SHOW, Served, path

from tagengine._internal.cli import run
from tagengine._internal.openwebui.function import FUNCTION_ID, function_file

OWUI_SITE = site_packages()  # where ./dev installs Open WebUI: TAGENGINE_OPEN_WEBUI or XDG_CACHE_HOME's


def load_function() -> ModuleType:
    """The Function's module, loaded from its file as Open WebUI loads one (a module made from the source)."""
    spec = importlib.util.spec_from_file_location("function_tagengine_sheet", function_file())
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_function_needs_nothing_open_webui_lacks():
    """OW-5: it imports the standard library, pydantic and Starlette only (Open WebUI runs on FastAPI, itself on
    Starlette); its first docstring is Open WebUI's frontmatter with no `requirements` (which Open WebUI would
    pip-install), and Open WebUI's import rewriting (`replace_imports`) leaves it as it is."""
    text = function_file().read_text(encoding="utf-8")
    tree = ast.parse(text)
    roots = {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
        {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert roots - set(sys.stdlib_module_names) - {"__future__"} == {"pydantic", "starlette"}
    lines = text.splitlines()
    assert lines[0] == '"""'
    front = dict(line.split(":", 1) for line in lines[1:lines.index('"""', 1)])
    assert {"title", "version", "description"} <= set(front) and "requirements" not in front
    assert not any(f"from {m}" in text for m in ("utils", "apps", "main", "config"))
    if (OWUI_SITE / "open_webui").is_dir():  # the installed Open WebUI has both
        assert (OWUI_SITE / "pydantic").is_dir() and (OWUI_SITE / "starlette").is_dir()


def owui_body(model: str, pairs: list[tuple[str, str]], at: int | None = None) -> dict[str, Any]:
    """What Open WebUI's page posts to /api/chat/actions/{id}: the chat's messages (ids and all), the message the
    button is under (`id`), the model, the chat's id."""
    messages = [{"id": f"m{i}", "role": m["role"], "content": m["content"], "timestamp": 1}
                for i, m in enumerate(path(*pairs))]
    return {"model": model, "messages": messages, "chat_id": "owui-chat-1", "session_id": "s1",
            "id": messages[-1 if at is None else at]["id"]}


def played(s: Served) -> list[tuple[str, str]]:
    """Two turns played as Open WebUI plays them (narrations shown): the chat's (user, reply) pairs."""
    pairs: list[tuple[str, str]] = []
    for said in ("one", "two"):
        r = s.post([*path(*pairs), {"role": "user", "content": f"TURN:{said}"}], headers=SHOW)
        pairs.append((said, r.json()["choices"][0]["message"]["content"]))
    return pairs


def act(fn: Any, body: dict[str, Any], sub: str, typed: str | None = None, user: str = "u1") -> str:
    async def ask(event: dict[str, Any]) -> Any:
        assert event["type"] == "input"
        return typed

    got = asyncio.run(fn.action(body=body, __user__={"id": user, "name": "Ann", "role": "user"}, __id__=sub,
                                __event_call__=ask))
    assert got.headers["content-disposition"] == "inline"  # Open WebUI embeds it (process_tool_result)
    return bytes(got.body).decode("utf-8")


def test_the_sheet_shows_the_game_as_the_reply_it_is_under_leaves_it(tmp_path):
    """OW-5: "Game sheet" under the second reply shows the clock at 2/6, the characters, the party and the last
    reply's receipts in words (no tag's brackets); under the first reply, 0/6: the sheet follows the message on
    screen. A model that names no campaign is said plainly."""
    module = load_function()
    with Served(tmp_path, Fake(dict(BRANCHES))) as s:
        pairs = played(s)
        fn = module.Action()
        fn.valves.tagengine_url = s.url
        page = act(fn, owui_body("tagengine:heist", pairs), "sheet")
        assert "Alarm raised" in page and "2/6" in page and "Cutter" in page and "Lurk" in page and "Crew" in page
        assert "clock Alarm raised" in page and "[clock" not in page and "turn 2" in page
        first = act(fn, owui_body("tagengine:heist", pairs, at=2), "sheet")
        assert "0/6" in first and "2/6" not in first
        none = act(fn, owui_body("gpt-4o", pairs), "sheet")
        assert "plays no tagengine campaign" in none
        fn.valves.tagengine_url = "http://127.0.0.1:9"  # nothing listens there
        assert "cannot be reached" in act(fn, owui_body("tagengine:heist", pairs), "sheet")


def test_a_check_is_rolled_from_the_box(tmp_path):
    """OW-5: "Roll a check" asks what to roll (Open WebUI's input event) and rolls it at the reply's state: a bare
    name is tried as a skill, then an ability, then a save; `key=value` is the check as the API takes it; an unknown
    name or an empty box is said, nothing rolled."""
    module = load_function()
    with Served(tmp_path, Fake(dict(BRANCHES))) as s:
        pairs = played(s)
        fn = module.Action()
        fn.valves.tagengine_url = s.url
        body = owui_body("tagengine:heist", pairs)
        skill = act(fn, body, "roll", "Cutter: Prowl")
        assert "Cutter" in skill and "Prowl" in skill and "d6" in skill
        ability = act(fn, body, "roll", "Lurk: Insight")
        assert "Insight" in ability and "d6" in ability
        assert "Prowl" in act(fn, body, "roll", "who=Cutter skill=Prowl")
        assert "unknown save" in act(fn, body, "roll", "Cutter: Flying")
        assert "Nothing to roll" in act(fn, body, "roll", "")
        assert "who rolls what" in act(fn, body, "roll", "Prowl")


def test_the_function_sends_the_user_so_another_users_campaign_stays_shut(tmp_path):
    """OW-5, OW-6: the Function sends the Open WebUI user's id in the valve's header, so with `--user-header` Bob's
    sheet of Alice's campaign is an unknown campaign, and Alice's is hers."""
    module = load_function()
    with Served(tmp_path, Fake(dict(BRANCHES)), user_header=HEADER) as s:
        s.post([*path(), {"role": "user", "content": "TURN:one"}], headers={**SHOW, HEADER: "alice"})
        fn = module.Action()
        fn.valves.tagengine_url = s.url
        body = owui_body("tagengine:heist", [])
        assert "unknown campaign" in act(fn, body, "sheet", user="bob")
        assert "unknown campaign" in act(fn, body, "roll", "Cutter: Prowl", user="bob")
        assert "Alarm raised" not in act(fn, body, "sheet", user="bob")
        assert "Cutter" in act(fn, body, "sheet", user="alice")


def test_what_the_sheet_shows_is_escaped():
    """A name written by a player or the model is text on the Function's page, never markup."""
    module = load_function()
    doc = {"campaign": {"name": "<b>x</b>"}, "turn": 1, "sheet": {
        "ruleset": "r", "clocks": [{"name": "<script>alert(1)</script>", "filled": 1, "size": 4}],
        "characters": [{"name": "<img src=x onerror=alert(1)>", "pools": [], "tracks": [], "states": [],
                        "conditions": [{"label": "<i>", "on": True}]}],
        "receipts": [{"tag": '[clock: name="<u>" tick="1"]', "result": "refused", "reason": "<s>"}]}}
    page = module.sheet_html(doc)
    assert "<script>" not in page and "<img" not in page and "<u>" not in page and "<s>" not in page
    assert "&lt;script&gt;" in page
    card = bytes(module.card("Game sheet", page).body).decode()
    assert card.count("<script>") == 1 and card.endswith(module.FIT)  # only the frame's sizer is markup (OW-14)
    assert 'type:"iframe:height"' in module.FIT  # what Open WebUI 0.12.4's frame listens for


class FakeOpenWebUI:
    """Open WebUI 0.12.4's Functions API as routers/functions.py answers it, for one admin token."""

    TOKEN = "admin-token"

    def __init__(self) -> None:
        self.functions: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def app(self) -> Starlette:
        async def guarded(request: Request) -> Response:
            self.calls.append(f"{request.method} {request.url.path}")
            if request.headers.get("authorization") != f"Bearer {self.TOKEN}":
                return JSONResponse({"detail": "Your session has expired or the token is invalid."}, 401)
            fid = request.path_params.get("id")
            rest = request.path_params.get("rest", "")
            if request.url.path.endswith("/create"):
                form = await request.json()
                if not form["id"].isidentifier() or form["id"] in self.functions:
                    return JSONResponse({"detail": "Uh-oh! This id is already registered."}, 400)
                self.functions[form["id"]] = {**form, "type": "action", "is_active": False, "is_global": False,
                                              "valves": None}
                return JSONResponse(self.functions[form["id"]])
            if fid not in self.functions:
                return JSONResponse({"detail": "We could not find what you're looking for :/"}, 401)
            f = self.functions[fid]
            if rest == "":
                return JSONResponse(f)
            if rest == "update":
                f.update(await request.json())
            elif rest == "valves/update":
                f["valves"] = await request.json()
            elif rest == "toggle":
                f["is_active"] = not f["is_active"]
            elif rest == "toggle/global":
                f["is_global"] = not f["is_global"]
            return JSONResponse(f)

        return Starlette(routes=[Route("/api/v1/functions/create", guarded, methods=["POST"]),
                                 Route("/api/v1/functions/id/{id}", guarded, methods=["GET"]),
                                 Route("/api/v1/functions/id/{id}/{rest:path}", guarded, methods=["POST"])])


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_install_creates_then_updates_the_function_on_for_every_model(monkeypatch):
    """OW-5: `tagengine openwebui install` creates the Function with this repository's source, sets its valves,
    turns it on and global; run again it updates the same Function and leaves both flags on (each toggle flips, so
    it is called only when a flag is off)."""
    fake = FakeOpenWebUI()
    with Running(fake.app()) as owui:
        code, out, err = cli("openwebui", "install", "--url", owui.url, "--token", FakeOpenWebUI.TOKEN,
                             "--server", "http://tagengine.lan:5005", "--api-key", "k3y")
        assert code == 0, err
        assert "installed" in out
        f = fake.functions[FUNCTION_ID]
        assert f["content"] == function_file().read_text(encoding="utf-8")
        assert f["valves"] == {"tagengine_url": "http://tagengine.lan:5005", "api_key": "k3y",
                               "user_header": "X-OpenWebUI-User-Id"}
        assert f["is_active"] and f["is_global"]
        monkeypatch.setenv("OPEN_WEBUI_TOKEN", FakeOpenWebUI.TOKEN)
        monkeypatch.setenv("TAGENGINE_API_KEY", "k3y-from-env")  # neither secret on the command line
        code, out, err = cli("openwebui", "install", "--url", owui.url, "--server", "http://tagengine.lan:5005")
        assert code == 0 and "updated" in out, err
        assert f["valves"]["api_key"] == "k3y-from-env"
        assert f["is_active"] and f["is_global"]
        assert sum(c.endswith("/toggle") for c in fake.calls) == 1
        assert sum(c.endswith("/create") for c in fake.calls) == 1


def test_install_says_why_it_stopped(monkeypatch):
    """OW-5: a wrong token, an Open WebUI not there, no token at all: exit 1 (2 for no token) naming the step and
    Open WebUI's own words; nothing half made."""
    fake = FakeOpenWebUI()
    monkeypatch.delenv("OPEN_WEBUI_TOKEN", raising=False)
    with Running(fake.app()) as owui:
        code, _, err = cli("openwebui", "install", "--url", owui.url, "--token", "wrong")
        assert code == 1 and "read the Function" in err and "token is invalid" in err and "admin" in err
        assert fake.functions == {}
        code, _, err = cli("openwebui", "install", "--url", owui.url)
        assert code == 2 and "OPEN_WEBUI_TOKEN" in err
    code, _, err = cli("openwebui", "install", "--url", "http://127.0.0.1:9", "--token", "t")
    assert code == 1 and "cannot be reached" in err


def test_the_function_is_printed_for_pasting():
    code, out, _ = cli("openwebui", "function")
    assert code == 0 and out == function_file().read_text(encoding="utf-8")
    code, out, _ = cli("openwebui", "function", "--path")
    assert code == 0 and out.strip() == str(function_file())


@pytest.mark.slow  # a fresh interpreter: Open WebUI's
def test_the_function_loads_in_open_webuis_own_python():
    """OW-5: in the installed Open WebUI's interpreter (its pydantic, its Starlette), the Function loads, its valves
    and sub-actions are there, and its answer is the `HTMLResponse` Open WebUI's `process_tool_result` embeds
    (FastAPI's name for Starlette's class). Skipped without the install in the cache."""
    python = owui_python()
    if not (OWUI_SITE / "open_webui").is_dir() or not python.exists():
        pytest.skip(f"Open WebUI 0.12.4 is not installed in {install_dir()} (./dev installs it)")
    probe = ("import asyncio, importlib.util, sys\n"
             "spec = importlib.util.spec_from_file_location('function_tagengine_sheet', sys.argv[1])\n"
             "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
             "from fastapi.responses import HTMLResponse\n"
             "a = m.Action()\n"
             "r = asyncio.run(a.action(body={'model': 'x', 'messages': []}, __id__='roll', __event_call__=None))\n"
             "print(sorted(a.valves.model_dump()), [x['id'] for x in a.actions], isinstance(r, HTMLResponse),\n"
             "      r.headers['content-disposition'])\n")
    got = subprocess.run([str(python), "-c", probe, str(function_file())], capture_output=True, text=True,
                         timeout=300, cwd=install_dir(), check=False)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split("\n")[0] == ("['api_key', 'tagengine_url', 'timeout', 'user_header'] ['sheet', 'roll'] "
                                         "True inline")


def test_install_follows_no_redirect_so_the_token_goes_only_to_the_url_given():
    """OW-5: the admin's token is sent to `--url` and nowhere else. Python's urllib follows a redirect with every
    header but the body's, Authorization included, to any host: an Open WebUI behind a proxy that redirects (or
    anything answering at that address) would get the token sent on to where it points. A redirect stops the
    install, naming where it pointed."""
    seen: list[str | None] = []

    async def elsewhere(request: Request) -> Response:
        seen.append(request.headers.get("authorization"))
        return JSONResponse({"detail": "We could not find what you're looking for :/"}, 401)

    async def redirecting(request: Request) -> Response:
        return Response(status_code=302, headers={"location": f"{other.url}{request.url.path}"})

    with Running(Starlette(routes=[Route("/{rest:path}", elsewhere, methods=["GET", "POST"])])) as other, \
            Running(Starlette(routes=[Route("/{rest:path}", redirecting, methods=["GET", "POST"])])) as owui:
        code, _, err = cli("openwebui", "install", "--url", owui.url, "--token", "admin-secret")
        assert seen == []
        assert code == 1 and "redirect" in err and other.url in err


def test_the_function_follows_no_redirect_so_the_key_goes_only_to_its_valve():
    """OW-5: the Function sends tagengine's API key and the user's id to the valve's address and nowhere else
    (urllib would send them on to wherever a redirect points, any host); a redirect is said on the card."""
    module = load_function()
    seen: list[str | None] = []

    async def elsewhere(request: Request) -> Response:
        seen.append(request.headers.get("authorization"))
        return JSONResponse({"campaign": {"name": "heist"}, "sheet": {}})

    async def redirecting(request: Request) -> Response:
        return Response(status_code=302, headers={"location": f"{other.url}{request.url.path}"})

    with Running(Starlette(routes=[Route("/{rest:path}", elsewhere, methods=["GET", "POST"])])) as other, \
            Running(Starlette(routes=[Route("/{rest:path}", redirecting, methods=["POST"])])) as tagengine:
        fn = module.Action()
        fn.valves.tagengine_url, fn.valves.api_key = tagengine.url, "s3cret"
        shown = act(fn, owui_body("tagengine:heist", []), "sheet")
        assert seen == []
        assert "redirect" in shown
