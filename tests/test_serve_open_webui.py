"""Open WebUI as the chat app (docs/open-webui.md, decisions OW-1, OW-2, OW-6): its task requests are quiet, the
model picker picks the campaign, and with `--user-header` one user's chats neither see nor move another's campaign.

A real server on loopback (make_app under uvicorn) in front of the scripted upstream (tests/serve_kit.py); the
requests are shaped as Open WebUI 0.12.4 sends them (its routers/tasks.py, utils/middleware.py, config.py's default
templates, utils/headers.py's custom headers). The task names and templates are read from the installed Open WebUI
when the cache holds it (`./dev` installs it for the end-to-end lane), else from the copies below, which a test holds
to the installed files when they are there."""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import time
from pathlib import Path

import httpx
import pytest
from owui_kit import install_dir, site_packages
from serve_kit import Fake, Running
from test_serve import make_campaigns, serving
from test_serve_quiet import TITLE_TASK

from conftest import SAMPLES
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.limits import MAX_USER_ID
from tagengine._internal.server.turn.quiet import quiet_reason
from tagengine._internal.server.turn.request import CAMPAIGN_MODEL, MarkedHistory, campaign_choice, model_campaign

OWUI = site_packages() / "open_webui"  # where ./dev installs it: TAGENGINE_OPEN_WEBUI or XDG_CACHE_HOME's
# Open WebUI 0.12.4's TASKS (constants.py): every value its `{{TASK}}` header template can take, but empty
TASKS = ("title_generation", "follow_up_generation", "tags_generation", "emoji_generation", "query_generation",
         "image_prompt_generation", "autocomplete_generation", "function_calling", "moa_response_generation")
# the first line of each default task template (config.py), the rest as a chat fills it in
TEMPLATES = {
    "DEFAULT_TITLE_GENERATION_PROMPT_TEMPLATE": "### Task:\nGenerate a concise title summarizing the chat history.",
    "DEFAULT_TAGS_GENERATION_PROMPT_TEMPLATE": "### Task:\nGenerate 1-3 broad tags categorizing the main themes",
    "DEFAULT_IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE": "### Task:\nGenerate a detailed prompt for am image",
    "DEFAULT_FOLLOW_UP_GENERATION_PROMPT_TEMPLATE": "### Task:\nPredict 3-5 useful messages this user might",
    "DEFAULT_QUERY_GENERATION_PROMPT_TEMPLATE": "### Task:\nAnalyze the chat history to determine the necessity",
    "DEFAULT_AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE": "### Task:\nYou are an autocompletion system.",
    "DEFAULT_EMOJI_GENERATION_PROMPT_TEMPLATE": "Your task is to reflect the speaker's likely facial expression",
    "DEFAULT_MOA_GENERATION_PROMPT_TEMPLATE": "You have been provided with a set of responses from various models",
}
RAG = "### Task:\nRespond to the user query using the provided context, incorporating inline citations"
TOOLS = "Available Tools: []\n\nYour task is to choose and return the correct tool(s)"
SCRIPT = {"one": 'The lock gives. [clock: name="Alarm raised" size="6"]',
          "two": 'Boots on the stair. [clock: name="Alarm raised" tick="2"]',
          TITLE_TASK: '{"title": "Bells [clock: name="Alarm raised" tick="1"]"}'}


def installed_templates() -> dict[str, str]:
    """The installed Open WebUI's default templates by name, or {} without it."""
    if not (OWUI / "config.py").is_file():
        return {}
    tree = ast.parse((OWUI / "config.py").read_text(encoding="utf-8"))
    return {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str) for t in n.targets if isinstance(t, ast.Name) and t.id in TEMPLATES}


def test_the_copies_are_open_webuis_own():
    """The task names and templates above are Open WebUI 0.12.4's (skipped without its install in the cache)."""
    if not OWUI.is_dir():
        pytest.skip(f"Open WebUI 0.12.4 is not installed in {install_dir()} (./dev installs it)")
    text = (OWUI / "constants.py").read_text(encoding="utf-8")
    tasks = text[text.index("class TASKS"):]
    assert sorted(TASKS) == sorted(v for v in ast.literal_eval(f"[{', '.join(_quoted(tasks))}]"))
    got = installed_templates()
    assert set(got) == set(TEMPLATES)
    for name, start in TEMPLATES.items():
        assert got[name].startswith(start), name
    assert ast.literal_eval(_assigned(OWUI / "config.py", "DEFAULT_RAG_TEMPLATE")).startswith(RAG)


