"""Issue 14: the pages under /ui/ (game sheet, prompt preview, ruleset checker) and `tagengine sheet --html`.

The browser tests start `tagengine serve` (make_app on loopback, port 0) in front of the scripted upstream
(tests/serve_kit.py), play three turns per sample campaign, open each page in headless Chromium (Debian's
package, driven by Playwright through `executable_path`) and assert on what a person sees. Screenshots go to
tests/output/screens/ (git-ignored; the reviewed set is copied to docs/screens/). Without Chromium the
browser tests skip and say why; `./dev test` installs it where it can.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_kit import launched
from serve_kit import Fake, Running

from conftest import ROOT, SAMPLES, load_sample, sample_dict
from tagengine._internal.cli import run
from tagengine._internal.commands import apply_reply
from tagengine._internal.pages.game_sheet import sheet_html
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.memory.campaigns import new_campaign
from tagengine._internal.server.memory.store import Store
from tagengine._internal.state import GameState

SCREENS = ROOT / "tests" / "output" / "screens"
XSS = "<script>window.pwned=1</script>"

HEIST = {  # blades-like: Cutter, Lurk
    "one": 'The lock gives with a dry click. [clock: name="Alarm raised" size="6"] '
           '[sheet: who="Cutter" op="restore" pool="stress" amount="2"] '
           '[sheet: who="Lurk" op="condition" condition="Wanted" to="on"]',
    "two": 'A floorboard creaks upstairs. [clock: name="Alarm raised" tick="3"] [clock: name="Patrol returns" '
           'size="4"] [sheet: sheet="party" op="restore" pool="coin" amount="2"]',
    "three": 'The bells start. [clock: name="Alarm raised" tick="1"] [clock: name="Patrol returns" tick="1"] '
             '[sheet: who="Lurk" op="spend" pool="stress" amount="12"] '
             '[sheet: sheet="party" op="advance" field="heat" by="2"]',
}
VAULT = {  # gravewatch: Mira, Bram (no clocks in this ruleset)
    "one": 'A grave-hound lunges. [sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"] '
           '[sheet: who="Mira" op="spend" pool="resolve" amount="1"]',
    "two": 'It bites again. [sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"] '
           '[sheet: who="Mira" op="state" state="Lantern" value="Shuttered"]',
    "three": 'Mira holds the line. [sheet: who="Mira" op="damage" track="strain" kind="strain" box="2"] '
             '[clock: name="Dawn" size="6"] [sheet: who="Mira" op="spend" pool="oil" amount="1"]',
}


@dataclass
class Game:
    """A chat app's side of one campaign: the messages so far, and what each turn's answer said."""

    url: str
    campaign: str
    messages: list[dict[str, str]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # each turn's x-tagengine-tokens header

    def turn(self, name: str, *, stream: bool = False, max_tokens: int | None = None) -> str:
        if not self.messages:
            marker = f'[tagengine: campaign="{self.campaign}"]'
            self.messages.append({"role": "system", "content": f"You are the GM. {marker}"})
        self.messages.append({"role": "user", "content": f"TURN:{name}"})
        body: dict[str, Any] = {"model": "m", "messages": self.messages, "stream": stream}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        with httpx.Client(timeout=30) as h:
            if not stream:
                r = h.post(f"{self.url}/v1/chat/completions", json=body)
                assert r.status_code == 200, r.text
                text = r.json()["choices"][0]["message"]["content"]
                self.tokens.append(r.headers["x-tagengine-tokens"])
            else:
                text = ""
                with h.stream("POST", f"{self.url}/v1/chat/completions", json=body) as r:
                    assert r.status_code == 200
                    self.tokens.append(r.headers["x-tagengine-tokens"])
                    for line in r.iter_lines():
                        if line.startswith("data: {"):
                            for ch in json.loads(line[6:])["choices"]:
                                text += ch["delta"].get("content") or ""
        self.messages.append({"role": "assistant", "content": text})
        return text


@contextmanager
def serving(tmp_path: Path, script: dict[str, str], campaigns: list[tuple[str, Path, list[str]]]) -> Iterator[str]:
    data = tmp_path / "data"
    store = Store(data)
    for name, ruleset, chars in campaigns:
        new_campaign(store, name, str(ruleset), chars, seed="pages")
    store.close()
    fake = Fake(script=script)
    with Running(fake.app()) as up, Running(make_app(Options(upstream=f"{up.url}/v1", data=data))) as srv:
        yield srv.url


# -- without a browser: the HTML itself


def xss_ruleset(tmp_path: Path) -> Path:
    """blades-like with `<script>` in a ruleset label (a live text's and a condition's) and the name."""
    d = sample_dict("blades-like")
    d["manifest"]["name"] = f"Heist {XSS}"
    d["sheet"]["live"]["text"] = [{"id": "note", "label": f"Note {XSS}", "maxLength": 120}]
    d["sheet"]["live"]["conditions"].append({"id": "marked", "label": f"Marked {XSS}"})
    path = tmp_path / "xss.json"
    path.write_text(json.dumps(d))
    return path


XSS_SCRIPT = {"one": f'[clock: name="{XSS}" size="4"] [clock: name="{XSS}" tick="1"] '
                     f'[sheet: who="Cutter" op="text" text="note" to="{XSS}"] '
                     f'[sheet: who="Cutter" op="condition" condition="Marked" to="on"] '
                     f'[sheet: who="Cutter" op="spend" pool="{XSS}"]'}


def test_every_page_escapes_model_and_ruleset_text(tmp_path: Path):
    """Issue 14 item 5: a clock name, live text and ruleset labels are text, never markup."""
    ruleset = xss_ruleset(tmp_path)
    with serving(tmp_path, XSS_SCRIPT, [("x", ruleset, ["Cutter"])]) as url:
        Game(url, "x").turn("one")
        pages = {p: httpx.get(f"{url}{p}").text for p in ("/ui/c/x", "/ui/c/x/prompt", "/ui/")}
        pages["check"] = httpx.post(f"{url}/ui/check", data={"ruleset": ruleset.read_text()}).text
    for where, html in pages.items():
        assert "<script>window" not in html, where
    sheet = pages["/ui/c/x"]
    assert sheet.count("&lt;script&gt;window.pwned=1&lt;/script&gt;") >= 5  # clock, text value and label, condition
    assert 'aria-label="&lt;script&gt;' in sheet  # the clock's SVG label too
    assert "&lt;script&gt;" in pages["/ui/c/x/prompt"]
    assert "&lt;script&gt;" in pages["check"] and "ok</span>" in pages["check"]


def test_the_checker_groups_problems_by_section_and_names_the_capability_version(tmp_path: Path):
    d = sample_dict("gravewatch")
    d["sheet"]["live"]["pools"][0]["max"] = {"listSum": {"list": "scars", "column": "levels"}}  # needs 1.39
    d["manifest"]["capabilityApi"] = {"major": 1, "minor": 30}
    d["sheet"]["fields"][0]["label"] = f"Watch {XSS}"
    d["sheet"]["abilities"][0]["max"] = "five"
    with serving(tmp_path, {}, []) as url:
        form = httpx.get(f"{url}/ui/check")
        bad = httpx.post(f"{url}/ui/check", files={"file": ("grave.json", json.dumps(d).encode(), "application/json")})
        good = httpx.post(f"{url}/ui/check", files={"ruleset": (None, (SAMPLES / "rulesets" / "gravewatch.json")
                                                                .read_text())})
        assert not list((tmp_path / "data").glob("*.json"))  # nothing stored
    assert form.status_code == 200 and 'enctype="multipart/form-data"' in form.text
    assert bad.status_code == 200
    sections = re.findall(r'<h3 class="section">([^<]*)</h3>', bad.text)
    assert "sheet.abilities" in sections
    assert re.search(r"<code>sheet\.abilities\[0\]\.max</code>.*?<code>wrong-type</code>", bad.text, re.S)
    assert "Gravewatch" in bad.text  # the file's name, read from its manifest
    assert "the file's shape is right" in bad.text  # the shape is wrong: no version can be told
    d["sheet"]["abilities"][0]["max"] = 5
    with serving(tmp_path / "2", {}, []) as url:
        cap = httpx.post(f"{url}/ui/check", data={"ruleset": json.dumps(d)}).text
    assert re.search(r"<code>capability-too-low</code>.*needs 1\.39", cap, re.S)
    needs = load_sample("gravewatch").requires_text  # the sample's own need, above the listSum's 1.39
    assert f'Needs Capability API <strong class="version">{needs}</strong>' in cap
    assert '<span class="badge ok">ok</span>' in good.text and "Gravewatch" in good.text


def test_the_checker_answers_hostile_forms_with_a_page(tmp_path: Path):
    """No exception escapes a form post: non-UTF-8, not JSON, JSON nested too deep, multipart nested too deep
    for Python's email parser (a RecursionError there was a 500), a form over the limit."""
    nested = b"--B0\r\nContent-Type: multipart/mixed; boundary=B1\r\n\r\n" + b"".join(
        f"--B{i}\r\nContent-Type: multipart/mixed; boundary=B{i + 1}\r\n\r\n".encode() for i in range(1, 3000))
    form = {"content-type": "application/x-www-form-urlencoded"}
    with serving(tmp_path, {}, []) as url:
        got = {
            "nested multipart": httpx.post(f"{url}/ui/check", content=nested, timeout=60,
                                           headers={"content-type": "multipart/form-data; boundary=B0"}),
            "not utf-8": httpx.post(f"{url}/ui/check", files={"file": ("x.json", b"\xff\xfe{}")}, timeout=60),
            "not json": httpx.post(f"{url}/ui/check", data={"ruleset": "not json"}, timeout=60),
            "deep json": httpx.post(f"{url}/ui/check", data={"ruleset": "[" * 100_000}, timeout=60),
            "too large": httpx.post(f"{url}/ui/check", content=b"ruleset=" + b"a" * (10 << 20), headers=form,
                                    timeout=60),
        }
    for what, r in got.items():
        assert r.status_code == (413 if what == "too large" else 200), what
        assert r.text.startswith("<!doctype html>"), what
    assert "invalid" in got["not json"].text and "invalid" in got["deep json"].text


