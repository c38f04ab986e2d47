"""Issue 13 item 4: `POST /tagengine/api/checks` on a real server on loopback, called with httpx (UNTR-11, U-7;
docs/checks-in-serve.md, docs/decisions.md CK-15..CK-17). Expected dice come from the documented hash
(docs/state-format.md, CK-9), reimplemented here; the expected numbers from the sample ruleset's defaults."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from serve_kit import Running

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.state import GameState

SEED = "endpoint-seed"
MARK = '[tagengine: campaign="roads"]'


def faces(count: int, start: int = 0, sides: int = 6) -> list[int]:
    out = []
    for n in range(start, start + count):
        x = int.from_bytes(hashlib.sha256(f"{SEED}:{n}".encode()).digest()[:8], "big")
        out.append(x % sides + 1)
    return out


def pool(n_dice: int, start: int = 0, target: int = 4) -> dict[str, str]:
    rolled = faces(n_dice, start)
    hits = sum(1 for f in rolled if f >= target)
    return {"dice": str(n_dice), "rolled": ",".join(map(str, rolled)), "target": str(target),
            "successes": str(hits), "outcome": "success" if hits else "failure"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    data = tmp_path_factory.mktemp("checks") / "data"
    store = Store(data)
    new_campaign(store, "roads", str(SAMPLES / "rulesets" / "ember-roads.json"), ["Ada", "Bo"], seed=SEED)
    store.close()
    # no upstream is ever called by this endpoint: an address nothing listens on
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=data))) as running:
        yield running


def post(srv, body, path="/tagengine/api/checks", **kw):
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        return c.post(path, json=body, **kw) if not isinstance(body, bytes) else c.post(path, content=body, **kw)


def test_the_roll_record_from_the_start_state(srv):
    r = post(srv, {"campaign": "roads", "messages": [], "check": {"who": "Ada", "ability": "Wits"}})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["record"] == pool(2)
    assert doc["dice"] == {"sides": 6, "faces": faces(2)}
    assert (doc["who"], doc["check"]["kind"], doc["check"]["label"], doc["outcome"]) == (
        "Ada", "ability", "Wits", pool(2)["outcome"])
    assert doc["receipt"] == ('[check: who="Ada" ability="Wits" result="ok" '
                              + " ".join(f'{k}="{v}"' for k, v in pool(2).items()) + "]")
    assert doc["stored"] is False and doc["card"][0] == "Ada: Wits (ability)"
    assert r.headers["x-tagengine-campaign"] == "roads"


def test_the_state_comes_from_the_history_and_the_roll_is_the_next_tags_roll(srv):
    """CK-16: the history's reply rolled dice 0 and 1; the endpoint rolls dice 2.. and stores nothing, so
    asking twice answers the same, and the next reply's own [check:] tag rolls exactly that."""
    reply = 'Ada studies the map. [check: who="Ada" ability="Wits"] Bo spends. [sheet: who="Bo" op="spend" ' \
            'pool="grit" amount="1"]'
    rs = load_sample("ember-roads")
    start = GameState.new(rs, ["Ada", "Bo"], seed=SEED)
    stored = apply_reply(rs, start, reply)  # what the chat app keeps
    messages = [{"role": "system", "content": f"GM. {MARK}"}, {"role": "user", "content": "go"},
                {"role": "assistant", "content": stored.text}, {"role": "user", "content": "again"}]
    body = {"messages": messages, "check": {"who": "Bo", "skill": "Wayfind"}}
    first = post(srv, body)  # the campaign from the marker
    assert first.status_code == 200, first.text
    # Bo: Wits 2, untrained in Wayfind (bonus 0), section road's rule is normal: 2 dice, dice 2 and 3
    assert first.json()["record"] == pool(2, start=2)
    assert post(srv, body).json() == first.json()  # nothing moved
    after = apply_reply(rs, stored.state, '[check: who="Bo" skill="Wayfind"]')
    assert first.json()["receipt"] == after.text


def test_the_campaign_prefix_and_integer_difficulty(srv):
    # Listen: Nerve 2, untrained "harder": difficulty 3 sets the target, harder raises it to 4 (UNTR-7)
    r = post(srv, {"check": {"who": "ada", "skill": "listen", "difficulty": 3}}, path="/tagengine/api/c/roads/checks")
    assert r.status_code == 200, r.text
    assert r.json()["record"] == pool(2, target=4) and r.json()["target"] == 4


