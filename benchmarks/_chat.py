"""The benchmarks' chat: the campaign `bench` (blades-like, two characters, one seed), the replies the fake upstream
answers, and a chat of N turns as a chat app sends it. Shared by `serve.py` and `serve_inproc.py`. tagengine is
imported inside the functions, so a script run with another tree first on PYTHONPATH (`--against`) makes the
chat with that tree's engine; this module changes no import path."""

from __future__ import annotations

from pathlib import Path

RULESET = Path(__file__).resolve().parents[1] / "samples" / "rulesets" / "blades-like.json"
CHARACTERS = ["Cutter", "Lurk"]
SEED = "bench"
PROSE = ("The rain keeps on over the rooftops of Doskvol, and the lamps along the canal gutter in the wind. "
         "Somewhere below, a bell counts the hour; the watch will change soon, and everyone in the crew knows "
         "what that means for the plan. ")  # about 230 characters
FIRST = PROSE + 'Night falls over the counting-house. [clock: name="Alarm" size="999"]'
REPLIES = [
    PROSE * 2 + 'The guard turns. [clock: name="Alarm" tick="1"] Cutter slips past.\n'
    '[sheet: who="Cutter" op="spend" pool="stress" amount="1"]',
    PROSE + 'Lurk tries the lock. [check: who="Lurk" skill="prowl"] ' + PROSE +
    '[sheet: who="Cutter" op="restore" pool="stress" amount="1"]',
]  # replies of about 500 to 600 characters, each with tags that change the state
REPLY = REPLIES[0]  # what the fake upstream answers


def history(replies: int) -> list[dict[str, str]]:
    """A chat of `replies` turns as a chat app sends it (receipts in the replies), then a new user turn."""
    from tagengine import Ruleset, apply_reply
    from tagengine._internal.state import GameState

    rs = Ruleset.load(RULESET)
    state = GameState.new(rs, CHARACTERS, seed=SEED)  # the campaign's start, made the same way
    msgs = [{"role": "system", "content": 'You are the GM of a heist. [tagengine: campaign="bench"]'}]
    for n in range(replies):
        msgs.append({"role": "user", "content": f"Turn {n}: we press on, quietly, towards the vault door."})
        a = apply_reply(rs, state, FIRST if n == 0 else REPLIES[n % 2])
        state = a.state
        msgs.append({"role": "assistant", "content": a.text})
    msgs.append({"role": "user", "content": "And then?"})
    return msgs


def new_data(tmp: Path, name: str) -> Path:
    """A data folder `tmp/name` holding the campaign `bench`."""
    from tagengine._internal.server.memory.campaigns import new_campaign
    from tagengine._internal.server.memory.store import Store

    data = tmp / name
    store = Store(data)
    try:
        new_campaign(store, "bench", str(RULESET), CHARACTERS, seed=SEED)
    finally:
        store.close()
    return data