def _quoted(text: str) -> list[str]:
    return [line.split("=", 1)[1].strip() for line in text.splitlines()[1:]
            if "= '" in line and line.strip()[:1].isupper() and "lambda" not in line]


def _assigned(path: Path, name: str) -> str:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in n.targets))
    return ast.unparse(node.value)


@pytest.mark.parametrize("task", TASKS)
def test_every_task_open_webui_names_is_quiet(task):
    """OW-2: each value of `{{TASK}}` but the empty one is quiet, whatever the request's text."""
    turn = [{"role": "user", "content": "We slip in."}]
    assert quiet_reason({"x-tagengine-type": task}, {}, turn) == f"x-tagengine-type: {task}"


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_default_task_template_is_quiet_without_the_header(name):
    """OW-2, TR-10: without the header, each default task prompt as Open WebUI sends it (one user message) is quiet;
    with the header empty (a chat's own turn) it is a turn."""
    text = installed_templates().get(name) or TEMPLATES[name] + " ..."
    sent = [{"role": "user", "content": text}]
    assert quiet_reason({}, {}, sent) is not None
    assert quiet_reason({"x-tagengine-type": ""}, {}, sent) is None


def test_a_turn_with_a_file_is_a_turn_and_a_tool_choice_is_not():
    """OW-2: a chat turn with a file attached starts its user message with the RAG template's "### Task:" (Open
    WebUI puts the context before the query): a turn, with the header empty or without it. Before OW-2 it was
    taken for a task and went to the model untaught. The function-calling task (a system message "Available
    Tools:" and one user message) is quiet without the header."""
    chat = [{"role": "assistant", "content": "The canal is dark."}, {"role": "user", "content": f"{RAG}\n<context>"}]
    assert quiet_reason({}, {}, chat) is None
    assert quiet_reason({"x-tagengine-type": ""}, {}, chat) is None
    tools = [{"role": "system", "content": TOOLS}, {"role": "user", "content": "Query: pick the lock"}]
    assert quiet_reason({}, {}, tools) is not None
    assert quiet_reason({}, {}, [{"role": "system", "content": "Available Tools: none"}, *chat]) is None


def test_a_model_id_names_a_campaign_after_the_marker():
    """OW-1: `tagengine:NAME` in `model` chooses the campaign, after a marker and before the /c/NAME prefix."""
    plain, marked = MarkedHistory(None, []), MarkedHistory("heist", [])
    assert campaign_choice(plain, None, "vault", None, "tagengine:heist") == ("heist", "model")
    assert campaign_choice(marked, None, None, None, "tagengine:vault") == ("heist", "marker")
    assert campaign_choice(plain, None, "vault", None, "gpt-4o") == ("vault", "url")
    assert campaign_choice(plain, None, None, None, "tagengine:") is None
    assert model_campaign("tagengine:" + "x" * 300) is None and model_campaign(["tagengine:heist"]) is None


class Served:
    """The scripted upstream and a server in front of it, on loopback (`test_serve.serving`), with its context."""

    def __init__(self, tmp_path: Path, fake: Fake, **options) -> None:
        self.fake, self.serving = fake, serving(tmp_path, fake, **options)

    def __enter__(self) -> Served:
        srv = self.serving.__enter__()
        self.url, self.ctx = srv.url, srv.server.config.app.state.context
        return self

    def __exit__(self, *exc: object) -> None:
        self.serving.__exit__(*exc)

    def post(self, messages, model="tagengine:heist", headers=None, stream=False) -> httpx.Response:
        body = {"model": model, "messages": messages, "stream": stream}
        return httpx.post(f"{self.url}/v1/chat/completions", json=body, headers=headers, timeout=30)


