"""The page that starts a campaign (`/ui/new`): a name, a ruleset (one of the server's folder,
`serve --rulesets DIR`, or a file uploaded and inspected as `/ui/check` does) and the characters' names. What it
checks is here, as plain values: the problems by the field they belong to, in words, and what was typed, kept
for the form shown again. Making the campaign is the server's (`routes/campaign_pages.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import RulesetError
from ..records import frozen
from ..ruleset import Ruleset
from ..state.defaults import name_problems
from .ruleset_inspection import inspection_context

MAX_CHARACTERS = 40  # names on one form


@frozen
class RulesetFile:
    """A ruleset of the server's folder: its file name, the ruleset's name, and why it does not load."""

    file: str
    name: str | None
    problem: str | None = None


@dataclass
class StartForm:
    """A start form as posted and checked: what was typed, the ruleset chosen or given, the problems by field
    (`name`, `ruleset`, `characters`), and the inspection of a ruleset given that does not load."""

    name: str = ""
    characters: list[str] = field(default_factory=list)
    chosen: str = ""  # a file of the folder
    given: bytes | None = None  # a ruleset uploaded or pasted
    source: str = ""
    pasted: str = ""  # shown again in the paste box, so an uploaded file need not be chosen again
    problems: dict[str, list[str]] = field(default_factory=dict)
    inspected: dict[str, Any] | None = None

    def problem(self, where: str, message: str) -> None:
        self.problems.setdefault(where, []).append(message)


def checked_start(name: str, characters: str, chosen: str, folder: list[RulesetFile], given: bytes | None,
                  source: str, campaign_name: re.Pattern[str]) -> StartForm:
    """The start form checked: a campaign name the store takes (`campaign_name`, the store's rule), a ruleset
    (given, else one of `folder` that loads), and one or more character names the state takes (PARTY-24, DEC-8,
    DEC-25). A ruleset given is parsed here, in full: call it off the event loop."""
    names = [n.strip() for n in characters.replace("\r\n", "\n").split("\n") if n.strip()]
    form = StartForm(name.strip(), names, chosen, given, source)
    if not campaign_name.fullmatch(form.name):
        form.problem("name", "A campaign name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
                             "or a digit.")
    if given is not None:
        form.pasted = given.decode("utf-8", "replace")
        try:
            Ruleset.from_json(given, source)
        except RulesetError:
            form.inspected = inspection_context(given, source)
            form.problem("ruleset", f"The ruleset given does not load: {form.inspected['count']} problem"
                                    f"{'' if form.inspected['count'] == 1 else 's'}, listed below.")
    elif not chosen:
        form.problem("ruleset", "Choose a ruleset, or upload one.")
    else:
        found = next((r for r in folder if r.file == chosen), None)
        if found is None or found.problem is not None:
            form.problem("ruleset", f"{chosen!r} is not a ruleset of the server's folder that loads.")
    if not names:
        form.problem("characters", "Name at least one character, one a line.")
    elif len(names) > MAX_CHARACTERS:
        form.problem("characters", f"At most {MAX_CHARACTERS} characters.")
    for p in name_problems(names, "characters"):
        form.problem("characters", f"{p.value!r}: {p.message}" if isinstance(p.value, str) else p.message)
    return form


def start_context(form: StartForm, folder: list[RulesetFile], has_folder: bool) -> dict[str, Any]:
    """Plain values for `new.html.j2`."""
    return {"name": form.name, "characters": "\n".join(form.characters), "pasted": form.pasted,
            "rulesets": [{"file": r.file, "name": r.name, "problem": r.problem, "chosen": r.file == form.chosen}
                         for r in folder],
            "has_folder": has_folder, "inspected": form.inspected,
            "problems": {k: form.problems.get(k, []) for k in ("name", "ruleset", "characters")}}
