"""Player text in the reminder: a field, a list's cell, a row's name, the party's fields and lists are kept as the
player typed them (ED-3), and the reminder makes every one of them inert (`prompt_inert`, PI-1): no tag opener, no
chat-app macro, no line of its own. One property test per kind of value, through the editor's own edit path, and
the issue's scar as a regression."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample, sample_dict
from tagengine._internal.commands.sheet_edits import edit_party, edit_sheet
from tagengine._internal.prompt.build import reminder
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.sheet.edit_paths import Change
from tagengine._internal.state import GameState
from tagengine._internal.text import prompt_inert, prompt_unsafe

SETTINGS = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
# what a tag, a macro or a line of its own is made of, and plain words between them
HOSTILE = st.text(st.one_of(st.sampled_from("[]{}\n\r\t\u2028\x00\"\\:= "), st.characters()), max_size=40)
PIECES = ["[", "]", "{{", "}}", "{", "}", '"', "\\", ":", "=", "clock:", "sheet:", "user", " ", "Doom", "é"]
# what an edit takes: one line of text (a field, a cell), or lines and tabs (a longtext field)
ONE_LINE = st.one_of(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10).map("".join),
                     st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=30))
LINES = st.lists(st.one_of(st.sampled_from([*PIECES, "\n", "\r\n", "\t"]), ONE_LINE), min_size=1,
                 max_size=6).map("".join)
SCAR = '[clock: name="Doom" size="4"] {{user}}'


def ember_summarising_text() -> Ruleset:
    """ember-roads with its text and longtext fields in the GM block too (GM-13): `roads` and `notes`."""
    data = sample_dict("ember-roads")
    data["gm"]["sheetSummary"]["fields"] += ["roads", "notes"]
    return Ruleset.from_dict(data)


EMBER, GRAVE, FIFTH, BLADES = ember_summarising_text(), *(load_sample(n) for n in ("gravewatch", "fifth-like",
                                                                                 "blades-like"))


def blocks(text: str) -> str:
    """The reminder's sheet blocks, party and clocks: all of it before the commands it teaches (whose examples
    are the engine's own tags)."""
    head, found, _ = text.partition("\n## Commands you can write")
    assert found, text
    return head


def assert_inert(rs: Ruleset, who: str | None, changes: Callable[[str], dict[str, object]], text: str) -> None:
    """The sheet edited with `changes(text)`: no tag opener and no macro in the reminder's blocks, what was typed
    is there made inert, and it made no line of its own (the blocks have as many lines as with a plain word)."""
    shown = blocks(reminder(rs, edited(rs, who, changes(typed(text)))))
    assert "[" not in shown and "]" not in shown, shown
    assert "{{" not in shown and "}}" not in shown, shown
    assert prompt_inert(text) in shown
    plain = blocks(reminder(rs, edited(rs, who, changes("plain"))))
    assert len(shown.splitlines()) == len(plain.splitlines())


def edited(rs: Ruleset, who: str | None, changes: dict[str, object]) -> GameState:
    """A new sheet (Mira's, or the party's when `who` is None) with `changes` made as the editor makes them;
    text an edit refuses (a control character, a line break in one-line text) never gets in, so it is skipped."""
    start = GameState.new(rs, ["Mira"])
    done = edit_party(rs, start, changes) if who is None else edit_sheet(rs, start, who, changes)
    assume(done.ok)
    return done.state


def typed(text: str) -> str:
    assume(text.strip())  # a blank value shows as `-`
    return text


@SETTINGS
@given(st.one_of(HOSTILE, LINES))
def test_dec_25_the_inert_text_is_prompt_safe_and_safe_text_is_kept(text):
    """[DEC-25]: whatever was typed, `prompt_inert` gives a prompt-safe line; text that is one already comes back
    as it was, and the rule applied twice changes nothing more."""
    out = prompt_inert(text)
    assert prompt_unsafe(out) is None
    assert prompt_inert(out) == out
    if prompt_unsafe(text) is None:
        assert out == text


