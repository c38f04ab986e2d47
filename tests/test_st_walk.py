"""The five-minute walk (docs/sillytavern.md, "The shortest path"; STX-14): a SillyTavern player plays their own
characters without leaving SillyTavern. From a fresh SillyTavern 1.19.0 (its own page, headless Chromium) and
`tagengine serve --upstream demo` with its default rulesets folder (the bundled samples), as the player does it:
install the extension from its Git URL, connect, import the GM card, start a campaign with two characters named
here from the panel, set a skill and a field in each one's sheet, play three turns whose receipts name them, roll a
check from the panel. It prints each step (the clicks, the typed values, the commands) and the scripted wall time.
At a desktop's width with blades-like (a party sheet, "Crew"), and at 390x844 with gravewatch (a wound track).

In the same run, a check of each thing the walk saw wrong before (its text, size, order or label): the settings
drawer's button on one line and its hint's sentences apart, "Open a chat" said as information, no nested
parentheses in the campaign line, the characters in the order the player named them, the ruleset's labels in
the badges (a pool named by its id, the party sheet as "Crew"), a malformed tag's refusal in words, 44 px
targets at a phone's width with a wound track's word on the boxes' line, and the party summary after a stale save
showing the newer sheet the form says it is. Screenshots go to tests/output/screens/ (tests/st_screens.py copies
the reviewed ones to docs/screens/)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Served
from st_kit import sillytavern
from st_ui import WAIT, Tavern, browser, extension_repository, git_server

from conftest import ROOT, SAMPLES

pytestmark = pytest.mark.slow

CARD = SAMPLES / "sillytavern" / "game-master.json"
SCREENS = ROOT / "tests" / "output" / "screens"
PHONE = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 "
         "Mobile Safari/537.36")
EXT = "/scripts/extensions/third-party/tagengine/sillytavern/extension"
TURNS = ("We slip in through the side door.", "We look for the strongroom.", "We make for the exit.")


@dataclass
class Walk:
    """What the player does, each step said as it is done (a click, a typed value, a command), and the time the
    steps took (the checks between them not counted)."""

    steps: list[str] = field(default_factory=list)
    checks: float = 0.0  # seconds spent checking, not walking
    started: float = field(default_factory=time.monotonic)

    def step(self, kind: str, what: str) -> None:
        self.steps.append(f"{len(self.steps) + 1:2}. {kind:7} {what}")

    def check(self) -> _Timed:
        return _Timed(self)

    def report(self, label: str) -> float:
        wall = time.monotonic() - self.started - self.checks
        print(f"\nThe walk at {label}: {len(self.steps)} steps, {wall:.1f} s scripted wall time")
        print("\n".join(self.steps))
        return wall


class _Timed:
    def __init__(self, walk: Walk) -> None:
        self.walk = walk

    def __enter__(self) -> None:
        self.t0 = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.walk.checks += time.monotonic() - self.t0


@dataclass(frozen=True)
class Setup:
    label: str
    viewport: dict[str, int]
    phone: bool
    ruleset: str  # the file the player chooses
    campaign: str
    characters: tuple[str, str]  # named in this order: alphabetically the other way round
    skill: tuple[str, str, str]  # path, value, label in the roller's list
    field: tuple[str, str]


DESKTOP = Setup("1400x900", {"width": 1400, "height": 900}, False, "blades-like.json", "night-run", ("Vex", "Rook"),
                ("skills.hunt", "2", "skill:Hunt"), ("fields.vice", "Obligation"))
PHONE_390 = Setup("390x844", {"width": 390, "height": 844}, True, "gravewatch.json", "long-watch", ("Mira", "Bram"),
                  ("skills.soothe", "sworn", "skill:Soothe"), ("fields.oath", "Keep the lamp lit"))


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Any, Served, Path]]:
    """A fresh SillyTavern and `tagengine serve --upstream demo` (its own process, its default --rulesets)."""
    with sillytavern(tmp_path / "st", ui=True) as st, Served(tmp_path / "data", "demo") as served:
        yield st, served, tmp_path


@pytest.mark.parametrize("setup", [DESKTOP, PHONE_390], ids=lambda s: s.label)
def test_the_five_minute_walk(fresh: tuple[Any, Served, Path], setup: Setup) -> None:
    st, served, tmp = fresh
    walk = Walk()
    walk.step("command", f"tagengine serve --upstream demo   (listening on {served.url})")
    repos = tmp / "git"
    repos.mkdir()
    extension_repository(ROOT, repos, "tagengine")
    with browser() as b, git_server(repos) as git:
        context = b.new_context(viewport=setup.viewport, **({"user_agent": PHONE, "is_mobile": True,
                                                              "has_touch": True} if setup.phone else {}))
        page = context.new_page()
        page.set_default_timeout(WAIT)
        t = Tavern(page, st.url)
        t.open()
        walk.started = time.monotonic()
        walk.step("click", "Extensions (the blocks icon) -> Install extension")
        walk.step("type", f"{git}/tagengine.git   (the repository's URL) -> Install just for me -> confirm")
        t.install_extension(f"{git}/tagengine.git")
        page.locator("#tagengine_toggle").wait_for(state="attached", timeout=WAIT)
        with walk.check():
            settings_drawer_reads_well(t)
            open_a_chat_is_information(t)
        walk.step("click", "API Connections (the plug icon): Chat Completion, Custom (OpenAI-compatible)")
        walk.step("type", f"{served.url}/v1   (Custom Endpoint) -> Connect")
        t.connect(f"{served.url}/v1")
        walk.step("click", "Character Management (the ID card icon) -> Import Character from File -> game-master.json")
        t.import_card(CARD)
        t.open_character("Game Master")
        walk.step("click", "the d20 left of the message box (the game sheet)")
        t.open_panel()
        start_campaign(t, walk, setup)
        edit_sheets(t, walk, setup)
        with walk.check():
            in_the_players_order(t, setup)
            no_nested_parentheses(t)
        receipts = play_three_turns(t, walk, setup)
        with walk.check():
            for who in setup.characters:
                assert any(who in r for r in receipts), (who, receipts)
        roll_a_check(t, walk, setup)
        walk.report(setup.label)  # printed, never asserted: a wall time belongs to a benchmark, not a test
        with walk.check():
            SCREENS.mkdir(parents=True, exist_ok=True)
            page.evaluate("() => document.getElementById('toast-container')?.remove()")
            page.screenshot(path=str(SCREENS / f"st-walk-{setup.label}.png"))
            badges_use_the_rulesets_words(t, setup)
            if setup.phone:
                targets_are_tappable(t)
                wound_word_on_the_boxes_line(t)
            else:
                stale_party_save_redraws_the_summary(t, served, setup)
        context.close()


# -- the walk's steps


def start_campaign(t: Tavern, walk: Walk, setup: Setup) -> None:
    panel = t.panel()
    walk.step("click", "Start a campaign...")
    panel.locator(".te-start").click()
    starter = panel.locator(".te-starter")
    starter.wait_for(timeout=WAIT)
    walk.step("choose", f"Ruleset: {setup.ruleset}")
    starter.locator(".te-start-ruleset").select_option(setup.ruleset)
    walk.step("type", f"Campaign name: {setup.campaign}")
    starter.locator(".te-start-name").fill(setup.campaign)
    walk.step("type", "Characters, one a line: " + " / ".join(setup.characters))
    starter.locator(".te-start-characters").fill("\n".join(setup.characters))
    walk.step("click", "Start and play it in this chat")
    starter.locator(".te-start-go").click()
    first = setup.characters[0]
    panel.locator(f"article[data-who='{first}'] .te-sheet-form [data-path]").first.wait_for(timeout=WAIT)
    note = t.page.locator("#extension_floating_prompt").input_value()
    assert f'[tagengine: campaign="{setup.campaign}"]' in note  # the chat is bound to it


def edit_sheets(t: Tavern, walk: Walk, setup: Setup) -> None:
    """The first character's sheet opens by itself once the campaign is started; the second's by its button."""
    panel = t.panel()
    path, value, _ = setup.skill
    field_path, text = setup.field
    for n, who in enumerate(setup.characters):
        sheet = panel.locator(f"article[data-who='{who}']")
        form = sheet.locator(".te-sheet-form")
        if n:
            walk.step("click", f"{who}: Edit the sheet")
            sheet.locator(".te-edit-sheet").click()
        form.locator(f"[data-path='{path}']").wait_for(timeout=WAIT)
        walk.step("choose", f"{who}: {path} = {value}")
        form.locator(f"[data-path='{path}']").select_option(value)
        walk.step("type", f"{who}: {field_path} = {text}")
        form.locator(f"[data-path='{field_path}']").fill(text)
        walk.step("click", f"{who}: Save")
        form.locator(".te-save").click()
        form.locator("[data-path]").first.wait_for(state="detached", timeout=WAIT)
        t.page.wait_for_function("([who, text]) => document.querySelector("
                                 "`#tagengine_panel article[data-who='${who}']`)?.textContent.includes(text)",
                                 arg=[who, text], timeout=WAIT)


def play_three_turns(t: Tavern, walk: Walk, setup: Setup) -> list[str]:
    """Three messages sent; each reply's badges, in words."""
    said: list[str] = []
    for n, text in enumerate(TURNS):
        walk.step("type", f"{text}   -> Send")
        t.send(text)
        badges = t.message(2 * (n + 1)).locator(".custom-te-badge")
        badges.first.wait_for(timeout=WAIT)
        got = [str(x) for x in badges.all_inner_texts()]
        assert got and not any("refused" in x or "could not" in x for x in got), got
        said.extend(got)
    return said


