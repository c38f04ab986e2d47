"""Issue 27 items 1, 2, 5: a player in a real headless Chromium (Playwright, as tests/test_pages.py) starts a
campaign, makes each sample ruleset's characters through the sheet editor, edits in play, and plays turns through
`tagengine serve` before its scripted upstream (tests/serve_kit.py). Then the data folder is deleted and the chat
alone replays to the same state. The pages work without JavaScript too; hostile forms are refused with a clear
problem and nothing kept (test_pages_hostile.py). Screenshots: tests/output/screens/editor-*.png."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_kit import Fake, Running
from test_pages import Game, browser, shoot  # noqa: F401 (browser: the module's Chromium, a fixture)

from conftest import SAMPLES, load_sample
from tagengine._internal.chat import Chat
from tagengine._internal.server.app import Options, make_app
from tagengine._internal.server.context import ServerContext
from tagengine._internal.server.memory.campaigns import Campaigns
from tagengine._internal.server.memory.store import Store

expect: Any = None
with contextlib.suppress(ImportError):  # the browser fixture skips the tests without Playwright: no failure here
    from playwright.sync_api import expect

XSS = "<script>window.pwned=1</script>"
SCRIPT = {
    "one": "The night is quiet.",
    "harm": 'A grave-hound bites. [sheet: who="Bram" op="damage" track="harm" kind="knock" amount="1"]',
    "two": 'Mira steadies her breath. [sheet: who="Mira" op="spend" pool="resolve" amount="1"]',
    "three": "Dawn comes.",
}


@contextmanager
def serving(tmp_path: Path, **kw: Any) -> Iterator[tuple[str, Fake]]:
    fake = Fake(script=SCRIPT)
    opts = Options(upstream="", data=tmp_path / "data", rulesets=SAMPLES / "rulesets", **kw)
    with Running(fake.app()) as up:
        opts.upstream = f"{up.url}/v1"
        with Running(make_app(opts)) as srv:
            yield srv.url, fake


def start_campaign(page: Any, url: str, name: str, ruleset: str, characters: list[str],
                   shot: str | None = None) -> None:
    """SHEET-1: a campaign started from /ui/: its name, a ruleset of the server's folder by its name, the
    characters one a line; the page goes on to the first character's sheet in the editor."""
    page.goto(f"{url}/ui/")
    page.get_by_role("link", name="Start a campaign").first.click()
    page.get_by_label("Campaign name").fill(name)
    page.get_by_label(ruleset).check()
    page.get_by_label("Characters, one a line").fill("\n".join(characters))
    if shot is not None:
        shoot(page, shot)
        shoot(page, f"{shot}-360", 360)
    page.get_by_role("button", name="Start the campaign").click()
    expect(page.locator("h1")).to_have_text(characters[0])
    expect(page.locator(".saved")).to_contain_text("The campaign is made")


def legends(page: Any) -> list[str]:
    return [t.inner_text() for t in page.locator("legend").all()]


def save(page: Any) -> None:
    """Save and wait for this save's answer: a "Saved" of an earlier save is taken off the page first, as the
    script replaces the page in place and the old status would otherwise answer the wait at once."""
    page.evaluate("document.querySelectorAll('.saved').forEach(e => e.remove())")
    page.get_by_role("button", name="Save").first.click()
    expect(page.locator(".saved")).to_contain_text("Saved")


def field(page: Any, label: str) -> Any:
    return page.get_by_label(label, exact=True)


def first_prompt(fake: Fake) -> str:
    return "\n".join(m["content"] for m in json.loads(fake.bodies[0])["messages"])