def test_the_newest_head_survives_a_restart(tmp_path: Path):
    with serving(tmp_path, VAULT, [("vault", SAMPLES / "rulesets" / "gravewatch.json", ["Mira", "Bram"])]) as url:
        assert httpx.get(f"{url}/ui/c/vault/version").text.startswith("0.s")  # no turn: the start (its digest)
        assert "No turn has been played yet" in httpx.get(f"{url}/ui/c/vault").text
        g = Game(url, "vault")
        g.turn("one")
        g.turn("two", stream=True)
        v = httpx.get(f"{url}/ui/c/vault/version")
        assert v.text.startswith("2-")
        assert httpx.get(f"{url}/ui/c/vault/version", headers={"if-none-match": v.headers["etag"]}).status_code == 304
        assert httpx.get(f"{url}/ui/c/nope").status_code == 404
    app = make_app(Options(upstream="demo", data=tmp_path / "data"))
    with Running(app) as srv:
        html = httpx.get(f"{srv.url}/ui/c/vault").text
    assert "turn 2" in html and "2/4 Winded" in html  # from the store's head and snapshot


def test_sheet_html_is_one_self_contained_page(tmp_path: Path, capsys):
    """`tagengine sheet RULESET STATE NAME --html`: the stylesheet inline, no link, no script."""
    code = run(["sheet", str(SAMPLES / "rulesets" / "gravewatch.json"), str(SAMPLES / "states" / "gravewatch.json"),
                "Mira", "--html"])
    html = capsys.readouterr().out
    assert code == 0
    assert html.startswith("<!doctype html>") and "<style>" in html and ".clock .seg" in html
    assert "<link" not in html and "<script" not in html and "http" not in html.split("</style>")[1]
    assert '<h2 class="who">Mira</h2>' in html and "Bram" not in html
    (SCREENS.parent).mkdir(parents=True, exist_ok=True)
    (SCREENS.parent / "sheet-offline.html").write_text(html, encoding="utf-8")