def roll_a_check(t: Tavern, walk: Walk, setup: Setup) -> None:
    panel = t.panel()
    who = setup.characters[0]
    roller = panel.locator(".te-roller")
    walk.step("click", "Roll a check")
    roller.locator("summary").click()
    walk.step("choose", f"Who rolls: {who}; what: {setup.skill[2].split(':')[1]}")
    roller.locator("select").first.select_option(who)
    roller.locator("select").nth(1).select_option(setup.skill[2])
    walk.step("click", "Roll")
    panel.locator(".te-roll").click()
    panel.locator(".te-card .te-die").first.wait_for(timeout=WAIT)
    assert setup.skill[2].split(":")[1] in panel.locator(".te-card").inner_text()


# -- the checks of what the walk saw wrong before


def settings_drawer_reads_well(t: Tavern) -> None:
    """Extensions -> tagengine: "Open the game sheet" on one line, the hint's two sentences with a space between
    them and the next label on a line of its own."""
    page = t.page
    t.extensions_drawer(opened=True)  # shown first: asked while it still opened, our section read as closed
    t.tagengine_section()
    button = page.locator(".tagengine-settings .te-open-sheet")
    button.wait_for(state="visible", timeout=WAIT)
    page.wait_for_timeout(400)  # the drawer's animation
    lines = button.evaluate("b => { const r = document.createRange(); r.selectNodeContents(b); "
                            "return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; }")
    assert lines == 1, f"'Open the game sheet' wraps onto {lines} lines"
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.locator(".tagengine-settings").screenshot(path=str(SCREENS / "st-settings.png"))
    text = page.locator(".tagengine-settings .inline-drawer-content").inner_text()
    assert "address.Its" not in text and "this page's address.\nIts --api-key" in text, text
    t.extensions_drawer(opened=False)