def make_heist(page: Any, url: str) -> None:
    """blades-like: an enum by its label, a number, a text, a training level (SHEET-4: abilities and skills by
    kind); the party sheet's Edit with a list row and a `hideWhen` that follows the typing (HIDE-5)."""
    start_campaign(page, url, "heist", "Blades-like Crew", ["Cutter", "Lurk"])
    field(page, "Playbook").select_option(label="Lurk")
    field(page, "Stash").fill("12")
    field(page, "Vice").fill(f"Gambling {XSS}")
    field(page, "Hunt").select_option(label="Two dots")
    expect(page.locator('[data-check="skills.hunt"]')).to_have_text("3 dice")  # re-computed as it is typed
    assert legends(page)[:3] == ["Abilities", "Skills", "Fields"]  # no section named: by kind (SHEET-4)
    save(page)
    page.get_by_role("link", name="Crew", exact=True).click()
    moorings = page.locator('.start-values [data-for="pools.moorings"]')
    expect(moorings).to_be_hidden()
    field(page, "Lair").select_option(label="barge")
    expect(moorings).to_be_visible()  # HIDE-5: the pool follows the Lair typed, before any save
    page.get_by_role("button", name="Add a row to Cohorts").click()  # a save, then the row
    expect(field(page, "Cohorts row 1: Name")).to_be_visible()
    field(page, "Cohorts row 1: Name").fill("Vultures")
    field(page, "Cohorts row 1: Elite").check()
    save(page)
    expect(page.locator("h1")).to_contain_text("revision 2")  # two saves of the party sheet (PARTY-36)
    assert field(page, "Cohorts row 1: Name").input_value() == "Vultures"


def make_roads(page: Any, url: str) -> None:
    """ember-roads: a level that raises a derived value as it is typed (SHEET-19: shown, never typed over), the
    chips of "Choose N" (SHEET-14..18), a check refused untrained and then trained (UNTR-13), a longtext, dice,
    and a list row added and filled (SHEET-28)."""
    start_campaign(page, url, "roads", "Ember Roads", ["Mira", "Tobin"])
    assert [t.split(" untrained")[0] for t in legends(page)[:5]] == ["Abilities", "Skills", "Saves", "Labour",
                                                                     "Road"]  # the ruleset's sections (SHEET-3)
    labour = page.locator("fieldset", has=page.locator("legend", has_text="Labour"))
    assert labour.get_by_label("Dig", exact=True).count() == 1 and "untrained: by -1" in labour.inner_text()
    roads_known = page.locator('output[data-path="derived.roads_known"]')
    expect(roads_known).to_have_text("1")
    assert page.locator("output[data-path='derived.roads_known']").evaluate("e => e.tagName") == "OUTPUT"
    field(page, "Level").fill("5")
    expect(roads_known).to_have_text("2")  # the derived value, re-computed for the draft
    chips = page.locator('[data-chips="fields.roads"]')
    expect(chips.locator(".choose-count")).to_have_text("Choose 2 · 0 chosen")
    chips.get_by_role("button", name="Add coast to Roads walked").click()
    expect(field(page, "Roads walked")).to_have_value("coast")
    expect(chips.locator(".choose-count")).to_have_text("Choose 2 · 1 chosen")
    chips.get_by_role("button", name="Add marsh to Roads walked").click()
    expect(chips.locator(".choose-count")).to_have_text("Choose 2 · 2 chosen")
    expect(chips.get_by_role("button", name="Add pass to Roads walked")).to_be_hidden()  # SHEET-17: N are in
    field(page, "Roads walked").fill("coast, marsh, the old salt road")  # SHEET-15, SHEET-18: typing is never refused
    dig = page.locator('[data-check="skills.dig"]')
    expect(dig).to_contain_text("untrained: refused")  # UNTR-13: no number
    field(page, "Dig").select_option(label="Trained")
    expect(dig).to_have_text(re.compile(r"^\d+ dice$"))
    field(page, "Backstory").fill("Born on the coast.\nLeft at fifteen.")
    field(page, "Signal horn").fill("2d6+1")
    page.get_by_role("button", name="Add a row to Gear").click()
    field(page, "Gear row 1: Item").fill("Rope")
    field(page, "Gear row 1: Bulk").fill("2")
    field(page, "Gear row 1: Packed").check()
    save(page)
    assert field(page, "Roads walked").input_value() == "coast, marsh, the old salt road"
    assert field(page, "Backstory").input_value() == "Born on the coast.\nLeft at fifteen."


