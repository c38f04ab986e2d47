"""The samples tagengine ships (decisions PK-1..PK-4): the sample rulesets and a start state for each, the
SillyTavern Game Master card, and the demo's scripted games. `tagengine demo`, `serve --upstream demo`,
`campaign new NAME SAMPLE`, `serve`'s default `--rulesets` and `tagengine samples` read them here.

One source: the repository's `samples/` folder, which the wheel carries as `tagengine/samples/` (pyproject's
force-include, one line per kind below), found through `resources.resource_dir` as the grammars are; so an
installed tagengine finds them from any folder, and a checkout reads the files it edits. A sample is named by its
path under that folder (`rulesets/blades-like.json`), the same in a checkout, a wheel and a copy made by
`tagengine samples copy` (whose default target is a folder called `samples`, so the docs' paths work there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from .files import read_file, write_atomic
from .records import frozen
from .resources import resource_dir

# The kinds of sample, each a folder of samples/, in the order `tagengine samples` lists them, with what it is for.
# pyproject.toml force-includes exactly these folders into the wheel (tests/test_wheel.py checks both agree).
KINDS: tuple[tuple[str, str], ...] = (
    ("rulesets", "ruleset files: `tagengine check`, `state new`, `campaign new NAME SAMPLE`, serve's /ui/new"),
    ("states", "a start state for the ruleset of the same name, its characters made"),
    ("sillytavern", "SillyTavern character cards: Character Management -> Import Character from File"),
    ("transcripts", "the demo's games: `tagengine demo` replays crew-night, `serve --upstream demo` plays demo-game"),
)
MAX_SAMPLE = 1024 * 1024  # a sample is a few kilobytes; reading one is bounded as every read is (F-4)


@frozen
class Sample:
    """One bundled file. `name` is its path under the samples folder, the name `tagengine samples copy` takes."""

    name: str
    kind: str
    path: Path
    about: str  # a ruleset's name, a card's name, a state's characters, a transcript's first line of `about`

    @property
    def stem(self) -> str:
        """`blades-like` for rulesets/blades-like.json and states/blades-like.json: a ruleset and its state."""
        return self.path.name.split(".")[0]


def samples_dir() -> Path:
    """The samples folder: tagengine/samples/ of an installed wheel, samples/ of a checkout."""
    return resource_dir("samples")


def sample_path(kind: str, filename: str) -> Path:
    """One bundled file's path (`sample_path("transcripts", "demo-game.json")`)."""
    return samples_dir() / kind / filename


def bundled() -> list[Sample]:
    """Every bundled sample, kind by kind in KINDS' order, by name within a kind."""
    base = samples_dir()
    return [Sample(f"{kind}/{p.name}", kind, p, _about(kind, p))
            for kind, _ in KINDS for p in sorted((base / kind).glob("*")) if p.is_file()]


def ruleset_names() -> list[str]:
    """The bundled rulesets' short names (`blades-like`), the names `campaign new NAME SAMPLE` takes."""
    return [s.stem for s in bundled() if s.kind == "rulesets"]


def sample_ruleset(name: str) -> tuple[Path, Path | None] | None:
    """The bundled ruleset `name` (`blades-like`) and its start state, if it has one; None for no such sample."""
    rulesets = {s.stem: s.path for s in bundled() if s.kind == "rulesets"}
    if name not in rulesets:
        return None
    state = sample_path("states", f"{name}.json")
    return rulesets[name], state if state.is_file() else None


def chosen(names: list[str]) -> tuple[list[Sample], list[str]]:
    """The samples `names` pick, and the names that pick none. A name is a sample's own (`rulesets/blades-like.json`),
    a kind (`rulesets`: all of its files), or a short name (`blades-like`: every sample of that stem, the ruleset
    and its state). No names: every sample."""
    every = bundled()
    if not names:
        return every, []
    picked: dict[str, Sample] = {}
    unknown = []
    for name in names:
        key = name.rstrip("/")
        hits = [s for s in every if key in (s.name, s.kind, s.stem)]
        if not hits:
            unknown.append(name)
        picked.update((s.name, s) for s in hits)
    return [s for s in every if s.name in picked], unknown


CopyOutcome = Literal["written", "same", "kept"]


@frozen
class Copied:
    """What `copy_out` did with one sample (errors as data): `written`; `same` (the target already holds these
    bytes); `kept` (the target holds other bytes, perhaps an author's edits, and was not overwritten)."""

    sample: Sample
    target: Path
    outcome: CopyOutcome


def copy_out(samples: list[Sample], to: Path, *, replace: bool = False) -> list[Copied]:
    """Copy each sample to `to/<its name>`, atomically; a file that differs is overwritten only with `replace`.
    Raises OSError for a file that cannot be read or written."""
    done = []
    for s in samples:
        data = read_file(s.path, MAX_SAMPLE)
        target = to / s.name
        try:
            there: bytes | None = read_file(target, MAX_SAMPLE)
        except FileNotFoundError:
            there = None
        except (OSError, ValueError):  # not readable, or larger than any sample: not ours, keep it
            there = b""
        if there == data:
            done.append(Copied(s, target, "same"))
            continue
        if there is not None and not replace:
            done.append(Copied(s, target, "kept"))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        done.append(Copied(s, target, "written"))
    return done


def _about(kind: str, path: Path) -> str:
    """A line saying what the file is; empty for a file that does not read as its kind should (it is listed all the
    same, and `tagengine check` says what is wrong with a ruleset)."""
    try:
        text = read_file(path, MAX_SAMPLE).decode("utf-8")
        if path.suffix == ".jsonl":
            return f"{sum(1 for line in text.splitlines() if line.strip())} chat(s), one a line"
        doc = json.loads(text)
    except (OSError, ValueError):
        return ""
    if not isinstance(doc, dict):
        return ""
    if kind == "rulesets":
        return str(doc.get("manifest", {}).get("name", ""))
    if kind == "states":
        return "characters " + ", ".join(doc.get("gameCharacterCards", {}))
    if kind == "sillytavern":
        return str(doc.get("data", {}).get("name", ""))
    return str(doc.get("about", "")).split(". ")[0].split(" (")[0]