def open_a_chat_is_information(t: Tavern) -> None:
    """No chat open yet: the panel says to open one, as information, not as an error."""
    assert t.ctx("c.chatId") in (None, ""), "a fresh SillyTavern has no chat open before a character is chosen"
    t.page.click("#tagengine_toggle")
    said = t.panel().locator(".te-say", has_text="Open a chat")
    said.wait_for(timeout=WAIT)
    assert "te-info" in (said.get_attribute("class") or "") and "te-error" not in (said.get_attribute("class") or "")
    t.page.click("#tagengine_toggle")


def in_the_players_order(t: Tavern, setup: Setup) -> None:
    shown = t.panel().locator("article.te-sheet[data-who]").evaluate_all("a => a.map(x => x.dataset.who)")
    assert shown == list(setup.characters), shown  # named Vex then Rook: not Rook, Vex
    options = t.panel().locator(".te-roller select").first.locator("option").evaluate_all(
        "os => os.map(o => o.textContent)")
    assert options == list(setup.characters), options


def no_nested_parentheses(t: Tavern) -> None:
    words = t.panel().locator(".te-campaign-words").inner_text()
    assert 'Campaign "' in words and not re.search(r"\([^()]*\(", words), words


def badges_use_the_rulesets_words(t: Tavern, setup: Setup) -> None:
    """The badges' module as the page loaded it, with the campaign's words the panel set: a pool named by its id
    reads as the sheet's label, the party sheet as the ruleset names it, a malformed tag in words."""
    pool = "resolve" if setup.phone else "stress"
    got = t.page.evaluate(f"""async () => {{
        const m = await import('{EXT}/receipts.js');
        const say = (text) => m.receiptsIn(text).map(r => m.describe(r).text)[0];
        return {{
            pool: say('[sheet: who="X" op="restore" pool="{pool}" amount="1" result="ok" now="1/9"]'),
            party: say('[sheet: sheet="party" op="restore" pool="coin" amount="1" result="ok" now="1/8"]'),
            malformed: say('[sheet: raw="who=&quot;X" result="refused" reason="malformed"]'),
        }};
    }}""")
    assert got["pool"] == ("X: Stress +1 \u2192 1/9" if not setup.phone else "X: Resolve +1 \u2192 1/9"), got
    if not setup.phone:
        assert got["party"] == "Crew: Coin +1 \u2192 1/8", got
        shown = " ".join(t.page.locator("#chat .custom-te-badge").all_inner_texts())
        assert "Crew: Coin" in shown and "Party" not in shown, shown
    assert got["malformed"] == "Sheet tag: could not be read, so nothing changed", got