def user_turn(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are the GM."}, {"role": "user", "content": f"TURN:{text}"}]


def test_the_model_list_is_the_campaign_list_and_the_upstream_gets_its_own_model(tmp_path):
    """OW-1: `/v1/models` lists the upstream's models, then one per campaign (`tagengine:heist`, named for people);
    a turn that names one plays that campaign and the upstream is sent its own first model in its place (or
    --upstream-model); a task for that chat passes through quiet with the upstream's model too; an unknown
    campaign's model is a 404 that names it."""
    fake = Fake(dict(SCRIPT))
    with Served(tmp_path, fake) as s:
        listed = httpx.get(f"{s.url}/v1/models").json()["data"]
        assert [m["id"] for m in listed] == ["scripted", "tagengine:heist", "tagengine:vault"]
        assert listed[1]["name"] == "heist (tagengine campaign)"
        r = s.post(user_turn("one"))
        assert r.status_code == 200 and r.headers["x-tagengine-campaign"] == "heist"
        assert 'result="ok"' in r.json()["choices"][0]["message"]["content"]
        assert json.loads(fake.bodies[-1])["model"] == "scripted"
        q = s.post([{"role": "user", "content": TITLE_TASK}], headers={"x-tagengine-type": "title_generation"})
        assert q.headers["x-tagengine-quiet"] == "x-tagengine-type: title_generation"
        assert json.loads(fake.bodies[-1]) == {"model": "scripted", "stream": False,
                                               "messages": [{"role": "user", "content": TITLE_TASK}]}
        gone = s.post(user_turn("one"), model="tagengine:heits")
        assert gone.status_code == 404 and "heits" in gone.json()["error"]["message"]
    with Served(tmp_path, fake, upstream_model="big-model") as s:
        assert s.post(user_turn("one")).status_code == 200
        assert json.loads(fake.bodies[-1])["model"] == "big-model"


def test_the_upstream_model_is_asked_for_when_no_list_was_read(tmp_path):
    """OW-1: a first request naming a campaign's model before any model list: the server asks the upstream's list
    and keeps its first model, which the request is sent with."""
    fake = Fake(dict(SCRIPT))
    with Served(tmp_path, fake) as s:
        assert s.ctx.real_model is None
        assert s.post(user_turn("one"), stream=True).status_code == 200
        assert s.ctx.real_model == "scripted" and json.loads(fake.bodies[-1])["model"] == "scripted"


HEADER = "X-OpenWebUI-User-Id"


def test_one_users_chats_never_read_or_move_another_users_campaign(tmp_path):
    """OW-6: with `--user-header X-OpenWebUI-User-Id` the first user who plays a campaign owns it; another user's
    turn, state, check, campaign list and /c/NAME model list treat it as unknown (a 404 like a name that is not
    there), and so does a request naming no user; a campaign nobody owns is listed to each; Alice's own play goes
    on. `/v1/models` lists every campaign to every request (OW-12: Open WebUI keeps one model registry for all its
    users, and its own model access control decides whose picker shows which)."""
    fake = Fake(dict(SCRIPT))
    alice, bob = {HEADER: "alice-0001"}, {HEADER: "bob-0002"}
    with Served(tmp_path, fake, user_header=HEADER) as s:
        assert s.post(user_turn("one"), headers=alice).status_code == 200
        for _ in range(300):  # bounded, about 3 s: Alice's reply is kept once its answer has gone (S-24)
            if s.ctx.store.head("heist") is not None:
                break
            time.sleep(0.01)
        before = s.ctx.store.head("heist")
        assert before is not None
        for who in (bob, {}):
            r = s.post(user_turn("one"), headers=who)
            assert r.status_code == 404 and r.json()["error"]["code"] == "campaign_not_found"
            state = httpx.post(f"{s.url}/tagengine/api/state", json={"campaign": "heist", "messages": []},
                               headers=who)
            assert state.status_code == 404 and "sheet" not in state.text
            check = httpx.post(f"{s.url}/tagengine/api/checks", headers=who, json={
                "campaign": "heist", "messages": [], "check": {"who": "Cutter", "skill": "Finesse"}})
            assert check.status_code == 404
            ids = [m["id"] for m in httpx.get(f"{s.url}/v1/models", headers=who).json()["data"]]
            assert "tagengine:heist" in ids and "tagengine:vault" in ids  # the registry's, not a picker (OW-12)
            assert httpx.get(f"{s.url}/c/heist/v1/models", headers=who).status_code == 404
            names = [c["name"] for c in httpx.get(f"{s.url}/tagengine/api/campaigns", headers=who).json()["campaigns"]]
            assert names == ["vault"]
        time.sleep(0.2)  # bounded: what a refused turn would have kept
        assert s.ctx.store.head("heist") == before
        assert "tagengine:heist" in [m["id"] for m in httpx.get(f"{s.url}/v1/models", headers=alice).json()["data"]]
        mine = httpx.post(f"{s.url}/tagengine/api/state", json={"campaign": "heist", "messages": []}, headers=alice)
        assert mine.status_code == 200 and mine.json()["campaign"]["name"] == "heist"
    with Served(tmp_path, fake) as s:  # without the option: as before, every campaign to every request
        assert s.post(user_turn("one"), headers=bob).status_code == 200


def test_the_sheets_api_and_a_campaigns_url_are_shut_to_another_user_too(tmp_path):
    """OW-6, docs/security.md: every route a chat app calls, the sheets' JSON API (read, draft, edit) and the
    `/c/NAME` prefix (its model list and its turns) among them, answers another user's campaign as unknown, and
    moves nothing of it."""
    alice, bob = {HEADER: "alice"}, {HEADER: "bob"}
    with Served(tmp_path, Fake(dict(SCRIPT)), user_header=HEADER) as s:
        assert s.ctx.store.claim("heist", "alice") == "alice"
        api = f"{s.url}/tagengine/api/c/heist"
        for who in (bob, {}):
            assert httpx.get(api, headers=who).status_code == 404
            assert httpx.get(f"{api}/characters/Cutter", headers=who).status_code == 404
            assert httpx.post(f"{api}/draft/characters/Cutter", json={"changes": []}, headers=who).status_code == 404
            change = {"changes": [{"op": "set", "path": "x", "value": 1}]}
            edit = httpx.post(f"{api}/characters/Cutter", headers=who, json=change)
            assert edit.status_code == 404 and edit.json()["error"]["code"] == "campaign_not_found"
            assert httpx.get(f"{s.url}/c/heist/v1/models", headers=who).status_code == 404
            turn = httpx.post(f"{s.url}/c/heist/v1/chat/completions", headers=who, timeout=30,
                              json={"model": "gpt-4o", "messages": user_turn("one")})
            assert turn.status_code == 404
        assert s.ctx.store.head("heist") is None and s.ctx.store.owners() == {"heist": "alice"}
        assert httpx.get(api, headers=alice).status_code == 200


def test_a_user_id_too_long_or_not_printable_is_refused(tmp_path):
    """OW-6, SEC-1: the user header is bounded (MAX_USER_ID characters, both sides of the bound) and printable."""
    fake = Fake(dict(SCRIPT))
    with Served(tmp_path, fake, user_header=HEADER) as s:
        assert s.post(user_turn("one"), headers={HEADER: "u" * MAX_USER_ID}).status_code == 200
        long = s.post(user_turn("one"), headers={HEADER: "v" * (MAX_USER_ID + 1)})
        assert long.status_code == 400 and long.json()["error"]["code"] == "invalid_user"
        odd = s.post(user_turn("one"), model="tagengine:vault", headers={HEADER: "a\tb"})
        assert odd.status_code == 400
        assert s.ctx.store.owners() == {"heist": "u" * MAX_USER_ID}
        huge = s.post(user_turn("one"), headers={HEADER: "w" * 200_000})  # past the server's head bound
        assert huge.status_code in (400, 431)


def test_two_users_racing_for_a_new_campaign_one_wins(tmp_path):
    """OW-6: two users' first turns on a campaign nobody owns, at once: exactly one plays it, the other is told it
    is unknown, and the owner is the one who played."""
    fake = Fake(dict(SCRIPT))
    with Served(tmp_path, fake, user_header=HEADER) as s:
        async def both() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=30) as h:
                body = {"model": "tagengine:vault", "messages": user_turn("one")}
                return list(await asyncio.gather(*(
                    h.post(f"{s.url}/v1/chat/completions", json=body, headers={HEADER: who})
                    for who in ("alice", "bob", "carol", "dave"))))

        got = asyncio.run(both())
        won = [r for r in got if r.status_code == 200]
        assert len(won) == 1 and sorted(r.status_code for r in got) == [200, 404, 404, 404]
        owner = s.ctx.store.owners()["vault"]
        assert won[0].request.headers[HEADER] == owner


