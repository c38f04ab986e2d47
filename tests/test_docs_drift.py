"""Docs that cannot drift (issue 25): every `tagengine.x.y` the README and docs/ name in code exists, every file
path they name in code exists, and each decision of docs/decisions.md has its own ID."""

from __future__ import annotations

import importlib
import re
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.M | re.S)
SPAN = re.compile(r"(`+)(.+?)\1", re.S)
DOTTED = re.compile(r"(?<![\w./-])tagengine(?:\.[A-Za-z_]\w*)+(?![\w/-])")
FROM_IMPORT = re.compile(r"\bfrom (tagengine(?:\.\w+)*) import (?:\(([\w, \n]+)\)|([\w, ]+))")
# Written like a dotted path but not one: each with what it is. Each must still occur in the docs and the code.
NOT_PATHS = {
    "tagengine.sqlite3": "the server's store file (server/memory/store.py)",
    "tagengine.access": "the access line's logger name (server/runtime/access_log.py)",
}

# A file or folder (ending in `/`) the docs name in code: a path with a known file ending, checked when it starts
# with a folder of the repository or of `tagengine/_internal/` (others are the user's: `replayed/`, `OUTDIR/`). A
# name with a placeholder (`<name>`, `*`) is a pattern; `pages/game_sheet.shown` is a module's name.
FILE = re.compile(r"(?<![\w./~$:-])((?:\w[\w.-]*/)+(?:[\w.-]*\.(?:py|md|json|jsonl|toml|j2|lark|css|js|txt|sh)|))"
                  r"(?![\w.*<>/-])")
TOP = {"tagengine", "tests", "benchmarks", "docs", "samples", "grammars", "prompts", "pages"}
INTERNAL = ROOT / "tagengine" / "_internal"


# Folders the tests or the tools write (.gitignore's folders: `tests/output/`, `dist/`): not there in a clone.
WRITTEN = tuple(line for line in (ROOT / ".gitignore").read_text().split() if line.endswith("/") and "*" not in line)


def checked(path: str) -> bool:
    first = path.partition("/")[0]
    if path.startswith(WRITTEN):
        return False
    return first in TOP or first == "_internal" or (INTERNAL / first).is_dir()


# A decision keeps the names of its time (NM-1): a name the docs record as renamed, on the left of an arrow
# (`old` -> `new`, `a`, `b` -> `c`, `d`) or before "(since" (`old` (since SV-2 `new`)), is history there, not a
# claim about today's code.
RENAMED = re.compile(r"((?:`[^`\n]+`(?:, | and | or |/)?)+)\s*(?:->|→|\(since )")


def historical(doc_text: str) -> set[str]:
    """The names a text records as renamed: every code span on the left of an arrow."""
    return {m[2] for r in RENAMED.finditer(doc_text) for m in SPAN.finditer(r[1])}


def code_of(text: str) -> list[str]:
    """The fenced blocks and inline code spans of a Markdown text."""
    blocks = [m[2] for m in FENCE.finditer(text)]
    prose = FENCE.sub("", text)
    return blocks + [m[2] for m in SPAN.finditer(prose)]


def named_paths() -> dict[str, set[str]]:
    """Each dotted `tagengine...` name in code in the docs -> the docs naming it (names recorded as renamed
    aside)."""
    found: dict[str, set[str]] = {}
    for doc, code in current_code():
        names = DOTTED.findall(code)
        for module, *listed in FROM_IMPORT.findall(code):
            names += [f"{module}.{n.strip()}" for n in "".join(listed).replace("\n", " ").split(",") if n.strip()]
        for n in names:
            found.setdefault(n, set()).add(doc.relative_to(ROOT).as_posix())
    return found


def current_code() -> Iterator[tuple[Path, str]]:
    """Each doc and each piece of code in it, but the names a rename left in history (`historical`)."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        past = historical(text)
        yield from ((doc, code) for code in code_of(text) if code not in past)


def resolves(dotted: str) -> bool:
    """Whether `dotted` is a module, or an attribute reached from the longest module that starts it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        with warnings.catch_warnings():  # a moved name (CHANGELOG: deprecated) still resolves, quietly here
            warnings.simplefilter("ignore", DeprecationWarning)
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
        return True
    return False