def targets_are_tappable(t: Tavern) -> None:
    """Every control of the panel at least 44 px tall at a phone's width (and a wound box 44 px wide)."""
    small = t.panel().evaluate("""p => [...p.querySelectorAll('button, select, input, summary, textarea')]
        .filter(x => x.offsetParent !== null)
        .map(x => [x.className + ' ' + (x.textContent || x.getAttribute('aria-label') || '').slice(0, 30),
                   x.getBoundingClientRect().width, x.getBoundingClientRect().height])
        .filter(([, w, h]) => h < 43.5 || (w < 43.5))""")
    assert small == [], small
    boxes = t.panel().locator(".te-box")
    assert boxes.count() > 0
    box = boxes.first.bounding_box()
    assert box is not None and box["width"] >= 44 and box["height"] >= 44


def wound_word_on_the_boxes_line(t: Tavern) -> None:
    """A wound track's "1/4 Scuffed" stays on its boxes' line."""
    rows = t.panel().locator(".te-wound").evaluate_all("""rows => rows.map(r => {
        const boxes = r.querySelector('.te-boxes').getBoundingClientRect();
        const now = r.querySelector('.te-now').getBoundingClientRect();
        const off = Math.abs(now.top + now.height / 2 - boxes.top - boxes.height / 2);
        return [r.querySelector('.te-now').textContent, off];
    })""")
    assert rows and all(off < 6 for _, off in rows), rows
    assert any("Scuffed" in word for word, _ in rows), rows


def stale_party_save_redraws_the_summary(t: Tavern, served: Served, setup: Setup) -> None:
    """The Crew form opened; another player saves a Tier meanwhile; this Save is refused with the newer sheet, and
    the summary above the form shows that Tier too (not the old one, beside a form that says it is newer)."""
    panel = t.panel()
    party = panel.locator("article.te-party")
    assert party.locator(".te-who").inner_text() == "Crew"
    assert party.locator(".te-edit-party").inner_text() == "Edit the Crew sheet"
    party.locator(".te-edit-party").click()
    form = party.locator(".te-party-form")
    form.locator("[data-path='fields.heat']").wait_for(timeout=WAIT)
    messages = t.page.evaluate(f"""async () => {{
        const m = await import('{EXT}/connection.js');
        const note = document.getElementById('extension_floating_prompt')?.value;
        return m.chatMessages(SillyTavern.getContext(), note).messages;
    }}""")
    api = f"{served.url}/tagengine/api/c/{setup.campaign}"
    read = httpx.post(f"{api}/read/party", json={"messages": messages}, timeout=30).json()["form"]
    other = httpx.post(f"{api}/party", json={"changes": {"fields.tier": 2}, "revision": read["revision"],
                                             "messages": messages}, timeout=30)
    assert other.status_code == 200, other.text
    form.locator("[data-path='fields.heat']").fill("1")
    form.get_by_role("button", name="Save").click()
    form.locator(".te-warning", has_text="this is the newer sheet").wait_for(timeout=WAIT)
    t.page.wait_for_function("""() => [...document.querySelectorAll('#tagengine_panel article.te-party > .te-row')]
        .some(r => r.querySelector('.te-label')?.textContent === 'Tier'
                   && r.querySelector('.te-value')?.textContent === '2')""", timeout=WAIT)
    assert form.locator("[data-path='fields.tier']").input_value() == "2"
    form.get_by_role("button", name="Cancel").click()