def blades_page() -> str:
    rs = load_sample("blades-like")
    start = GameState.new(rs, ["Cutter", "Lurk"])
    played = apply_reply(rs, start, '[clock: name="Alarm raised" size="6"] [clock: name="Alarm raised" tick="4"] '
                                    '[sheet: sheet="party" op="restore" pool="coin" amount="2"]').state
    return sheet_html(rs, played)


def test_clock_23_a_segmented_circle_the_name_and_the_fill_next_to_the_party_status():
    html = blades_page()
    fig = re.search(r'<figure class="clock" data-segments="6" data-filled="4">(.*?)</figure>', html, re.S)
    assert fig is not None
    assert fig.group(1).count('class="seg') == 6 and fig.group(1).count('class="seg filled"') == 4  # one wedge each
    assert '<span class="clock-name">Alarm raised</span> <span class="count">4/6</span>' in fig.group(1)
    between = html[html.index("</details>", html.index('<details class="panel party"')):html.index(
        '<section class="panel clocks-panel"')]
    assert re.fullmatch(r"</details>\s*", between)  # the clocks come right after the party's status


def test_party_22_a_read_only_collapsible_party_sheet_next_to_the_characters():
    html = blades_page()
    party = html[html.index('<details class="panel party" open>'):html.index("</details>", html.index(
        '<details class="panel party"'))]
    assert "<summary><h2>Crew" in party and "revision 0" in party  # collapsible, open at first
    assert not re.search(r"<(form|input|button|select|textarea)\b|contenteditable", party)  # read-only
    cutter = html[html.index('<article class="sheet panel"'):]
    for piece in ('<dl class="fields">', '<div class="stat pool-row">', '<div class="meter'):  # as a character's
        assert piece in party and piece in cutter
    top = html[html.index('<div class="table-top">'):html.index('<div class="sheets">')]
    assert '<details class="panel party" open>' in top  # above the characters, with the clocks
    between = html[html.index("</div>", html.index("</section>", html.index('class="panel clocks-panel"'))):
                   html.index('<div class="sheets">')]
    assert re.fullmatch(r'</div>\s*(<section class="panel receipts">.*</section>\s*)?', between, re.S)


