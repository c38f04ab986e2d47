"""Hypothesis over every sheet op (1,000 examples each): invariants after any sequence of commands,
idempotence (DEC-5), and one reply applied at once equals the same reply split into several."""

from __future__ import annotations

from cmdkit import sample_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.sheet import view_character, view_party

SETTINGS = settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
GAMES = {n: (load_sample(n), sample_state(n)) for n in ("gravewatch", "fifth-like", "blades-like", "ember-roads")}

amounts = st.sampled_from(["1", "2", "3", "-1", "-2", "-5", "0", "9", "x"])
who = st.sampled_from(['who="Mira" ', 'who="Bram" ', 'who="Vess" ', 'who="Cutter" ', 'who="party" ', "",
                       'sheet="party" '])
pools = st.sampled_from(["resolve", "oil", "hp", "slots_1", "hd_d8", "stress", "coin", "grit", "moorings"])
tracks = st.sampled_from(["harm", "strain", "exhaustion", "weariness", "trauma"])
kinds = st.sampled_from(["knock", "tear", "strain", "burn", None])
command = st.one_of(
    st.builds(lambda w, op, p, a: f'[sheet: {w}op="{op}" pool="{p}" amount="{a}"]', who,
              st.sampled_from(["spend", "restore", "damage"]), pools, amounts),
    st.builds(lambda w, t, k, a, b: f'[sheet: {w}op="damage" track="{t}"' + (f' kind="{k}"' if k else "")
              + f' amount="{a}"' + (f' box="{b}"' if b else "") + "]", who, tracks, kinds, amounts,
              st.sampled_from([None, None, "1", "3", "7"])),
    st.builds(lambda w, t, a, by: f'[sheet: {w}op="track" track="{t}" {"by" if by else "to"}="{a}"]', who, tracks,
              amounts, st.booleans()),
    st.builds(lambda w, s, v: f'[sheet: {w}op="state" state="{s}" value="{v}"]', who,
              st.sampled_from(["lantern", "Stance"]), st.sampled_from(["out", "Shuttered", "reckless", "lit", "x"])),
    st.builds(lambda w, c, to: f'[sheet: {w}op="condition" condition="{c}" to="{to}"]', who,
              st.sampled_from(["prone", "Wanted", "soaked"]), st.sampled_from(["on", "off"])),
    st.builds(lambda w, r: f'[sheet: {w}op="rest" rest="{r}"]', who,
              st.sampled_from(["breath", "End of the vigil", "long", "short", "camp", "vice"])),
    st.builds(lambda f, a, by: f'[sheet: sheet="party" op="advance" field="{f}" {"by" if by else "to"}="{a}"]',
              st.sampled_from(["heat", "vault", "upgrades", "tier"]), amounts, st.booleans()),
    st.builds(lambda n, a: f'[clock: name="{n}" {a}]', st.sampled_from(["A", "B"]),
              st.sampled_from(['size="4"', 'tick="1"', 'tick="-2"', "clear"])),
)
replies = st.lists(command, min_size=1, max_size=12)


def check_invariants(rs, state):
    for name in state.cards:
        sheet = view_character(rs, state, name)
        for p in sheet.pools:
            assert 0 <= p.cur <= p.max and p.temp >= 0
        for w in sheet.wounds:
            assert w.filled <= w.length and w.overflow >= 0
            sev = {k[0]: k[2] for k in w.kinds}
            marks = [m for m in w.marks if m is not None]
            track = rs.sheet.tracks.get(w.id)
            if track.fill != "indexed":
                assert None not in w.marks
                assert [sev[m] for m in marks] == sorted((sev[m] for m in marks), reverse=True)
        for t in sheet.tracks:
            assert t.min <= t.value <= t.max
    p = view_party(rs, state)
    for pool in p.pools if p else ():
        assert 0 <= pool.cur <= pool.max
    for c in state.clocks:
        assert 0 <= c.filled <= c.size


@SETTINGS
@given(st.sampled_from(sorted(GAMES)), st.lists(replies, min_size=1, max_size=4))
def test_invariants_after_any_sequence_of_commands(game, turns):
    rs, state = GAMES[game]
    for tags in turns:
        state = apply_reply(rs, state, " ".join(tags)).state
        check_invariants(rs, state)


@SETTINGS
@given(st.sampled_from(sorted(GAMES)), replies)
def test_idempotence_over_every_op(game, tags):
    rs, state = GAMES[game]
    a = apply_reply(rs, state, "\n".join(tags))
    b = apply_reply(rs, state, a.text)
    assert (b.text, b.state) == (a.text, a.state)


@SETTINGS
@given(st.sampled_from(sorted(GAMES)), replies, st.data())
def test_at_once_equals_split(game, tags, data):
    rs, state = GAMES[game]
    whole = apply_reply(rs, state, " ".join(tags))
    cut = sorted(data.draw(st.sets(st.integers(1, len(tags) - 1), max_size=3)) if len(tags) > 1 else set())
    parts, start = [], 0
    for c in [*cut, len(tags)]:
        parts.append(" ".join(tags[start:c]))
        start = c
    s, texts = state, []
    for i, part in enumerate(parts):
        a = apply_reply(rs, s, part + (" " if i < len(parts) - 1 else ""))
        s = a.state
        texts.append(a.text)
    assert s == whole.state
    assert "".join(texts) == whole.text