def make_five(page: Any, url: str) -> dict[str, int]:
    """fifth-like: derived values a `hideWhen` hides until the casting typed shows them (HIDE-5), a chip, and a
    list row whose rolled column is rolled by its Roll button (SHEET-32..34)."""
    start_campaign(page, url, "five", "Fifth-like", ["Vess"])
    dc = page.locator('[data-for="derived.spell_dc"]')
    expect(dc).to_be_hidden()
    field(page, "Spellcasting").select_option(label="full")
    expect(dc).to_be_visible()
    page.locator('[data-chips="fields.enemies"]').get_by_role("button", name="Add undead to Favoured enemies").click()
    page.get_by_role("button", name="Add a row to Features").click()
    field(page, "Features row 1: Feature").fill("Second Wind")
    field(page, "Features row 1: Die").select_option(label="d10")
    page.get_by_role("button", name=re.compile(r"^Roll Features row 1: Power")).click()
    expect(page.locator(".saved")).to_contain_text("Saved")
    power = int(field(page, "Features row 1: Power").input_value())
    assert 1 <= power <= 10  # a d10, rolled by the engine with the campaign's own dice
    return {"power": power}


def make_vault(page: Any, url: str) -> None:
    """gravewatch: an enum that shows the lantern oil pool as it is typed (HIDE-5, REF-12: live values at their
    start), a text holding `<script>` (kept as text), a list row, a training level."""
    start_campaign(page, url, "vault", "Gravewatch", ["Mira", "Bram"])
    oil = page.locator('.start-values [data-for="pools.oil"]')
    expect(oil).to_be_hidden()
    field(page, "Watch").select_option(label="Night watch")
    expect(oil).to_be_visible()
    expect(oil).to_contain_text("6/6")  # REF-12: at its start
    field(page, "Oath").fill(f"Never again {XSS}")
    field(page, "Ward").select_option(label="Sworn")
    page.get_by_role("button", name="Add a row to Scars").click()
    field(page, "Scars row 1: Scar").fill("Hound bite")
    field(page, "Scars row 1: Levels").fill("1")
    save(page)
    assert page.evaluate("window.pwned") is None


MAKERS = {"blades-like": make_heist, "ember-roads": make_roads, "fifth-like": make_five, "gravewatch": make_vault}
SEEN = {  # what the game sheet and the first prompt show of what was typed
    "blades-like": ("heist", ["Lurk", "Gambling <script>window.pwned=1</script>", "Vultures"],
                    ["Hunt 3 dice (Two dots)", "Cohorts: Vultures gang", "Moorings: 3/3"]),
    "ember-roads": ("roads", ["coast, marsh, the old salt road", "Rope"], ["Level: 5", "Gear: Rope"]),
    "fifth-like": ("five", ["Second Wind"], ["Features: Second Wind d10", "1st-level slots", "Spell save DC"]),
    "gravewatch": ("vault", ["Night watch", "Never again <script>window.pwned=1</script>", "Hound bite"],
                   ["Watch: Night watch", "Lantern oil 6/6", "Scars: Hound bite"]),
}


@pytest.mark.parametrize("sample", list(MAKERS))
def test_a_player_makes_the_characters_of_each_sample_in_the_form(browser, tmp_path, sample):  # noqa: F811
    """The sheet editor in a browser, for each sample ruleset: sections as the ruleset groups them (SHEET-1,
    SHEET-3, SHEET-4), suggestions as chips that append a word (SHEET-13, SHEET-14), free typing kept (SHEET-15,
    SHEET-18), "Choose N" with the count chosen and no chips once N are in (SHEET-16, SHEET-17), derived values
    shown and never typed (SHEET-19), a rolled column's Roll button (SHEET-32, SHEET-33, SHEET-34), no number for
    a refused untrained check (UNTR-13), `hideWhen` following the typing (HIDE-5), live values at their start
    (REF-12). Then the game sheet and the first prompt show what was typed, and nothing typed ran as a script."""
    with serving(tmp_path) as (url, fake):
        page = browser.new_page()
        MAKERS[sample](page, url)
        shoot(page, f"editor-{sample}")
        shoot(page, f"editor-{sample}-360", 360)
        name, on_sheet, in_prompt = SEEN[sample]
        page.goto(f"{url}/ui/c/{name}")
        text = page.locator("main").inner_text()
        for value in on_sheet:
            assert value in text, value
        assert page.evaluate("window.pwned") is None
        Game(url, name).turn("one")
        prompt = first_prompt(fake)
        for value in in_prompt:
            assert value in prompt, value
        page.close()


