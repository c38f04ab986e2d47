"""The prompt (DEC-29..34): system prompt, reminder, tokens, budget, and `tagengine preview`."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from cmdkit import sample_state

from conftest import SAMPLES, edit, load_sample, sample_dict
from tagengine._internal.cli import run
from tagengine._internal.prompt import (
    Budget,
    BudgetError,
    build_prompt,
    encoding,
    for_model,
    reminder,
    system_prompt,
    world_prompt,
)
from tagengine._internal.ruleset import Ruleset
from tagengine._internal.state import GameState

GRAVE, EMBER, FIFTH, BLADES = (load_sample(n) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like"))
BIG = Budget(context=128_000, response=1024, model="gpt-4o")


def test_dec_33_offline_encodings_give_official_ids():
    assert encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert encoding("o200k_base") is encoding("o200k_base")  # built once per process
    assert encoding("o200k_base").special_tokens_set == {"<|endoftext|>", "<|endofprompt|>"}


def test_an_encodings_python_rank_table_is_emptied_when_released(monkeypatch: pytest.MonkeyPatch):
    """PF-34: tiktoken copies the ranks into its core; the dict it keeps beside them (24 MB for o200k) serves only
    its pickling, so a long-running process empties it (`release_rank_tables`), and the encoding counts and decodes
    as before. A command that exits soon keeps it: emptying it costs more than its exit."""
    from tagengine._internal.prompt import tokens

    handed: list[dict[bytes, int]] = []
    real = tokens.definition

    def spy(name: str, load: object) -> dict[str, object]:
        made = real(name, load)  # type: ignore[arg-type]
        handed.append(made["mergeable_ranks"])
        return made

    monkeypatch.setattr(tokens, "definition", spy)
    monkeypatch.setattr(tokens, "_HANDED", [])  # this test's table only: the process's encodings keep theirs
    made = tokens.encoding.__wrapped__("cl100k_base")  # a new one: the process's cached encoding is left alone
    assert len(handed) == 1 and len(handed[0]) > 100_000  # kept until released
    tokens.release_rank_tables()
    assert handed[0] == {}
    assert made.encode("hello world") == [15339, 1917] and made.decode([15339, 1917]) == "hello world"
    assert made.n_vocab == encoding("cl100k_base").n_vocab


def test_a_release_while_another_thread_builds_an_encoding_leaves_that_one_whole(monkeypatch: pytest.MonkeyPatch):
    """PF-34: the server releases the rank tables in the worker thread of a fit that built a tokenizer, while another
    worker may be building one (two cold chats at once, or two encodings). A table is released only once its
    encoding is built: emptied while tiktoken still reads it, the encoding failed to build (or, cached, would count
    with no ranks for the life of the server). The release is made at that instant, deterministically."""
    import tiktoken

    from tagengine._internal.prompt import tokens

    class Racing(tiktoken.Encoding):
        def __init__(self, **kw: Any) -> None:
            tokens.release_rank_tables()  # another worker's fit ends just as this one builds
            super().__init__(**kw)

    monkeypatch.setattr(tiktoken, "Encoding", Racing)
    monkeypatch.setattr(tokens, "_HANDED", [])  # this test's table only: the process's encodings keep theirs
    made = tokens.encoding.__wrapped__("cl100k_base")
    assert made.encode("hello world") == [15339, 1917]
    tokens.release_rank_tables()
    assert made.encode("hello world") == [15339, 1917] and made.decode([15339, 1917]) == "hello world"


def test_dec_33_model_to_encoding():
    assert for_model("gpt-4o-mini") == ("o200k_base", 0.0)
    assert for_model("gpt-4.1") == ("o200k_base", 0.0)
    assert for_model("o3") == ("o200k_base", 0.0)
    assert for_model("gpt-4-turbo") == ("cl100k_base", 0.0)
    assert for_model("gpt-3.5-turbo") == ("cl100k_base", 0.0)
    name, margin = for_model("llama-3-70b")
    assert name == "o200k_base" and margin > 0


def test_gm_1_check_guidance_replaces_the_built_in_paragraph():
    assert GRAVE.file.gm.checkGuidance in system_prompt(GRAVE, BIG).text
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["gm"].pop("checkGuidance")))
    text = system_prompt(rs, BIG).text
    assert "When the outcome of an action is uncertain, ask for a check" in text


def test_gm_4_5_world_guidance_only_in_the_world_prompt():
    wg = EMBER.file.gm.worldGuidance
    p = build_prompt(EMBER, sample_state("ember-roads"), [{"role": "user", "content": "Go."}], BIG)
    assert wg not in p.system and wg not in p.reminder and all(wg not in m["content"] for m in p.messages)
    assert wg in world_prompt(EMBER)


def test_gmref_5_6_9_reference_in_system_never_in_reminder():
    p = build_prompt(GRAVE, sample_state("gravewatch"), [], BIG)
    assert "## Game Master rules reference\n" + GRAVE.file.gmReference in p.system
    assert GRAVE.file.gmReference not in p.reminder
    assert "rules reference" not in system_prompt(FIFTH, BIG).text  # GMREF-9: no reference, prompt unchanged


def test_dec_30_system_prompt_has_nothing_per_turn():
    s1 = build_prompt(GRAVE, sample_state("gravewatch"), [{"role": "user", "content": "a"}], BIG).system
    s2 = build_prompt(GRAVE, GameState.new(GRAVE, ["Zed"]), [{"role": "user", "content": "b" * 900}], BIG).system
    assert s1 == s2 and "Mira" not in s1 and "Zed" not in s1
    assert system_prompt(GRAVE, BIG) is system_prompt(GRAVE, BIG)  # DEC-34: cached per ruleset and budget


def test_dec_29_message_order_and_reminder_in_user():
    hist = [{"role": "user", "content": "We go in."}, {"role": "assistant", "content": "The door creaks."},
            {"role": "user", "content": "I light the lantern."}]
    p = build_prompt(GRAVE, sample_state("gravewatch"), hist, BIG)
    assert [m["role"] for m in p.messages] == ["system", "user", "assistant", "user", "system"]
    assert p.messages[-1]["content"] == p.reminder
    merged = build_prompt(GRAVE, sample_state("gravewatch"), hist, Budget(context=128_000, reminder_in_user=True))
    assert [m["role"] for m in merged.messages] == ["system", "user", "assistant", "user"]
    assert merged.messages[-1]["content"].startswith("I light the lantern.\n\n# Reminder")


def test_gm_13_17_character_block():
    r = reminder(GRAVE, sample_state("gravewatch"))
    assert "## Mira" in r and "## Bram" in r
    assert "Soothe 1 dice (Sworn, capped at 1, wound -1, sheet -1)" in r  # GM-14 trained skill, CAP, PEN, ADJ
    assert "Brawl" not in r.split("## Bram")[0]  # Mira is untrained in Brawl: not shown
    assert "- Watch: Night watch" in r  # GM-13 summary field, enum label
    assert "- Harm still to take: 5" in r  # summary derived value
    assert "- Scars: Old bite, Burn" in r  # GM-15 nameColumn
    assert "Lantern oil 4/6" in r and "Lantern oil" not in r.split("## Bram")[1].split("##")[0]  # hidden for Bram
    e = reminder(EMBER, sample_state("ember-roads"))
    assert "- Gear: Rope 2 Packed, Lantern 1 Packed, Tent 3 Packed, Lute 2" in e  # GM-16, GM-17
    assert "Dig: cannot be attempted untrained" in e  # GM-14: refused ones marked


def test_track_5_6_plain_tracks_at_default():
    f = reminder(FIFTH, sample_state("fifth-like"))
    assert "- Exhaustion: 1 (of 0..6)" in f and "Death save" not in f.split("## Commands")[0]
    b = reminder(BLADES, sample_state("blades-like"))
    assert "- Trauma: 0 (of 0..4)" in b  # alwaysShow


def test_state_13_14_every_state_and_the_command():
    g = reminder(GRAVE, sample_state("gravewatch"))
    assert "- Lantern: Lit" in g.split("## Bram")[1]  # at its default, still shown
    # GM-21: the op="state" command and each state's values
    assert 'Lantern (Lit, Shuttered, Out): [sheet: who="Mira" op="state" state="Lantern" value="Lit"]' in g
    assert 'op="state"' not in reminder(FIFTH, sample_state("fifth-like"))  # DEC-18: no states, not taught


def test_wound_47_pen_7_wound_lines():
    g = reminder(GRAVE, sample_state("gravewatch"))
    assert "- Strain: 1 of 4 boxes marked" in g
    # Harm is Gravewatch's combat health, read as what is left (WOUND-39); without `combat` it reads its marks
    assert "- Harm (health): 5 of 7 left, at Winded; costs 1 die fewer on every roll" in g
    plain = Ruleset.from_dict({k: v for k, v in sample_dict("gravewatch").items() if k != "combat"})
    assert "- Harm: 2/7, at Winded; costs 1 die fewer on every roll" in reminder(plain, sample_state("gravewatch"))


def test_gm_20_wound_command_lists_levels_and_kinds():
    g = reminder(GRAVE, sample_state("gravewatch"))
    assert "Harm (a wound track: Scuffed, Winded, Bleeding, Down; kinds from light to severe: knock (K), tear (T))" in g
    assert 'add box="N"' in g


def test_party_13_15_21_party_block_and_clock_9():
    b = reminder(BLADES, sample_state("blades-like"))
    assert "\n## Crew\n" in b  # PARTY-21: the party's block is in the reminder
    block = b.split("## Crew")[1].split("##")[0]
    assert block.splitlines()[1:] == ["- Heat: 2", "- Tier: 1", "- Crew size: 2", "- Upgrades: Hidden vault",
                                      "- Coin: 3/8", "- Moorings: 3/3", "- Cohorts: The Grinders gang Elite, Old Marta "
                                      "expert", ""]
    # PARTY-32: "Cohorts" above is the party list named in the party's summary.lists
    assert "## Clocks\n- Bluecoats close in: 3/6" in b
    assert "[clock: name=" in b and "sizes 4, 6, 8; at most 8" in b


def test_dec_18_only_usable_commands():
    g = reminder(GRAVE, sample_state("gravewatch"))
    assert "[clock:" not in g and 'sheet="party"' not in g and 'op="condition"' not in g
    assert 'op="rest" rest="Catch your breath"' in g  # GM-19: taught with the names the ruleset declares


def test_untr_15_untrained_rules_listed():
    e = reminder(EMBER, sample_state("ember-roads"))
    rules = e.split("## Untrained checks")[1].split("##")[0]
    assert "Labour (any skill or save in it, unless it says otherwise) rolls -1 dice untrained" in rules
    assert "Dig cannot be attempted untrained" in rules and "Listen is one step harder untrained" in rules


def hist(n):
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"turn {i}: " + "we press on " * 30})
        out.append({"role": "assistant", "content": f"reply {i}: " + "the dead stir " * 80})
    out.append({"role": "user", "content": "LAST: I raise the lantern."})
    return out


def test_dec_32_drop_oldest_history_then_lower_response():
    s = sample_state("gravewatch")
    p = build_prompt(GRAVE, s, hist(20), Budget(context=4000, response=1024, response_min=256, model="gpt-4o"))
    assert p.report.cuts[0]["part"] == "history" and p.messages[-2]["content"].startswith("LAST")
    assert p.report.total <= 4000 and p.report.response == 1024
    p = build_prompt(GRAVE, s, hist(20), Budget(context=1400, response=1024, response_min=256, model="gpt-4o"))
    assert [c["part"] for c in p.report.cuts] == ["history", "response"] and 256 <= p.report.response < 1024
    assert any(m["content"].startswith("LAST") for m in p.messages)


def test_gmref_8_reference_cut_with_a_marker_before_any_guidance():
    long_ref = " ".join(["Le vieux gardien déçoit — ça arrive, naïvement."] * 300)
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d.update(gmReference=long_ref[:16000])))
    p = build_prompt(rs, sample_state("gravewatch"), [], Budget(context=3000, response=512, response_min=256,
                                                                 model="gpt-4o"))
    cut = p.report.cuts[0]
    assert cut["part"] == "gmReference" and 0 < cut["kept_chars"] < cut["total_chars"]
    assert not any(c["action"] == "removed" for c in p.report.cuts)  # no guidance was cut
    ref = p.system.split("## Game Master rules reference\n")[1]
    kept = ref.split(" (The rules reference is cut here")[0]
    assert long_ref.startswith(kept) and long_ref[len(kept)] == " "  # a word boundary, no split character
    assert f"{cut['kept_chars']:,} of {cut['total_chars']:,} characters kept" in ref
    assert rs.file.gm.checkGuidance in p.system and rs.file.gm.sheetGuidance in p.system


def test_dec_32_guidance_cut_only_after_the_reference_then_budget_error():
    rs = Ruleset.from_dict(edit(sample_dict("gravewatch"), lambda d: d["gm"].update(
        sheetGuidance="Resolve matters. " * 80)))
    p = build_prompt(rs, sample_state("gravewatch"), [], Budget(context=1250, response=256, response_min=128,
                                                                 reserve=700, model="gpt-4o"))
    parts = [c["part"] for c in p.report.cuts]
    assert parts[0] == "gmReference" and "sheetGuidance" in parts
    with pytest.raises(BudgetError) as e:
        build_prompt(rs, sample_state("gravewatch"), [], Budget(context=500, model="gpt-4o"))
    assert "system" in e.value.parts and "response_min" in e.value.parts


def test_preview_json_and_table(tmp_path):
    h = tmp_path / "h.jsonl"
    h.write_text("\n".join(json.dumps(m) for m in hist(3)) + "\n")
    args = [str(SAMPLES / "rulesets" / "gravewatch.json"), str(SAMPLES / "states" / "gravewatch.json"),
            "--history", str(h), "--model", "gpt-4o", "--context", "2000"]
    out = io.StringIO()
    assert run(["preview", *args, "--json"], out, io.StringIO()) == 0
    doc = json.loads(out.getvalue())
    assert set(doc) == {"system", "reminder", "messages", "report"}
    assert set(doc["report"]) >= {"context", "response", "total", "parts", "cuts"} and doc["report"]["total"] <= 2000
    out = io.StringIO()
    assert run(["preview", *args, "--world"], out, io.StringIO()) == 0
    assert "total" in out.getvalue() and "--- reminder ---" in out.getvalue() and "\033[" not in out.getvalue()


def test_preview_names_bad_history_lines(tmp_path):
    h = tmp_path / "h.jsonl"
    h.write_text('{"role": "user", "content": "hi"}\nnot json\n{"role": "narrator", "content": "x"}\n')
    err = io.StringIO()
    code = run(["preview", str(SAMPLES / "rulesets" / "gravewatch.json"), str(SAMPLES / "states" / "gravewatch.json"),
                "--history", str(h)], io.StringIO(), err)
    assert code == 1 and "line 2: not-json" in err.getvalue() and "line 3: bad-message" in err.getvalue()


class Attributed(dict):  # type: ignore[type-arg]
    """A dict whose items are also shadowed by attributes of other values: a template that reads it by attribute
    (`c.name`) writes the attributes, one that reads it by subscript (`c["name"]`) its items."""

    name = "ATTRIBUTE"
    lines = (("ATTRIBUTE", "ATTRIBUTE"),)
    fill = "ATTRIBUTE"
    complete = False


def test_pf_63_a_block_and_a_clock_are_read_by_subscript():
    """PF-63: the templates read a block's and a clock's dict by subscript; Jinja's attribute form tries the
    attribute first, which a plain dict raises AttributeError for on every read (a quarter of a block's render)."""
    from tagengine._internal.prompt.render import env, include_text, render, template

    assert template("_block.j2") is env().get_template("_block.j2")  # kept by name: the very template Jinja gives
    block = Attributed(name="Mira", lines=[("Grit", "2/3")])
    assert include_text("_block.j2", {"c": block}) == "## Mira\n- Grit: 2/3\n"
    clock = Attributed(name="Alarm", fill="2/4", complete=True)
    text = render("reminder.j2", {"blocks": [], "party_text": None, "clocks": [clock], "untrained": [],
                                  "commands": ""})
    assert "- Alarm: 2/4 (complete)" in text and "ATTRIBUTE" not in text


def test_pf_63_the_untrained_lines_are_made_once_per_ruleset():
    """PF-63: every reminder reads them, and they follow the ruleset alone."""
    from tagengine._internal.prompt.template_data import untrained_lines

    first = untrained_lines(EMBER)
    assert untrained_lines(EMBER) is first and "Dig cannot be attempted untrained" in first
    assert untrained_lines(Ruleset.load(SAMPLES / "rulesets" / "ember-roads.json")) == first
