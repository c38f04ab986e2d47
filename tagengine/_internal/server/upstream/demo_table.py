"""What `--upstream demo` knows of the campaign it plays, and the replies it writes for any campaign (STX-15).

The demo is a separate app behind the server: it sees only the request the server sends it, never the campaign.
The server's per-turn reminder (prompts/reminder.j2) is in that request whatever the campaign: a block per
character (`## Name` and its lines, in the campaign's order, then the party sheet's block), the clocks running,
and "Commands you can write", whose example tags carry the ruleset's own names (a pool, a track, a state, a
condition, a wound track with its kinds, a clock's sizes, an ability to check). The demo reads the characters,
their pools' values and the clocks from the blocks, takes each example tag, and writes it for the character
whose turn it is: so every tag it writes is one the engine teaches for this very campaign, and a player's own
characters get receipts from the first reply. A reminder the demo cannot read (a request without one) leaves it
to its scripted heist (`DemoGame`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

REMINDER = "# Reminder for this turn"
SECTIONS = {"Clocks", "Untrained checks", "Commands you can write"}
_TAG = re.compile(r"\[(sheet|clock|check):[^\[\]]*\]")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_POOL = re.compile(r"(.+?) (-?\d+)/(\d+)$")
_CLOCK = re.compile(r"- (.+): (\d+)/(\d+)( \(complete\))?$")
ROLL = re.compile(r"\broll", re.IGNORECASE)  # a player's message asking for a check
_RULES = re.compile(r"played with the (.+?) rules\.")

# the prose of each turn, the characters' names put in: {a} the one whose turn it is, {b} the next one
PROSE = (
    ("The night is young and the stakes are high. {a} takes the lead, {b} close behind.",
     "Something stirs ahead: a sound, a light, a door left open.",
     "What do you do?"),
    ("{a} pushes on; {b} watches the way you came.",
     "Footsteps somewhere near, coming closer.",
     "Do you hide, or meet them?"),
    ("{a} tries it. The dice decide.",
     "{b} holds still, breath held.",
     "Whatever happens next, it happens fast. What now?"),
    ("The moment passes. {a} catches their breath while {b} looks around.",
     "The way forward is open, for now.",
     "Where to?"),
)


def _attrs(tag: str) -> dict[str, str]:
    return dict(_ATTR.findall(tag))


def _tag(kind: str, attrs: dict[str, str]) -> str:
    return f"[{kind}: " + " ".join(f'{k}="{v}"' for k, v in attrs.items()) + "]"


@dataclass
class Table:
    """The campaign as the reminder tells it: the ruleset's name, the characters in order, each one's pools
    (label: current, most), the clocks (name: filled, size), and the example tags taught, by what they do."""

    rules: str = ""
    characters: list[str] = field(default_factory=list)
    pools: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    clocks: dict[str, tuple[int, int]] = field(default_factory=dict)
    examples: dict[str, dict[str, str]] = field(default_factory=dict)
    ability: str | None = None

    @classmethod
    def read(cls, messages: Sequence[Any]) -> Table | None:
        """The table of the last reminder in `messages`; None when there is none, or it names no character."""
        texts: list[str] = [m["content"] for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)]
        reminder = next((t[t.rindex(REMINDER):] for t in reversed(texts) if REMINDER in t), None)
        if reminder is None:
            return None
        table = cls(rules=next((r.group(1) for t in texts if (r := _RULES.search(t))), ""))
        blocks: list[tuple[str, list[str]]] = []
        for line in reminder.splitlines():
            if line.startswith("## "):
                blocks.append((line[3:].strip(), []))
            elif blocks:
                blocks[-1][1].append(line)
        sheets = [b for b in blocks if b[0] not in SECTIONS]
        commands = next((lines for name, lines in blocks if name == "Commands you can write"), [])
        if any('sheet="party"' in line for line in commands) and sheets:
            sheets = sheets[:-1]  # the party sheet's block follows the characters'
        table.characters = [name for name, _ in sheets]
        for name, lines in sheets:
            table.pools[name] = dict(_pool_values(lines))
        for name, lines in blocks:
            if name == "Clocks":
                table.clocks = {m.group(1): (int(m.group(2)), int(m.group(3)))
                                for line in lines if (m := _CLOCK.match(line.strip()))}
        table.teach(commands)
        return table if table.characters else None

    def teach(self, commands: list[str]) -> None:
        """The example tags of "Commands you can write", by what they do; the first ability a check names."""
        for line in commands:
            for m in _TAG.finditer(line):
                a = _attrs(m.group(0))
                kind = m.group(1)
                op = a.get("op", "create" if "size" in a else "tick" if "tick" in a else "")
                what = f"{kind}:{op}" if kind != "sheet" or 'sheet="party"' not in m.group(0) else f"party:{op}"
                if op == "damage" and "track" in a:
                    what = "sheet:wound"
                self.examples.setdefault(what, a)
            if self.ability is None and (found := re.search(r'ability="([^"]+)"', line)):
                self.ability = found.group(1)

    def answer(self, messages: Sequence[Any], turn: int) -> str:
        """The reply to a request: a check for the first character when the player's last message says roll,
        nothing to add to a prefill (the demo continues only its own script's replies), else the turn's reply."""
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        if last.get("role") == "assistant":
            return ""
        user = next((m.get("content") for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"),
                    None)
        if isinstance(user, str) and ROLL.search(user) and self.ability:
            who = self.characters[0]
            return (f"{who} steadies themself and tries it.\n" + _tag("check", {"who": who, "ability": self.ability})
                    + "\nThe dice have spoken. What next?")
        return self.reply(turn)

    def reply(self, turn: int) -> str:
        """The reply to the player's `turn`-th message (from 1): prose naming the characters, and the tags taught
        for this campaign written for them, each valid at the values the reminder shows."""
        n = len(self.characters)
        a, b = self.characters[(turn - 1) % n], self.characters[turn % n]
        lines = [p.format(a=a, b=b) for p in PROSE[(turn - 1) % len(PROSE)]]
        first, second = self.tags(turn, a, b)
        return "\n".join([lines[0], *first, lines[1], *second, lines[2]])

    def tags(self, turn: int, a: str, b: str) -> tuple[list[str], list[str]]:
        """The tags of a turn: a pool for the one whose turn it is, and by turn a clock, a track or a wound, the
        party sheet's pool and a state, a check, a condition; each the example taught, its `who` the character
        meant."""
        first = [t for t in [self.pool(a)] if t]
        second: list[str] = []
        ex = self.examples
        step = (turn - 1) % 4
        if step == 0 and "clock:create" in ex and ex["clock:create"]["name"] not in self.clocks:
            first.insert(0, _tag("clock", {"name": ex["clock:create"]["name"], "size": ex["clock:create"]["size"]}))
        elif self.clocks and "clock:tick" in ex:
            name, (filled, size) = next(iter(self.clocks.items()))
            if filled < size:
                second.append(_tag("clock", {"name": name, "tick": "1"}))
        if step == 1 and "party:spend" in ex:  # the party sheet's pool, restored: its points come from the job
            second.append(_tag("sheet", {"sheet": "party", "op": "restore", "pool": ex["party:spend"]["pool"],
                                         "amount": "1"}))
        kinds = {0: ("sheet:track", "sheet:wound"), 1: ("sheet:state",), 2: ("check",), 3: ("sheet:condition",)}
        for what in kinds[step]:
            if what == "check":
                check = {"who": a, "ability": self.ability} if self.ability else (
                    {**ex["check:"], "who": a} if "check:" in ex else None)
                if check:
                    second.append(_tag("check", {k: v for k, v in check.items() if v is not None}))
            elif what in ex:
                second.append(_tag("sheet", {**ex[what], "who": b}))
                break
        return first, second

    def pool(self, who: str) -> str | None:
        """A pool's tag for `who`: the first pool taught, spent when it has points, else restored."""
        example = self.examples.get("sheet:spend")
        if example is None:
            return None
        label = example.get("pool", "")
        now = self.pools.get(who, {}).get(label)
        op = "spend" if now is None or now[0] > 0 else "restore"
        return _tag("sheet", {"who": who, "op": op, "pool": label, "amount": "1"})


def _pool_values(lines: list[str]) -> list[tuple[str, tuple[int, int]]]:
    """`- Pools: Stress 0/9; Hit dice d8 0/0` as (label, (current, most)) pairs."""
    out = []
    for line in lines:
        if line.startswith("- Pools: "):
            for part in line[len("- Pools: "):].split("; "):
                if m := _POOL.match(part.strip()):
                    out.append((m.group(1), (int(m.group(2)), int(m.group(3)))))
    return out