# -- in a real browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched()


def shoot(page: Any, name: str, width: int = 1280) -> Path:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    path = SCREENS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{name}: wider than {width} px"
    return path


def clock_seen(page: Any, name: str) -> tuple[int, int]:
    """(segments, shaded segments) of the clock whose caption is `name`, as drawn."""
    fig = page.locator("figure.clock", has=page.locator(".clock-name", has_text=name))
    segs = fig.locator("svg .seg")
    shaded = sum(1 for i in range(segs.count())
                 if segs.nth(i).evaluate("e => getComputedStyle(e).fill") != "rgb(251, 247, 238)")
    return segs.count(), shaded


def test_heist_pages_in_a_browser(browser: Any, tmp_path: Path):
    """blades-like: a 6-segment clock with 4 shaded, a refused receipt with its reason, the party's revision,
    the prompt's bars summing to the report's total with the cuts marked, the checker."""
    blades = SAMPLES / "rulesets" / "blades-like.json"
    with serving(tmp_path, HEIST, [("heist", blades, ["Cutter", "Lurk"])]) as url:
        g = Game(url, "heist")
        g.turn("one")
        g.turn("two", stream=True)
        g.turn("three", max_tokens=7000)  # more than fits: history dropped, the response lowered
        page = browser.new_page()
        page.goto(f"{url}/ui/c/heist")
        assert clock_seen(page, "Alarm raised") == (6, 4)
        assert clock_seen(page, "Patrol returns") == (4, 1)
        refused = page.locator(".receipt.refused")
        assert refused.count() == 1
        assert "insufficient" in refused.inner_text() and 'pool="stress"' in refused.inner_text()
        assert page.locator(".receipt.ok").count() == 3
        assert "revision 1" in page.locator(".party h2").inner_text()
        assert page.locator(".party").get_by_text("2/8").count() == 1  # coin restored by 2
        assert page.locator(".chip.cond.on", has_text="Wanted").count() == 1
        party = page.locator("details.party")  # PARTY-22: collapsible; the clocks sit just above it (CLOCK-23)
        assert party.locator(".pool-row", has_text="Coin").is_visible()
        party.locator("summary").click()
        assert not party.locator(".pool-row", has_text="Coin").is_visible()
        party.locator("summary").click()
        shoot(page, "heist-sheet")
        shoot(page, "heist-sheet-360", 360)

        page.goto(f"{url}/ui/c/heist/prompt")
        total, context = (int(x) for x in g.tokens[-1].split()[0].split("/"))  # the server's own header
        bars = page.locator(".stack .seg[data-tokens]")
        assert sum(int(bars.nth(i).get_attribute("data-tokens")) for i in range(bars.count())) == total
        assert int(page.locator(".total").inner_text()) == total
        assert f"of {context}" in page.locator(".budget h2").inner_text()
        assert page.locator(".enc").inner_text() in ("o200k_base", "cl100k_base")
        assert page.locator(".cuts .cut").count() == 2  # history dropped, response lowered
        assert "dropped here" in page.locator(".dropped").inner_text()
        roles = [page.locator(".message .role").nth(i).inner_text() for i in range(page.locator(".message").count())]
        assert roles[0] == "system" and roles[-1] == "system"  # the engine's system prompt ... the reminder
        shoot(page, "heist-prompt")
        shoot(page, "heist-prompt-360", 360)

        page.goto(f"{url}/ui/check")
        bad = sample_dict("blades-like")
        bad["clocks"]["sizes"] = [0, 4]
        bad["sheet"]["skills"][0]["ability"] = "nimbleness"
        page.fill("#ruleset", json.dumps(bad, indent=1))
        page.click("button[type=submit]")
        assert page.locator(".problem").count() >= 2
        assert page.locator("h3.section", has_text="clocks").count() == 1
        shoot(page, "heist-check")
        shoot(page, "heist-check-360", 360)
        page.close()