def heist_party(url: str, browser: Any) -> None:  # noqa: F811
    """PARTY-35..37: two players open the party's Edit; the first save lands; the second, opened at the older
    revision, is refused, the newer sheet shown and the draft kept; saving again is deliberate, and lands."""
    a, b = browser.new_context(), browser.new_context()
    pa, pb = a.new_page(), b.new_page()
    for p in (pa, pb):
        p.goto(f"{url}/ui/c/heist")
        p.get_by_role("link", name="Edit Crew").click()
        expect(p.locator("h1")).to_contain_text("revision 0")
    field(pa, "Heat").fill("3")
    save(pa)
    field(pb, "Tier").fill("2")
    field(pb, "Upgrades").fill("Carriage")
    pb.get_by_role("button", name="Save").first.click()
    stale = pb.locator(".stale")
    expect(stale).to_contain_text("Someone saved Crew after you opened it")
    assert stale.locator("div", has=pb.locator("dt", has_text="Heat")).locator("dd").inner_text() == "3"  # newer
    assert field(pb, "Tier").input_value() == "2" and field(pb, "Upgrades").input_value() == "Carriage"  # kept
    shoot(pb, "editor-party-stale")
    shoot(pb, "editor-party-stale-360", 360)
    save(pb)  # the player's deliberate choice (PARTY-37)
    assert "revision 2" in pb.locator("h1").inner_text()
    pa.goto(f"{url}/ui/c/heist")
    party = pa.locator(".party")
    for label, value in (("Heat", "3"), ("Tier", "2"), ("Upgrades", "Carriage")):
        assert party.locator("div", has=pa.locator("dt", has_text=label)).locator("dd").inner_text() == value
    a.close()
    b.close()


def test_in_play_a_box_a_state_the_party_and_the_chat_that_replays_them(browser, tmp_path):  # noqa: F811
    """WOUND-31, WOUND-51: a free box marked by a click; STATE-15: a state picked; PARTY-35, PARTY-36, PARTY-37:
    the party's Edit in two browser contexts; CLOCK-23: the clocks beside the party status; PARTY-22: the party
    sheet folds away. Turns are played through the server, one regenerated; then the data folder is deleted and
    the chat alone gives the same state (ED-6)."""
    with serving(tmp_path) as (url, _):
        page = browser.new_page()
        start_campaign(page, url, "vault", "Gravewatch", ["Mira", "Bram"], shot="editor-new")
        start_campaign(page, url, "heist", "Blades-like Crew", ["Cutter", "Lurk"])
        game = Game(url, "vault")
        game.turn("harm")
        page.goto(f"{url}/ui/c/vault")
        bram = page.locator("article.sheet", has=page.locator("h2.who", has_text="Bram"))
        harm = bram.locator(".wound", has=page.locator(".label", has_text="Harm"))
        expect(harm.locator(".cell.marked")).to_have_count(1)
        harm.get_by_role("button", name="Harm box 3 (Bleeding): mark it").click()  # any free box (WOUND-51)
        expect(harm.locator(".cell.marked")).to_have_count(2)
        mira = page.locator("article.sheet", has=page.locator("h2.who", has_text="Mira"))
        mira.get_by_role("button", name="Lantern: Shuttered").click()
        expect(mira.locator(".chip.on")).to_have_text("Shuttered")
        expect(page.locator(".waiting")).to_contain_text("2 edits wait for the next reply")
        shoot(page, "editor-game-sheet")
        shoot(page, "editor-game-sheet-360", 360)
        reply = game.turn("two", stream=True)
        lines = reply.split("\n")
        assert lines[0].startswith('[edit: by="player" who="Bram" changes="marks.harm.3=knock"')
        assert lines[1].startswith('[edit: by="player" who="Mira" changes="states.lantern=shuttered"')
        again = game.messages[:-1]
        with httpx.Client(timeout=30) as h:  # regenerate: the same history asked again
            regen = h.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": again}).json()
        assert regen["choices"][0]["message"]["content"] == reply
        game.turn("three")
        page.goto(f"{url}/ui/c/vault")
        expect(page.locator(".turn")).to_have_text("turn 3")  # the regenerated reply is turn two again (STX-8)
        expect(page.locator("article.sheet", has=page.locator("h2.who", has_text="Bram")).locator(
            ".wound", has=page.locator(".label", has_text="Harm")).locator(".cell.marked")).to_have_count(2)

        heist = Game(url, "heist")
        heist.turn("one")
        page.goto(f"{url}/ui/c/heist")
        top = page.locator(".table-top")
        assert top.locator(".party").count() == 1 and top.locator(".clocks-panel").count() == 1  # CLOCK-23
        page.locator(".party > summary").click()  # PARTY-22: the party sheet folds away
        expect(page.locator(".party .fields")).to_be_hidden()
        heist_party(url, browser)
        page.close()
        served = served_state(tmp_path, "vault", game.messages)
    start = campaign_start(tmp_path, "vault")
    shutil.rmtree(tmp_path / "data")
    rs = load_sample("gravewatch")
    chat = Chat.from_history(rs, start, [m for m in game.messages if m["role"] != "system"]).state
    assert chat.to_json() == served.to_json()
    assert chat.live_of("Mira").states.get("lantern") == "shuttered"
    assert chat.live_of("Bram").marks["harm"].marks == ("knock", "knock")  # the hit and the box marked by hand