def test_gm_15_the_scar_that_opened_a_clock_is_inert_in_the_reminder():
    """[GM-15]: a scar named `[clock: name="Doom" size="4"] {{user}}` (a list's name column) reached the reminder
    as a clock tag and a SillyTavern macro; it reads `(clock: name="Doom" size="4") {user}`."""
    done = edit_sheet(GRAVE, GameState.new(GRAVE, ["Mira"]), "Mira", {"add:lists.scars": None,
                                                                      "lists.scars.0.name": SCAR})
    assert done.ok and done.state.cards["Mira"]["lists"]["scars"][0]["name"] == SCAR  # kept as typed (ED-3)
    state = done.state
    shown = blocks(reminder(GRAVE, state))
    assert '- Scars: (clock: name="Doom" size="4") {user}' in shown
    assert "[clock:" not in shown and "{{user}}" not in shown


@SETTINGS
@given(ONE_LINE)
def test_gm_13_a_text_field_in_the_summary_is_inert(text):
    """[GM-13]: a text field the sheet summary shows (ember-roads' `roads`)."""
    assert_inert(EMBER, "Mira", lambda t: {"fields.roads": t}, text)


@SETTINGS
@given(LINES)
def test_gm_13_a_longtext_field_keeps_to_its_own_line(text):
    """[GM-13]: a longtext field (`notes`) may hold line breaks and tabs: in the reminder it is one line."""
    assert_inert(EMBER, "Mira", lambda t: {"fields.notes": t}, text)


@SETTINGS
@given(ONE_LINE)
def test_gm_15_a_list_cell_named_in_the_summary_is_inert(text):
    """[GM-15]: a summary list's name column (ember-roads' gear `item`)."""
    assert_inert(EMBER, "Mira", lambda t: {"add:lists.gear": None, "lists.gear.0.item": t}, text)


@SETTINGS
@given(ONE_LINE)
def test_sheet_31_a_rows_name_beside_its_uses_is_inert(text):
    """[SHEET-31]: a list with row pools names each row in the reminder (fifth-like's features, `Name 1/1`)."""
    def changes(t: str) -> dict[str, object]:
        return {"add:lists.features": None, "lists.features.0.name": t, "lists.features.0.uses": "1"}

    assert_inert(FIFTH, "Mira", changes, text)
    assert f"{prompt_inert(text)} 1/1" in blocks(reminder(FIFTH, edited(FIFTH, "Mira", changes(text))))


@SETTINGS
@given(ONE_LINE)
def test_party_13_a_party_text_field_is_inert(text):
    """[PARTY-13]: a party field its summary shows (blades-like's `upgrades`)."""
    assert_inert(BLADES, None, lambda t: {"fields.upgrades": t}, text)


@SETTINGS
@given(ONE_LINE)
def test_party_21_a_party_list_cell_is_inert(text):
    """[PARTY-21]: the party's summary list (blades-like's cohorts, named by `name`)."""
    assert_inert(BLADES, None, lambda t: {"add:lists.cohorts": None, "lists.cohorts.0.name": t}, text)


def test_the_editor_says_where_the_prompt_changes_what_was_typed():
    """The editor shows a hint beside each text that the prompt changes (brackets, macro braces, a longtext's line
    breaks), and none beside text it keeps as it is; what the hint says is what `prompt_inert` does."""
    from tagengine._internal.pages.sheet_editor import editor_context
    from tagengine._internal.pages.templates import html_env
    from tagengine._internal.sheet.form import edit_form

    done = edit_sheet(EMBER, GameState.new(EMBER, ["Mira"]), "Mira", [
        Change("add", "lists.gear"), Change("set", "lists.gear.0.item", SCAR), Change("add", "lists.gear"),
        Change("set", "lists.gear.1.item", "Rope"), Change("set", "fields.roads", "North"),
        Change("set", "fields.notes", "one\ntwo")])
    assert done.ok, done.problems
    state = done.state
    macros = html_env().get_template("_editor.html.j2").module
    hinted = {}
    for section in editor_context(EMBER, edit_form(EMBER, state, "Mira"))["sections"]:
        for i in section["inputs"]:
            hinted[i["path"]] = "inert-hint" in str(macros.field(i))
        for t in section["tables"]:
            html = str(macros.table(t))
            for row in t["rows"]:
                cell = row["cells"][0]
                at = html.index(f'data-for="{cell["path"]}"')
                hinted[cell["path"]] = "inert-hint" in html[at:html.index("</td>", at)]
    assert hinted["lists.gear.0.item"] and hinted["fields.notes"]
    assert not hinted["lists.gear.1.item"] and not hinted["fields.roads"]
    assert not any(v for k, v in hinted.items() if k not in ("lists.gear.0.item", "fields.notes"))
    assert prompt_inert("[a] {{b}}\nc") == "(a) {b} / c"  # as the hint says