def test_vault_pages_in_a_browser(browser: Any, tmp_path: Path):
    """gravewatch: a wound track at "Winded" and its penalty in the check numbers, hidden fields hidden (HIDE),
    refused receipts with their reasons, and the sheet reloading by itself when a turn lands."""
    grave = SAMPLES / "rulesets" / "gravewatch.json"
    with serving(tmp_path, VAULT, [("vault", grave, ["Mira", "Bram"])]) as url:
        g = Game(url, "vault")
        g.turn("one")
        g.turn("two", stream=True)
        page = browser.new_page()
        page.goto(f"{url}/ui/c/vault")
        bram = page.locator("article.sheet", has=page.locator("h2.who", has_text="Bram"))
        harm = bram.locator(".wound", has=page.locator(".label", has_text="Harm"))
        assert "2/4 Winded" in harm.locator(".stat .value").inner_text()
        assert harm.locator(".cell.marked").count() == 2 and harm.locator(".cell.lowest").inner_text().startswith(
            "Winded")
        assert "penalty -1" in bram.locator("table.checks").first.inner_text()
        # WOUND-39: the health track read as its remaining levels, on the sheet as in the reminder
        assert bram.locator(".health .value").inner_text() == "2 of 4 left, at Winded"
        mira = page.locator("article.sheet", has=page.locator("h2.who", has_text="Mira"))
        assert mira.locator(".pool-row", has_text="Lantern oil").count() == 0  # HIDE: watch is not night
        assert mira.locator(".chip.on").inner_text() == "Shuttered"
        assert "turn 2" in page.locator(".turn").inner_text()
        g.turn("three")  # the page polls /version and reloads by itself
        page.wait_for_function("document.querySelector('.turn') && "
                               "document.querySelector('.turn').textContent.includes('turn 3')", timeout=20000)
        reasons = page.locator(".receipt.refused .reason")
        assert reasons.count() == 2
        seen = " ".join(reasons.nth(i).inner_text() for i in range(2))
        assert "clocks-disabled" in seen and "hidden" in seen
        shoot(page, "vault-sheet")
        shoot(page, "vault-sheet-360", 360)

        page.goto(f"{url}/ui/c/vault/prompt")
        total = int(g.tokens[-1].split("/")[0])
        bars = page.locator(".stack .seg[data-tokens]")
        assert sum(int(bars.nth(i).get_attribute("data-tokens")) for i in range(bars.count())) == total
        assert page.locator(".message.part-history").count() == 6  # the app's system message, 3 turns, 2 replies
        shoot(page, "vault-prompt")

        page.goto(f"{url}/ui/check")
        page.set_input_files("#file", str(grave))
        page.click("button[type=submit]")
        assert page.locator(".badge.ok").count() == 1 and page.locator(".problem").count() == 0
        assert page.locator(".needs").inner_text().startswith("Needs Capability API")
        shoot(page, "vault-check")
        page.close()


