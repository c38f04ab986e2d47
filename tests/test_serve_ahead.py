"""Issue 12, S-24: work a turn's answer does not need is done after the answer has gone, and done ahead for
the next turn where the next turn surely needs it (PF-67: not its reminder); what is remembered to make a turn
cheaper never changes a result."""

from __future__ import annotations

import hashlib
import json

import pytest
from cmdkit import sample_state
from serve_kit import Fake
from test_serve import SCRIPT, ask, client, expected, history, serving

from conftest import load_sample
from tagengine import apply_reply
from tagengine._internal.commands.table import families
from tagengine._internal.prompt import build, template_data, tokens
from tagengine._internal.server.memory.chain import Chain
from tagengine._internal.server.memory.store import Store


def two_turns(tmp_path, fake: Fake, stream: bool) -> list[str]:
    """Two turns of the heist campaign through a server; the replies as the chat app stored them (the
    receipts are those a replay gives)."""
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        stored = [ask(c, history("heist", ["one"], []), stream)]
        stored.append(ask(c, history("heist", ["one", "two"], stored), stream))
    assert stored == expected("heist", [SCRIPT["one"], SCRIPT["two"]])[0]
    return stored


@pytest.mark.parametrize("stream", [False, True])
def test_pf_67_a_reminder_is_rendered_by_the_turn_that_needs_it_and_a_swipe_renders_none(tmp_path, monkeypatch,
                                                                                          stream):
    """A turn renders the reminder of the state it starts from, before its request reaches the upstream; nothing
    is rendered once an answer has gone (a reply the player swipes away would never use it), and the same request
    again (a regenerate, a swipe) starts from the very state object, so it finds that reminder and renders none.
    The receipts are as before."""
    fake = Fake(SCRIPT)
    events: list[tuple[str, int]] = []
    render, state_of = build.render, Chain.state_of

    def render_spy(template, context):
        if template == "reminder.j2":
            events.append(("render", len(fake.bodies)))  # how many requests the upstream had got by then
        return render(template, context)

    def state_spy(*args, **kw):
        events.append(("request", len(fake.bodies)))  # the server has begun a turn's prompt
        return state_of(*args, **kw)

    monkeypatch.setattr(build, "render", render_spy)
    monkeypatch.setattr(Chain, "state_of", state_spy)
    with serving(tmp_path, fake) as srv:
        c = client(srv)
        stored = [ask(c, history("heist", ["one"], []), stream)]
        stored.append(ask(c, history("heist", ["one", "two"], stored), stream))
        again = ask(c, history("heist", ["one", "two"], stored[:1]), stream)
    assert stored == expected("heist", [SCRIPT["one"], SCRIPT["two"]])[0] and again == stored[1]
    assert len(fake.bodies) == 3 and json.loads(fake.bodies[2])["messages"] == json.loads(fake.bodies[1])["messages"]
    assert events == [("request", 0), ("render", 0),  # turn 1: its own reminder, before the upstream has it
                      ("request", 1), ("render", 1),  # turn 2: its own, none rendered after turn 1's answer
                      ("request", 2)]  # turn 2 again: the reminder turn 2 rendered, none after either answer


def test_a_reminder_is_the_same_text_however_often_its_state_is_asked_for():
    """A cached reminder is the rendered one, and a different state gets its own (by identity, not by value)."""
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    first = build.reminder(rs, state)
    assert build.reminder(rs, state) is first
    context = build.reminder_context(rs, state)
    build._COMMANDS.clear()  # the commands text rendered anew, then kept: the same text either way
    commands = build.include_text("_commands.j2", context)
    assert build.commands_text(context["teaching"]) == commands == build.commands_text(context["teaching"])
    blocks = [build.include_text("_block.j2", {"c": c}) for c in context["characters"]]
    party = None if context["party"] is None else build.include_text("_block.j2", {"c": context["party"]})
    assert first == build.render("reminder.j2", {**context, "commands": commands, "blocks": blocks,
                                                 "party_text": party})
    after = apply_reply(rs, state, '[clock: name="Vault door" size="4"]').state
    assert "Vault door" in build.reminder(rs, after) and "Vault door" not in first


