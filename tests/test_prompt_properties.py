"""Hypothesis over the prompt (1,000 examples each): a stable system prompt (DEC-30), the budget holds
(DEC-32), the last user message stays, the reference is cut before guidance, counts match tiktoken."""

from __future__ import annotations

from cmdkit import sample_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.prompt import Budget, BudgetError, build_prompt, encoding, system_prompt
from tagengine._internal.prompt.registry import model_family
from tagengine._internal.prompt.tokens import OPENAI_CHAT

SETTINGS = settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
GAMES = {n: (load_sample(n), sample_state(n)) for n in ("gravewatch", "ember-roads", "fifth-like", "blades-like")}
TURNS = ['[sheet: who="party" op="spend" pool="Resolve" amount="1"]', '[clock: name="A" size="4"]',
         '[sheet: who="Mira" op="damage" track="harm" kind="tear" amount="2"]', '[sheet: sheet="party" op="advance" '
         'field="heat" by="1"]', '[sheet: who="Vess" op="rest" rest="long"]', '[clock: name="A" tick="1"]']
messages = st.lists(st.builds(lambda r, t: {"role": r, "content": t}, st.sampled_from(["user", "assistant"]),
                              st.text(max_size=300)), max_size=30)
budgets = st.builds(lambda c, r, rm, m: Budget(context=c, response=r, response_min=min(rm, r), model=m),
                    st.integers(600, 20_000), st.integers(64, 4096), st.integers(16, 1024),
                    st.sampled_from(["gpt-4o", "gpt-4", "mystery-model"]))


def state_after(game, turns):
    rs, state = GAMES[game]
    for t in turns:
        state = apply_reply(rs, state, t).state
    return state


@SETTINGS
@given(st.sampled_from(sorted(GAMES)), budgets, st.lists(st.sampled_from(TURNS), max_size=4), messages)
def test_dec_30_system_prompt_identical_across_states_and_turns(game, budget, turns, history):
    rs, _ = GAMES[game]
    try:
        p = build_prompt(rs, state_after(game, turns), [*history, {"role": "user", "content": "go"}], budget)
    except BudgetError:
        return
    assert p.system == system_prompt(rs, budget).text == p.messages[0]["content"]


@SETTINGS
@given(st.sampled_from(sorted(GAMES)), budgets, messages, st.text(min_size=1, max_size=200))
def test_budget_holds_last_user_kept_counts_match(game, budget, history, last):
    rs, state = GAMES[game]
    hist = [*history, {"role": "user", "content": last}]
    try:
        p = build_prompt(rs, state, hist, budget)
    except BudgetError:
        assert budget.context < 8192 or budget.response_min > 2048  # big contexts always fit these samples
        return
    rep = p.report
    assert rep.total <= budget.context
    assert budget.response_min <= rep.response <= budget.response
    assert {"role": "user", "content": last} in p.messages  # never dropped
    enc = encoding(rep.encoding)
    chat = model_family(budget.model).chat if rep.chat != "openai" else OPENAI_CHAT  # issue 15: the family's overhead
    recount = sum(chat.per_message + len(enc.encode(m["role"])) + len(enc.encode(m["content"], disallowed_special=()))
                  for m in p.messages) + chat.priming
    assert rep.total == recount + rep.response
    assert rep.parts["system"] + rep.parts["history"] + rep.parts["reminder"] + rep.parts["priming"] == recount
    parts = [c["part"] for c in rep.cuts]
    removed = [i for i, c in enumerate(rep.cuts) if c["action"] == "removed"]
    if removed and rs.file.gmReference:
        assert "gmReference" in parts and parts.index("gmReference") < removed[0]  # reference before guidance