def test_the_pages_work_without_javascript(browser: Any, tmp_path: Path):
    """Everything but the refresh is HTML and CSS: with scripts off the sheet and the checker still work."""
    ctx = browser.new_context(java_script_enabled=False)
    with serving(tmp_path, HEIST, [("heist", SAMPLES / "rulesets" / "blades-like.json", ["Cutter", "Lurk"])]) as url:
        Game(url, "heist").turn("one")
        page = ctx.new_page()
        page.goto(f"{url}/ui/c/heist")
        assert clock_seen(page, "Alarm raised") == (6, 0)
        page.goto(f"{url}/ui/check")
        page.fill("#ruleset", "{not json")
        page.click("button[type=submit]")
        assert page.locator(".problem").count() == 1
    ctx.close()


def test_script_in_game_text_never_runs_in_the_browser(browser: Any, tmp_path: Path):
    """Issue 14 item 5, as a person sees it: the `<script>` is shown as text and nothing ran."""
    ruleset = xss_ruleset(tmp_path)
    with serving(tmp_path, XSS_SCRIPT, [("x", ruleset, ["Cutter"])]) as url:
        Game(url, "x").turn("one")
        page = browser.new_page()
        page.goto(f"{url}/ui/c/x")
        assert page.evaluate("window.pwned") is None
        assert page.locator(".clock-name").inner_text() == XSS
        assert page.locator(".live-text q").inner_text() == XSS
        assert XSS in page.locator(".live-text .label").inner_text()
        assert XSS in page.locator("h1").inner_text()
        page.close()


def test_the_offline_sheet_is_styled_with_no_network(browser: Any, tmp_path: Path):
    """`tagengine sheet --html` opened from a file with every other request refused: styled all the same,
    the clock drawn, the untrained-refused check shown as such (UNTR-9)."""
    out = tmp_path / "sheet.html"
    with out.open("w", encoding="utf-8") as f:
        code = run(["sheet", str(SAMPLES / "rulesets" / "ember-roads.json"),
                    str(SAMPLES / "states" / "ember-roads.json"), "Mira", "--html"], out=f)
    assert code == 0
    page = browser.new_page()
    asked: list[str] = []
    page.route("**/*", lambda route: (asked.append(route.request.url), route.continue_() if
                                      route.request.url.startswith("file:") else route.abort()))
    page.goto(out.as_uri())
    assert [u for u in asked if not u.startswith("file:")] == []
    assert page.locator("article.sheet").evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 253, 247)"
    assert clock_seen(page, "Storm front") == (6, 2)
    dig = page.locator("table.checks tr", has=page.locator("th", has_text="Dig"))
    assert dig.locator(".num").inner_text() == "—" and "refused" in dig.locator(".why").inner_text()
    assert page.locator(".live-text q").inner_text() == "North to the pass"
    shoot(page, "offline-sheet")
    page.close()


@pytest.mark.parametrize("sample", ["blades-like", "ember-roads", "fifth-like", "gravewatch"])
def test_every_sample_sheet_renders_what_the_text_sheet_shows(sample: str):
    """Every sample's characters through the page template: each pool, wound track and check of the
    evaluated sheet is on the page, and nothing hidden is (HIDE-1)."""
    from tagengine._internal.pages import sheet_html
    from tagengine._internal.sheet import view_character
    from tagengine._internal.state import GameState

    rs = load_sample(sample)
    state = GameState.load(rs, SAMPLES / "states" / f"{sample}.json")
    html = sheet_html(rs, state)
    for name in state.characters:
        view = view_character(rs, state, name)
        assert f'<h2 class="who">{name}</h2>' in html
        for p in view.pools:
            assert (f'<span class="label">{p.label}</span><span class="value">{p.now}</span>' in html) == (
                p.hidden is None), p.label
        for w in view.wounds:
            assert f'data-now="{w.now}"' in html
        for c in (*view.abilities, *view.skills, *view.saves):
            assert f"<th scope=\"row\">{c.label}" in html