def test_untr_11_a_refused_untrained_check_is_a_400_skill_check_untrained(srv):
    r = post(srv, {"campaign": "roads", "check": {"who": "Ada", "skill": "Dig"}})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "skill_check_untrained" and err["type"] == "invalid_request_error"
    assert "Ada cannot attempt Dig" in err["message"]


@pytest.mark.parametrize(("check", "code", "named"), [
    ({"who": "Zed", "skill": "Dig"}, "character_not_found", "'Zed'"),
    ({"who": "Ada", "skill": "Juggle"}, "skill_not_found", "'Juggle'"),
    ({"who": "Ada", "save": "Poison"}, "save_not_found", "'Poison'"),
    ({"who": "Ada", "skill": "Haul", "with": "Charm"}, "ability_not_found", "'Charm'"),
])
def test_an_unknown_character_or_skill_is_a_404_naming_it(srv, check, code, named):
    r = post(srv, {"campaign": "roads", "check": check})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == code and named in r.json()["error"]["message"]


@pytest.mark.parametrize(("body", "code"), [
    (b"{not json", "invalid_json"),
    ([1, 2], "invalid_request"),
    ({"campaign": "roads"}, "invalid_check"),
    ({"campaign": "roads", "check": {"who": "Ada", "skill": "Haul", "save": "Endure"}}, "invalid_check"),
    ({"campaign": "roads", "check": {"who": "Ada"}}, "invalid_check"),
    ({"campaign": "roads", "check": {"who": "Ada", "skill": ["Haul"]}}, "invalid_check"),
    ({"campaign": "roads", "check": {"who": "Ada", "skill": "Haul", "dc": True}}, "invalid_check"),
    ({"campaign": "roads", "check": {"who": "Ada", "skill": "Haul", "luck": "1"}}, "invalid_check"),
    ({"campaign": "roads", "messages": "hi", "check": {"skill": "Haul"}}, "invalid_messages"),
    ({"campaign": "roads", "extra": 1, "check": {"skill": "Haul"}}, "invalid_request"),
    ({"check": {"who": "Ada", "skill": "Haul"}}, "campaign_missing"),
    ({"campaign": "roads", "check": {"skill": "Haul"}}, "check_missing_attribute"),  # two characters: who needed
    ({"campaign": "roads", "check": {"who": "Ada", "skill": "Haul", "dc": 12}}, "check_no_difficulty"),
])
def test_a_malformed_body_or_a_refused_check_is_a_400(srv, body, code):
    r = post(srv, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == code


def test_an_unknown_campaign_is_a_404(srv):
    r = post(srv, {"campaign": "nope", "check": {"who": "Ada", "skill": "Haul"}})
    assert r.status_code == 404 and r.json()["error"]["code"] == "campaign_not_found"


def test_the_endpoint_needs_the_servers_key_when_it_has_one(tmp_path):
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "roads", str(SAMPLES / "rulesets" / "ember-roads.json"), ["Ada"], seed=SEED)
    store.close()
    with Running(make_app(Options(upstream="http://127.0.0.1:9/v1", data=data, api_key="sk-table"))) as srv:
        body = {"campaign": "roads", "check": {"ability": "Wits"}}  # one character: `who` may be left out
        assert post(srv, body).status_code == 401
        r = post(srv, body, headers={"authorization": "Bearer sk-table"})
    assert r.status_code == 200 and r.json()["record"] == pool(2)


@pytest.mark.parametrize(("old", "new"), [("/tagengine/checks", "/tagengine/api/checks"),
                                          ("/c/roads/tagengine/checks", "/tagengine/api/c/roads/checks")])
def test_the_paths_before_one_api_scheme_answer_for_one_release_saying_where_it_moved(srv, old, new):
    """The JSON API has one URL scheme (`/tagengine/api/...`, a campaign's under `/tagengine/api/c/NAME/...`); a
    client written against the older paths gets the same answer, marked `Deprecation` with a `Link` to the new
    path (docs/middleware.md)."""
    body = {"campaign": "roads", "messages": [], "check": {"who": "Ada", "ability": "Wits"}}
    if "/c/roads/" in old:
        body.pop("campaign")
    was, now = post(srv, body, path=old), post(srv, body, path=new)
    assert was.status_code == now.status_code == 200 and was.json() == now.json()
    assert was.headers["deprecation"] == "true" and "deprecation" not in now.headers
    assert was.headers["link"] == f'<{new.replace("roads", "{campaign}")}>; rel="successor-version"'
