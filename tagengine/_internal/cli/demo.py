"""`tagengine demo`: a walkthrough of the bundled samples (what `./dev demo` runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from pathlib import Path


def add_demo(d: ArgumentParser) -> None:
    d.set_defaults(func=cmd_demo)


def cmd_demo(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..samples import samples_dir

    return walkthrough(out, samples_dir())  # the package's own, from any folder (PK-1)


def walkthrough(out: TextIO, samples: Path) -> int:
    """Check every sample ruleset, replay a sample chat, show its last reply three ways and the next prompt."""
    import json

    from ..commands import apply_reply
    from ..errors import RulesetError
    from ..prompt import Budget, build_prompt
    from ..ruleset import Ruleset
    from ..state import GameState
    from ..tags import narration

    out.write("== tagengine check, on every sample ruleset\n")
    status = 0
    loaded: dict[str, Ruleset] = {}
    for path in sorted((samples / "rulesets").glob("*.json")):
        try:
            rs = Ruleset.load(path)
        except RulesetError as e:
            status = 1
            out.write(f"{path.name}: {len(e.problems)} problem(s)\n")
            for p in e.problems:
                out.write(f"  {p}\n")
            continue
        loaded[path.stem] = rs
        out.write(f"{path.name}: ok: {rs.name}, needs Capability API {rs.requires_text}\n")
    blades = loaded.get("blades-like")
    if blades is None:
        return 1
    rs = blades
    chat = json.loads((samples / "transcripts" / "crew-night.jsonl").read_text(encoding="utf-8").splitlines()[0])
    state = GameState.new(rs, chat["characters"])
    out.write(f"\n== replaying samples/transcripts/crew-night.jsonl with blades-like.json, "
              f"characters {', '.join(chat['characters'])}\n")
    replies = [m["content"] for m in chat["messages"] if m["role"] == "assistant"]
    last = None
    for i, reply in enumerate(replies, 1):
        last = applied = apply_reply(rs, state, reply)
        state = applied.state
        counts = ", ".join(f"{v} {k}" for k, v in sorted(applied.counts().items()))
        out.write(f"reply {i}: {len(applied.receipts)} tags ({counts})\n")
    assert last is not None
    out.write("\n-- the last reply, as the model wrote it:\n" + replies[-1] + "\n")
    out.write("\n-- as the engine saves it (tags answered in place):\n" + last.text + "\n")
    out.write("\n-- as the player reads it (narration):\n" + narration(last.text) + "\n")
    out.write("\n-- receipts:\n")
    for r in last.receipts:
        out.write(f"  {r.name}: {r.result} {r.now or r.reason}" + (f" ({r.detail})" if r.detail else "") + "\n")
    out.write("\n-- clocks now: " + ("; ".join(f"{c.name} {c.filled}/{c.size}" for c in state.clocks) or "none") + "\n")
    history = [{"role": m["role"], "content": m["content"]} for m in chat["messages"]]
    history.append({"role": "user", "content": "We lie low for a night."})
    prompt = build_prompt(rs, state, history, Budget(context=4096, response=1024, model="gpt-4o"))
    rep = prompt.report
    out.write(f"\n== the next turn's prompt ({rep.encoding}, context {rep.context})\n")
    for part, n in rep.parts.items():
        out.write(f"  {part:<9}{n:>6} tokens\n")
    out.write(f"  {'total':<9}{rep.total:>6} of {rep.context}\n")
    for cut in rep.cuts:
        out.write(f"  cut: {cut}\n")
    out.write("\n-- the reminder the GM gets this turn:\n" + prompt.reminder)
    out.write("\nTry next: tagengine samples copy blades-like transcripts   # into ./samples/, to edit\n"
              "          tagengine replay samples/rulesets/blades-like.json samples/transcripts/crew-night.jsonl "
              "-o out.jsonl --states-dir states\n"
              "          tagengine preview samples/rulesets/blades-like.json states/crew-night.json\n"
              "Play it:  tagengine campaign new heist blades-like && "
              "tagengine serve --upstream demo --campaign heist\n")
    return status