def test_the_scan_reads_code_only():
    """What counts: code spans and fenced blocks; not prose, not a format name such as `tagengine.state/1`."""
    text = ("tagengine.prose.word\n`tagengine.Ruleset.load` and `\"format\": \"tagengine.state/1\"`\n"
            "```python\nimport tagengine\nfrom tagengine import apply_reply, narration\n"
            "x = tagengine.GameState.new(rs)\n```\n")
    names = [n for c in code_of(text) for n in DOTTED.findall(c)]
    assert sorted(names) == ["tagengine.GameState.new", "tagengine.Ruleset.load"]
    assert FROM_IMPORT.findall(code_of(text)[0]) == [("tagengine", "", "apply_reply, narration")]
    assert resolves("tagengine.Ruleset.load") and resolves("tagengine._internal.text")
    assert not resolves("tagengine.party.save_party") and not resolves("tagengine.nothing")


def test_a_name_recorded_as_renamed_is_history():
    text = ("`ruleset/checks/` -> `ruleset/inspect/`; `a.py`, `b.py` → `c.py`; `d.py` (since X-1 `e.py`); "
            "`server/app.py` stays")
    assert historical(text) == {"ruleset/checks/", "a.py", "b.py", "d.py"}


def test_the_scan_reads_paths_not_patterns():
    paths = FILE.findall("`prompts/teach/<name>.j2` `pages/game_sheet.shown` `tests/*.py` `server/memory/store.py` "
                         "`tagengine/grammars/tags.lark` `sheet/` `tagengine --version` `x/y.py:12`")
    assert paths == ["server/memory/store.py", "tagengine/grammars/tags.lark", "sheet/", "x/y.py"]
    assert checked("tests/test_cli.py") and checked("server/memory/store.py") and not checked("tests/output/screens/")


def test_every_dotted_path_in_the_docs_resolves():
    named = named_paths()
    assert named, "the scan found nothing: it is broken"
    wrong = [f"{n} (in {', '.join(sorted(docs))})" for n, docs in sorted(named.items())
             if n not in NOT_PATHS and not resolves(n)]
    assert not wrong, "named in the docs but not in tagengine:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(NOT_PATHS))
def test_the_names_that_are_not_paths_are_still_used(name):
    """The exceptions above stay true: the docs still write each, and the package's code holds it."""
    assert name in named_paths(), f"{name} is no longer in the docs: drop it from NOT_PATHS"
    assert any(f'"{name}"' in p.read_text(encoding="utf-8") for p in (ROOT / "tagengine").rglob("*.py")), \
        f"{name} ({NOT_PATHS[name]}) is not in the code: drop it from NOT_PATHS"


def wheel_folders() -> dict[str, str]:
    """Where the wheel carries a folder of the repository: `tagengine/grammars/` is `grammars/` here."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    return {f"{dest}/": f"{src}/" for src, dest in table["force-include"].items()}


def test_every_file_the_docs_name_exists():
    wheel = wheel_folders()
    missing = []
    for doc, code in current_code():
        for path in filter(checked, FILE.findall(code)):
            here = next((src + path[len(dest):] for dest, src in wheel.items() if path.startswith(dest)), path)
            if not any((base / here).exists() for base in (ROOT, ROOT / "tagengine", INTERNAL)):
                missing.append(f"{doc.relative_to(ROOT).as_posix()}: {path}")
    assert not missing, "named in the docs but not in the repository:\n" + "\n".join(sorted(set(missing)))


def decision_ids() -> list[str]:
    """The ID of every row of docs/decisions.md's tables (the first cell)."""
    text = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    return re.findall(r"^\| *([A-Z]+-\d+) *\|", text, re.M)


def test_decision_ids_are_unique():
    ids = decision_ids()
    assert len(ids) > 100, "the scan found too few rows: it is broken"
    twice = sorted(i for i, n in Counter(ids).items() if n > 1)
    assert not twice, f"decision IDs used twice in docs/decisions.md: {', '.join(twice)}"
    assert not [i for i in ids if i.startswith("DEC-")], "DEC-n are DESIGN.md's; a decision here takes its own ID"


def test_ids_are_scanned_from_every_row():
    """Every body row of a table (not a header: the row above a `|---|` rule) starts with an ID the scan reads."""
    lines = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8").splitlines()
    rule = re.compile(r"^\|[-| :]+\|$")
    rows = [line for line, after in zip(lines, [*lines[1:], ""], strict=True)
            if line.startswith("|") and not rule.match(line) and not rule.match(after)]
    assert len(rows) == len(decision_ids()), [r[:40] for r in rows if not re.match(r"^\| *[A-Z]+-\d+ *\|", r)]