def test_the_readme_demo_changes_the_sheet_turn_by_turn(tmp_path: Path):
    """README: `tagengine serve --upstream demo --campaign heist`, then the sheet at /ui/c/heist as the
    demo's three turns land (the same loop as the README's)."""
    data = tmp_path / "data"
    store = Store(data)
    new_campaign(store, "heist", str(SAMPLES / "rulesets" / "blades-like.json"), ["Cutter", "Lurk"])
    store.close()
    seen = []
    with Running(make_app(Options(upstream="demo", data=data, campaign="heist"))) as srv:
        msgs: list[dict[str, Any]] = []
        for say in ["We slip into the counting-house.", "Lurk checks the ledger.", "We run for the door!"]:
            msgs.append({"role": "user", "content": say})
            reply = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": msgs}).json()
            msgs.append(reply["choices"][0]["message"])
            html = httpx.get(f"{srv.url}/ui/c/heist").text
            seen.append(re.findall(r'class="clock-name">([^<]*)</span> <span class="count">([^<]*)<', html))
    assert seen == [[("Alarm raised", "0/6")], [("Alarm raised", "1/6"), ("Patrol returns", "0/4")],
                    [("Alarm raised", "1/6"), ("Patrol returns", "1/4")]]


def test_sheet_3_the_game_sheet_shows_checks_under_their_section():
    """[SHEET-3]: a skill that names a section is shown under that section's heading on the game sheet, as the
    editor groups it (ember-roads: Dig and Haul under Labour, Wayfind under Road); Listen names none and stays
    under Skills. The page's groups are the context's, and the editor's checks per group are the same."""
    from tagengine._internal.pages.game_sheet import character_context
    from tagengine._internal.sheet import view_character
    from tagengine._internal.sheet.form import edit_form

    rs = load_sample("ember-roads")
    state = GameState.load(rs, SAMPLES / "states" / "ember-roads.json")
    name = state.characters[0]
    groups = {g["title"]: [r["label"] for r in g["rows"]]
              for g in character_context(rs, view_character(rs, state, name))["checks"]}
    assert groups == {"Abilities": ["Brawn", "Nerve", "Wits"], "Skills": ["Listen"], "Saves": ["Endure"],
                      "Labour": ["Dig", "Haul"], "Road": ["Wayfind"]}
    editor = {s.label: [i.label for i in s.inputs if i.type in ("ability", "training")]
              for s in edit_form(rs, state, name).sections}
    assert {k: v for k, v in editor.items() if v} == groups
    html = sheet_html(rs, state, [name])
    for title, labels in groups.items():
        table = re.search(rf"<h3>{title}</h3>\s*<table class=\"checks\">(.*?)</table>", html, re.S)
        assert table is not None, title
        assert re.findall(r'<th scope="row">([^<]*?)(?: <span|</th>)', table.group(1)) == labels


def test_sheet_4_checks_that_name_no_section_are_grouped_by_kind_as_before():
    """[SHEET-4]: blades-like names no section on its checks: the game sheet shows Abilities, Skills and Saves
    only, each check in the ruleset's order."""
    from tagengine._internal.pages.game_sheet import character_context
    from tagengine._internal.sheet import view_character

    rs = load_sample("blades-like")
    state = GameState.load(rs, SAMPLES / "states" / "blades-like.json")
    view = view_character(rs, state, state.characters[0])
    checks = character_context(rs, view)["checks"]
    expected = [(t, [c.label for c in g]) for t, g in (("Abilities", view.abilities), ("Skills", view.skills),
                                                       ("Saves", view.saves)) if g]
    assert [(g["title"], [r["label"] for r in g["rows"]]) for g in checks] == expected