def served_state(tmp_path: Path, name: str, messages: list[dict[str, str]]) -> Any:
    """The state the server's chain gives for the chat (its store as it stands), in a thread of its own: the
    Playwright fixture holds this thread's event loop."""
    async def replay() -> Any:
        ctx = ServerContext(Options(upstream="demo", data=tmp_path / "data"))
        try:
            return (await ctx.replayed(ctx.campaign(name), [m for m in messages if m["role"] != "system"])).state
        finally:
            await ctx.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, replay()).result(timeout=60)


def campaign_start(tmp_path: Path, name: str) -> Any:
    store = Store(tmp_path / "data")
    try:
        return Campaigns(store).get(name).start
    finally:
        store.close()


def test_the_editor_and_the_game_sheet_work_without_javascript(browser, tmp_path):  # noqa: F811
    """Item 5: with scripts off, a chip is a button that saves the text with its word appended (`with_chip`), a
    row is added, a cell rolled and a box marked by posting the form; each answer a redirect or the page."""
    ctx = browser.new_context(java_script_enabled=False)
    with serving(tmp_path) as (url, _):
        page = ctx.new_page()
        page.goto(f"{url}/ui/new")
        page.get_by_label("Campaign name").fill("five")
        page.get_by_label("Fifth-like").check()
        page.get_by_label("Characters, one a line").fill("Vess")
        page.get_by_role("button", name="Start the campaign").click()
        assert page.locator("h1").inner_text() == "Vess"
        field(page, "Favoured enemies").fill("giants")
        page.get_by_role("button", name="Add undead to Favoured enemies").click()
        assert field(page, "Favoured enemies").input_value() == "giants, undead"
        assert "Saved: 1 change" in page.locator(".saved").inner_text()
        page.get_by_role("button", name="Add a row to Features").click()
        field(page, "Features row 1: Feature").fill("Action Surge")
        field(page, "Features row 1: Die").select_option(label="d8")
        page.get_by_role("button", name=re.compile(r"^Roll Features row 1: Power")).click()
        assert 1 <= int(field(page, "Features row 1: Power").input_value()) <= 8
        field(page, "Level").fill("50")
        field(page, "Class").select_option(label="Wizard")
        page.get_by_role("button", name="Save").first.click()
        level = page.locator('[data-for="fields.level"]')
        assert "outside 1..20" in level.locator(".problem").inner_text()  # next to its field, in words
        assert field(page, "Level").input_value() == "50"  # what was typed stays
        assert field(page, "Class").input_value() == "wizard"  # and the rest of the draft too
        page.goto(f"{url}/ui/c/five")
        page.get_by_label("Hit points", exact=True).fill("4")
        page.get_by_role("button", name="Set Hit points", exact=True).click()  # a hand edit: 303 back to the sheet
        assert page.url.endswith("/ui/c/five")
        assert page.locator(".pool-row", has_text="Hit points").locator(".value").inner_text() == "4/9"
    ctx.close()
