"""The replay tests' corpus: chats of tagged Game Master replies for `samples/rulesets/blades-like.json`, made
here (a clone of the project has everything its tests read). Deterministic: the same arguments give the same
bytes, so two files made alike hold the same chat ids.

Each line is one chat, `{"id", "characters", "messages"}` as `tagengine replay` reads it. Replies are short prose
(accents, curly quotes and a dash, so byte and character offsets differ) with 0-6 tags, most of which apply
(stress, trauma, the wanted condition, the vice rest, the crew's coin and heat, clocks), some refused (an
unknown pool or character, a spend beyond what is left), a few malformed, decoy brackets, and now and then a
reply cut off inside a tag. The bundled transcript `samples/transcripts/crew-night.jsonl` goes last, as one more
chat whose receipts the tests know.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "samples" / "rulesets" / "blades-like.json"
CREW_NIGHT = ROOT / "samples" / "transcripts" / "crew-night.jsonl"
CHARACTERS = ["Cutter", "Lurk", "Vess"]

PLACES = ["the lower docks", "the salt market", "the Ashen Gate", "the bell tower", "the café on Rue Sève"]
NOUNS = ["lantern", "ledger", "rope", "door", "guard", "mask", "crate", "whistle", "key", "barge"]
VERBS = ["slips past", "grabs", "watches", "shoves", "studies", "pries open", "pockets", "eyes"]
CLOCKS = ["Alarm raised", "Patrol returns", "Tide rises", "The Duke’s patience"]
USER_LINES = ["We slip in after midnight.", "Lurk climbs to the roof.", "We bargain with the guard.",
              "Cutter checks the ledger.", "We run for the door!"]


def _sentence(r: random.Random) -> str:
    c = r.choice
    shape = r.random()
    if shape < 0.5:
        return f"{c(CHARACTERS)} {c(VERBS)} the {c(NOUNS)}."
    if shape < 0.75:
        return f"“You think the {c(NOUNS)} will hold?” {c(CHARACTERS)} asks — quietly, near {c(PLACES)}."
    return f"Smoke hangs over {c(PLACES)}; somewhere a {c(NOUNS)} rattles…"


def _tag(r: random.Random) -> str:
    c, n = r.choice, r.randint
    who = c(CHARACTERS)
    shape = r.random()
    if shape < 0.06:  # malformed: an unquoted value, or a quote left open
        return c([f'[sheet: who={who} op="spend" pool="stress"]', '[clock: name="Alarm raised tick="1"]'])
    if shape < 0.12:  # refused: no such pool, no such character
        return c([f'[sheet: who="{who}" op="spend" pool="grit" amount="1"]',
                  '[sheet: who="Nobody" op="restore" pool="stress" amount="1"]'])
    if shape < 0.35:
        return f'[sheet: who="{who}" op="{c(["spend", "restore"])}" pool="stress" amount="{n(1, 3)}"]'
    if shape < 0.45:
        return f'[sheet: who="{who}" op="track" track="trauma" by="{c([1, -1])}"]'
    if shape < 0.52:
        return f'[sheet: who="{who}" op="condition" condition="wanted" to="{c(["on", "off"])}"]'
    if shape < 0.56:
        return f'[sheet: who="{who}" op="rest" rest="vice"]'
    if shape < 0.66:
        return f'[sheet: sheet="party" op="{c(["spend", "restore"])}" pool="coin" amount="{n(1, 3)}"]'
    if shape < 0.70:
        return f'[sheet: sheet="party" op="advance" field="heat" by="{c([1, -1])}"]'
    name, action = c(CLOCKS), r.random()
    if action < 0.3:
        return f'[clock: name="{name}" size="{c([4, 6, 8])}"]'
    if action < 0.9:
        return f'[clock: name="{name}" tick="{c([1, 1, 2, -1])}"]'
    return f'[clock: name="{name}" clear]'


def _decoy(r: random.Random) -> str:
    return r.choice([f"[OOC: a risky roll here uses {r.randint(1, 4)}d6.]", "(see [the rules](https://example.com))",
                     f"[Roll: 2d6 = {r.randint(1, 6)}, {r.randint(1, 6)}]"])


def reply(r: random.Random) -> str:
    """One reply: a few paragraphs with tags and decoys among the sentences."""
    paragraphs = [[_sentence(r) for _ in range(r.randint(2, 5))] for _ in range(r.randint(1, 3))]
    for _ in range(r.randint(0, 6)):
        p = r.choice(paragraphs)
        p.insert(r.randint(0, len(p)), _tag(r))
    if r.random() < 0.3:
        p = r.choice(paragraphs)
        p.insert(r.randint(0, len(p)), _decoy(r))
    text = "\n\n".join(" ".join(p) for p in paragraphs)
    return text + '\n\n[sheet: who="Lurk" op=' if r.random() < 0.05 else text


def chats(n: int, turns: int = 3, seed: int = 7) -> Iterator[dict[str, object]]:
    r = random.Random(seed)
    for i in range(n):
        messages = []
        for _ in range(turns):
            messages += [{"role": "user", "content": r.choice(USER_LINES)}, {"role": "assistant", "content": reply(r)}]
        yield {"id": f"chat-{i:05d}", "characters": CHARACTERS, "messages": messages}


def lines(n: int, turns: int = 3, extra: Iterable[str] = ()) -> list[str]:
    """`n` generated chats, the bundled crew-night chat, then `extra` lines as given (bad lines, blanks)."""
    out = [json.dumps(chat, ensure_ascii=False) for chat in chats(n, turns)]
    return out + CREW_NIGHT.read_text(encoding="utf-8").splitlines() + list(extra)


def write(path: Path, n: int, turns: int = 3, extra: Iterable[str] = ()) -> Path:
    """lines() written to `path`, one a line; returns `path`."""
    path.write_text("\n".join(lines(n, turns, extra)) + "\n", encoding="utf-8")
    return path