def test_pf_52_an_unchanged_characters_block_is_kept_and_a_changed_one_made_anew(monkeypatch):
    """A turn that changes one character renders that character's block alone: the other's block (and the party's)
    is the object the state before had, its text kept; the reminder is the text a cold render gives."""
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    build.reminder(rs, state)
    before = build.reminder_context(rs, state)
    rendered: list[str] = []
    include = build.include_text

    def counted(name: str, context: dict[str, object]) -> str:
        rendered.append(name)
        return include(name, context)

    monkeypatch.setattr(build, "include_text", counted)
    first, second = state.characters[:2]
    after = apply_reply(rs, state, f'[sheet: who="{first}" op="spend" pool="stress" amount="1"]').state
    assert after.live_of(first) is not state.live_of(first) and after.live_of(second) is state.live_of(second)
    text = build.reminder(rs, after)
    now = build.reminder_context(rs, after)
    assert now["characters"][1] is before["characters"][1] and now["characters"][0] is not before["characters"][0]
    assert rendered == ["_block.j2"]  # the changed character's block only (the commands text is kept too)
    fresh = [include("_block.j2", {"c": dict(c)}) for c in now["characters"]]  # new objects: nothing kept
    party = None if now["party"] is None else include("_block.j2", {"c": dict(now["party"])})
    assert text == build.render("reminder.j2", {**now, "commands": include("_commands.j2", now), "blocks": fresh,
                                                "party_text": party})
    assert all(f"\n## {c['name']}\n" in text for c in [*now["characters"], now["party"]])


@pytest.mark.parametrize("sample", ["blades-like", "ember-roads", "fifth-like", "gravewatch"])
def test_pf_55_a_turns_numbers_change_no_family_s_teaching(sample):
    """The teaching is kept by the ruleset, the cards and the party sheet (`template_data.teaching`), so every
    family's `teach` must read nothing else: the commands text's own example tags, applied as a reply, change the
    live values (pools, tracks, wounds, states, conditions, rows, notes, the party's), the dice where a check rolls,
    and a clock is made; each family teaches what it did before; the kept teaching is then the same object, and
    the commands text too."""
    rs, state = load_sample(sample), sample_state(sample)
    before = template_data.teaching(rs, state)
    clocks = rs.file.clocks
    clock = "" if clocks is None else f' [clock: name="A new clock" size="{clocks.sizes[0]}"]'  # the example's goes
    played = apply_reply(rs, state, build.commands_text(before) + clock).state
    # the numbers played, on the state's own cards and party sheet (an advancement changes those: keys of the
    # teaching, so not what this test is about)
    after = state.with_clocks(played.clocks).with_dice(played.dice)
    for key, live in played.live.items():
        after = after.with_live(key, live)
    assert after.cards is state.cards and after.party_sheet is state.party_sheet
    assert after.live != state.live and (clocks is None or after.clocks != state.clocks)
    for name, family in families().items():
        if family.teach is not None:
            assert family.teach(rs, after) == family.teach(rs, state), name
    assert template_data.teaching(rs, after) is before
    assert build.commands_text(template_data.teaching(rs, after)) is build.commands_text(before)


def test_remembered_chain_steps_are_the_sha256_steps(tmp_path):
    """next_key remembers its answers (S-24): the same as hashing, keyed by the key before and the reply."""
    def direct(key: str, reply: str) -> str:
        return hashlib.sha256(f"{key}\0{reply.strip()}".encode()).hexdigest()

    chain = Chain(Store(tmp_path))
    for _ in range(2):  # the second time from the memo
        assert chain.next_key("a" * 64, " reply ") == direct("a" * 64, "reply")
        assert chain.next_key("b" * 64, " reply ") == direct("b" * 64, "reply")
        assert chain.next_key("a" * 64, "other") == direct("a" * 64, "other")
    chain.store.close()


@pytest.mark.parametrize("stream", [False, True])
def test_the_reply_s_tokens_are_counted_before_the_next_turn_comes(tmp_path, monkeypatch, stream):
    """S-32: the reply the chat app sends back on the next turn is counted once its answer has gone, so the
    next turn's fit finds it known (and the prompts, so the receipts, are as before)."""
    tokens.counter.cache_clear()  # a new memo: earlier tests counted the same script's replies
    fake = Fake(SCRIPT)
    events: list[tuple[str, str]] = []
    text, state_of = tokens.TokenCounter.text, Chain.state_of

    def text_spy(self, t):
        events.append(("count", t))
        return text(self, t)

    def state_spy(*args, **kw):
        events.append(("request", ""))  # the server has begun a turn's prompt
        return state_of(*args, **kw)

    monkeypatch.setattr(tokens.TokenCounter, "text", text_spy)
    monkeypatch.setattr(Chain, "state_of", state_spy)
    stored = two_turns(tmp_path, fake, stream)
    turn_two = [i for i, e in enumerate(events) if e[0] == "request"][1]
    counts = [i for i, e in enumerate(events) if e == ("count", stored[0])]
    assert len(counts) == 1 and counts[0] < turn_two  # once, before turn 2's request began
