"""Helpers for command tests: apply a reply and read the receipts."""

from __future__ import annotations

import json

from conftest import SAMPLES, load_sample
from tagengine._internal.commands import apply_reply
from tagengine._internal.state import GameState


def sample_state(name: str) -> GameState:
    return GameState.loads(load_sample(name), (SAMPLES / "states" / f"{name}.json").read_text())


def run(rs, state, text):
    """(applied, [(result, now or reason)])"""
    a = apply_reply(rs, state, text)
    return a, [(r.result, r.now if r.result == "ok" else (r.reason if r.result == "refused" else
                                                          f"{r.now} | {r.reason}")) for r in a.receipts]


def with_live(rs, state, **live):
    doc = state.to_json()
    doc["rulesetLive"] = {**doc["rulesetLive"], **live}
    return GameState.loads(rs, json.dumps(doc))