def test_a_campaign_made_by_a_user_is_theirs(tmp_path):
    """OW-6: a campaign started through the JSON API with the user header is that user's from the start."""
    fake = Fake(dict(SCRIPT))
    with Served(tmp_path, fake, user_header=HEADER, rulesets=SAMPLES / "rulesets") as s:
        made = httpx.post(f"{s.url}/tagengine/api/campaigns", headers={HEADER: "alice"},
                          json={"name": "mine", "ruleset": "blades-like.json", "characters": ["Cutter"]})
        assert made.status_code == 201, made.text
        assert s.ctx.store.owners() == {"mine": "alice"}
        assert s.post(user_turn("one"), model=f"{CAMPAIGN_MODEL}mine", headers={HEADER: "bob"}).status_code == 404


BRANCHES = {"one": 'The lock gives. [clock: name="Alarm raised" size="6"]',
            "two": 'Boots on the stair.\n[clock: name="Alarm raised" tick="2"]',
            "three": 'The bells. [clock: name="Alarm raised" tick="4"]',
            "four": 'Quiet again. [clock: name="Alarm raised" tick="-1"]'}
SHOW = {"x-tagengine-show": "narration", "x-tagengine-type": "", "x-tagengine-chat": "owui-chat-1"}


def path(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    """The messages Open WebUI sends for one path of its tree: the user's words, the replies as it stores them."""
    out = [{"role": "system", "content": "You are the GM."}]
    for said, shown in pairs:
        out += [{"role": "user", "content": f"TURN:{said}"}, {"role": "assistant", "content": shown}]
    return out


def clock_of(s: Served, messages: list[dict[str, str]], headers=SHOW) -> str:
    doc = httpx.post(f"{s.url}/tagengine/api/state", json={"campaign": "heist", "messages": messages},
                     headers=headers, timeout=30).json()
    return next(f"{c['filled']}/{c['size']}" for c in doc["sheet"]["clocks"] if c["name"] == "Alarm raised")


@pytest.mark.parametrize("stream", [False, True])
def test_narrations_on_screen_and_each_branch_of_the_tree_shows_its_own_state(tmp_path, caplog, stream):
    """OW-3, OW-4: a connection that sends `X-Tagengine-Show: narration` gets the narration only (no tag on screen,
    on a server without --hide-tags); the chat as Open WebUI stores it (the narrations) replays the game, and every
    path of its tree (an edited user message makes a sibling branch; going back to the first) reads its own state,
    both in the turns (the model is sent the tagged replies) and in the state endpoint the Function asks."""
    fake = Fake(dict(BRANCHES))
    with Served(tmp_path, fake) as s:
        def play(pairs: list[tuple[str, str]], said: str) -> str:
            r = s.post([*path(*pairs), {"role": "user", "content": f"TURN:{said}"}], headers=SHOW, stream=stream)
            assert r.status_code == 200, r.text
            if not stream:
                return str(r.json()["choices"][0]["message"]["content"])
            return "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                           for line in r.text.splitlines() if line.startswith("data: {") and '"choices":[{' in line)

        one = play([], "one")
        two = play([("one", one)], "two")
        assert "[" not in one + two and one.startswith("The lock gives.") and two.startswith("Boots on the stair.")
        sent = json.loads(fake.bodies[-1])["messages"]
        assert any('result="ok"' in m["content"] for m in sent if m["role"] == "assistant")  # the model: tagged
        branch = play([("one", one)], "three")  # the second user message edited: a sibling branch
        assert clock_of(s, path(("one", one), ("two", two))) == "2/6"
        assert clock_of(s, path(("one", one), ("three", branch))) == "4/6"
        four = play([("one", one), ("two", two)], "four")  # back on the first branch, played on
        assert clock_of(s, path(("one", one), ("two", two), ("four", four))) == "1/6"
        assert clock_of(s, path(("one", one), ("three", branch))) == "4/6"
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # the chat asked for narrations
        assert '"now": "1/6"' in s.ctx.store.head("heist")[2]  # the pages: the newest turn played


def test_the_show_header_takes_two_values():
    """OW-4: `narration` or `receipts` (any case), empty or absent as the server's option; another is a 400."""
    from tagengine._internal.server.errors import Refused
    from tagengine._internal.server.turn.request import hides

    assert hides({"x-tagengine-show": " Narration "}, False) and not hides({"x-tagengine-show": "receipts"}, True)
    assert hides({}, True) and not hides({"x-tagengine-show": ""}, False)
    with pytest.raises(Refused):
        hides({"x-tagengine-show": "x" * 10_000}, False)


def test_a_show_header_of_another_value_is_refused_before_anything_moves(tmp_path):
    """OW-4: `X-Tagengine-Show` past its two values (a long one too) is a 400 on a turn and on the state route, and
    nothing is played; `receipts` on a --hide-tags server shows the receipts for that request."""
    fake = Fake(dict(BRANCHES))
    with Served(tmp_path, fake, hide_tags=True) as s:
        for said in ("tags", "x" * 8000):
            r = s.post(user_turn("one"), headers={"x-tagengine-show": said})
            assert r.status_code == 400 and "x-tagengine-show" in r.text
            state = httpx.post(f"{s.url}/tagengine/api/state", json={"campaign": "heist", "messages": []},
                               headers={"x-tagengine-show": said}, timeout=30)
            assert state.status_code == 400
        assert fake.bodies == [] and s.ctx.store.head("heist") is None
        unknown = s.post(user_turn("one"), model="tagengine:nowhere", headers={"x-tagengine-show": "tags"})
        assert unknown.status_code == 400 and "x-tagengine-show" in unknown.text  # before the campaign's 404
        shown = s.post(user_turn("one"), headers={"x-tagengine-show": "receipts"}).json()
        assert 'result="ok"' in shown["choices"][0]["message"]["content"]
        hidden = s.post(user_turn("one")).json()
        assert "[" not in hidden["choices"][0]["message"]["content"]


def test_the_demo_answers_open_webuis_tasks_in_their_shape(tmp_path):
    """OW-9: `--upstream demo` answers a title, tags or follow-ups task (quiet, passed on to it) with the JSON Open
    WebUI's template asks for, by the header or by the template's words; a turn still gets the game."""
    data = tmp_path / "data"
    make_campaigns(data)
    app = make_app(Options(upstream="demo", data=data))
    with Running(app) as srv:
        def ask(messages, headers=None):
            r = httpx.post(f"{srv.url}/v1/chat/completions", headers=headers, timeout=30,
                           json={"model": "tagengine:heist", "messages": messages})
            assert r.status_code == 200, r.text
            return r, r.json()["choices"][0]["message"]["content"]

        r, title = ask([{"role": "user", "content": TITLE_TASK}])
        assert "x-tagengine-quiet" in r.headers and "title" in json.loads(title)
        _, tags = ask([{"role": "user", "content": "anything"}], {"x-tagengine-type": "tags_generation"})
        assert json.loads(tags)["tags"]
        follow = installed_templates().get("DEFAULT_FOLLOW_UP_GENERATION_PROMPT_TEMPLATE") or \
            TEMPLATES["DEFAULT_FOLLOW_UP_GENERATION_PROMPT_TEMPLATE"]
        _, ups = ask([{"role": "user", "content": follow}])
        assert json.loads(ups)["follow_ups"]
        r, turn = ask([{"role": "user", "content": "We go in."}], {"x-tagengine-type": ""})
        assert "x-tagengine-quiet" not in r.headers and "result=" in turn
