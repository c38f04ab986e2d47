"""Issue 28 items 1 and 3: the SillyTavern extension's files (sillytavern/extension/, decisions STX-1, STX-6) and
`tagengine st extension --install DIR`. The badges' module runs in Node (the same ES module SillyTavern's page
loads; no build step, so nothing to keep current); the page itself is driven in tests/test_st_extension_ui.py."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from tagengine._internal.cli import run
from tagengine._internal.commands.reasons import REASONS
from tagengine._internal.sillytavern.extension import FILES, extension_dir

EXT = ROOT / "sillytavern" / "extension"
RULE_ID = re.compile(r"\b[A-Z]{1,6}-\d+\b")


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def reason_words() -> dict[str, str]:
    """reasons.js's table (strict JSON between its braces, as its comment promises)."""
    text = (EXT / "reasons.js").read_text(encoding="utf-8")
    words: dict[str, str] = json.loads(text[text.index("{"):text.rindex("}") + 1])
    return words


def test_every_reason_has_words_for_players_and_no_rule_id():
    """A code added to the engine's table without words in the extension fails here."""
    words = reason_words()
    assert set(words) == set(REASONS)
    assert not [w for w in words.values() if RULE_ID.search(w) or not w.strip()]


def test_the_manifests_name_files_that_are_there():
    """SillyTavern's *Install extension* clones the repository and reads its root manifest.json; `--install`
    copies the folder, whose own manifest.json names its files without the folder."""
    root = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
    own = json.loads((EXT / "manifest.json").read_text(encoding="utf-8"))
    for key in ("js", "css"):
        assert (ROOT / root[key]).is_file() and (EXT / own[key]).is_file()
        assert ROOT / root[key] == EXT / own[key]
    assert {k: v for k, v in root.items() if k not in ("js", "css")} == {
        k: v for k, v in own.items() if k not in ("js", "css")}
    assert own["minimum_client_version"] == "1.19.0" and own["hooks"] == {"activate": "init"}
    assert "export async function init()" in (EXT / own["js"]).read_text(encoding="utf-8")


def test_the_installer_copies_every_file_of_the_extension_and_each_import_is_one_of_them():
    assert extension_dir() == EXT
    assert set(FILES) == {p.name for p in EXT.iterdir() if p.is_file()}
    for js in EXT.glob("*.js"):
        for imported in re.findall(r"""from '\./([^']+)'""", js.read_text(encoding="utf-8")):
            assert imported in FILES, (js.name, imported)


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("no Node.js on this machine (SillyTavern's tests need it too)")
    return exe


def test_every_module_parses(tmp_path):
    """No build step: the files are what SillyTavern's page loads, so a syntax error is caught here, not there
    (each checked as a module: Node checks a `.js` file as a script and lets a module's error pass)."""
    for js in sorted(EXT.glob("*.js")):
        copy = tmp_path / f"{js.stem}.mjs"
        shutil.copyfile(js, copy)
        got = subprocess.run([node(), "--check", str(copy)], capture_output=True, text=True, timeout=60)
        assert got.returncode == 0, (js.name, got.stderr)


def badges(text: str, words: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """receipts.js run in Node on a reply's text: each receipt's badge (what it says) and its HTML; `words`: the
    campaign's (the state answer's `sheet.words`), set first."""
    module = json.dumps((EXT / "receipts.js").as_uri())
    script = (f"import {{ receiptsIn, describe, badgeHtml, setWords }} from {module};\n"
              f"setWords({json.dumps(words)});\n"
              "const text = await new Promise(r => { let s = ''; process.stdin.on('data', d => s += d);"
              " process.stdin.on('end', () => r(s)); });\n"
              "console.log(JSON.stringify(receiptsIn(text).map(r => ({ ...describe(r), html: badgeHtml(r) }))));")
    got = subprocess.run([node(), "--experimental-detect-module", "--input-type=module", "-e", script],
                         input=text, capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    out: list[dict[str, Any]] = json.loads(got.stdout)
    return out


def test_a_badge_says_what_a_receipt_did_in_words():
    reply = ('The bell rings. [clock: name="Alarm raised" tick="2" result="ok" now="2/6"]\n'
             '[sheet: who="Lurk" op="spend" pool="stress" amount="9" result="refused" reason="insufficient"]\n'
             '[check: who="Lurk" skill="Prowl" rolled="6,2" target="4" successes="1" result="ok" outcome="partial"]\n'
             '[clock: name="Patrol" tick="1"] <b>[sheet: who="<i>x</i>" op="spend" pool="a" result="ok" now="1"]')
    got = badges(reply)
    assert [(b["kind"], b["result"], b["text"]) for b in got] == [
        ("clock", "ok", "Alarm raised +2 \u2192 2/6"),
        ("sheet", "refused", "Lurk: not enough points are left"),
        ("check", "ok", "Lurk \u00b7 Prowl: 6 2 (4+ succeeds, 1 succeeded) \u2192 partial"),
        ("sheet", "ok", "<i>x</i>: a \u22121 \u2192 1")]  # a tag the server has not judged is no badge
    assert "--te-fill: 33%" in got[0]["html"] and got[1]["html"].count('class="te-badge') == 1
    assert "insufficient" not in got[1]["text"] and '<span class="te-die">6</span>' in got[2]["html"]
    assert "<i>" not in got[3]["html"] and "&lt;i&gt;x&lt;/i&gt;" in got[3]["html"]  # every text escaped


def test_a_badge_says_the_rulesets_words_and_a_malformed_tag_in_words():
    """STX-16: a pool named by its id reads as its label, the party sheet by the ruleset's name for it, and a tag
    the engine could not read says so without a subject ("A tag: a tag that could not be read" read badly)."""
    words = {"labels": {"stress": "Stress", "coin": "Coin", "trauma": "Trauma"}, "party": "Crew"}
    reply = ('[sheet: who="Vex" op="spend" pool="stress" amount="1" result="ok" now="0/9"]\n'
             '[sheet: sheet="party" op="restore" pool="coin" amount="1" result="ok" now="1/8"]\n'
             '[sheet: who="Rook" op="track" track="trauma" by="1" result="ok" now="1"]\n'
             '[sheet: raw="who=\\"Vex op=\\"spend\\"" result="refused" reason="malformed"]\n'
             '[edit: sheet="party" changes="fields.tier=1" result="ok" now="Tier 1"]')
    got = [b["text"] for b in badges(reply, words)]
    assert got == ["Vex: Stress \u22121 \u2192 0/9", "Crew: Coin +1 \u2192 1/8", "Rook: Trauma \u2192 1",
                   "Sheet tag: could not be read, so nothing changed", "Crew sheet: Tier 1 by a player"]
    assert [b["text"] for b in badges(reply)][1] == "Party sheet: coin +1 \u2192 1/8"  # no campaign's words yet


def user_folder(tmp_path: Path) -> Path:
    """A SillyTavern user's folder as its server makes it (data/default-user with extensions/ and the rest)."""
    user = tmp_path / "data" / "default-user"
    for sub in ("extensions", "chats", "characters"):
        (user / sub).mkdir(parents=True)
    return user


def test_st_extension_install_copies_it_into_a_users_extensions_folder(tmp_path):
    user = user_folder(tmp_path)
    code, out, err = call("st", "extension", "--install", str(user))
    target = user / "extensions" / "tagengine"
    assert code == 0 and str(target) in out, err
    assert sorted(p.name for p in target.iterdir()) == sorted(FILES)
    assert all((target / n).read_bytes() == (EXT / n).read_bytes() for n in FILES)
    (target / "index.js").write_text("// an older version")
    code, _, _ = call("st", "extension", "--install", str(user / "extensions"))  # the extensions/ folder itself
    assert code == 0 and (target / "index.js").read_bytes() == (EXT / "index.js").read_bytes()
    assert sorted(p.name for p in (user / "extensions").iterdir()) == ["tagengine"]  # nothing left beside it
    code, out, _ = call("st", "extension")
    assert code == 0 and out.strip() == str(EXT)


@pytest.mark.parametrize("case", ["missing", "not-a-user", "git-clone", "someone-elses"])
def test_st_extension_install_names_what_is_in_the_way(tmp_path, case):
    user = user_folder(tmp_path)
    target = user / "extensions" / "tagengine"
    given, path, words = user, str(target), "in the way"
    if case == "missing":
        given, path, words = tmp_path / "nowhere", str(tmp_path / "nowhere"), "no such folder"
    elif case == "not-a-user":
        given, path, words = tmp_path / "data", str(tmp_path / "data"), "not a SillyTavern user's folder"
    elif case == "git-clone":
        shutil.copytree(EXT, target)
        (target / ".git").mkdir()
        words = "installed from Git"
    else:
        target.mkdir()
        (target / "manifest.json").write_text('{"display_name": "Other"}')
    before = sorted(p.name for p in target.iterdir()) if target.exists() else None
    code, out, err = call("st", "extension", "--install", str(given))
    assert code == 1 and out == "" and f"{path}: " in err and words in err
    assert (sorted(p.name for p in target.iterdir()) if target.exists() else None) == before


def test_the_extension_builds_every_api_path_with_one_helper_and_each_is_a_route_of_the_server(tmp_path):
    """The JSON API has one URL scheme; the extension spells it once (`apiPath` in connection.js), and every path
    it builds is one the server routes, not an old alias."""
    from starlette.routing import Match

    from tagengine._internal.server.app import Options, make_app

    helper = re.compile(r"/\*\* A path of the JSON API.*?\n}\n", re.S)
    spelled = [js.name for js in EXT.glob("*.js") if "/tagengine/api" in helper.sub("", js.read_text("utf-8"))]
    assert spelled == [], "build API paths with apiPath (connection.js)"
    calls = [("state", None), ("state", "night run"), ("checks", None), ("campaigns", None),
             ("characters/Lurk", "heist"), ("read/party", "heist"), ("party", "heist"), ("", "heist")]
    script = (f"import {{ apiPath }} from {json.dumps((EXT / 'connection.js').as_uri())};\n"
              f"console.log(JSON.stringify({json.dumps(calls)}.map(([r, c]) => apiPath(r, c))));")
    got = subprocess.run([node(), "--experimental-detect-module", "--input-type=module", "-e", script],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    paths = json.loads(got.stdout)
    assert paths[:2] == ["/tagengine/api/state", "/tagengine/api/c/night%20run/state"]
    app = make_app(Options(upstream="demo", data=tmp_path / "data"))
    for path in paths:
        scope = {"type": "http", "method": "POST", "path": path.replace("%20", " "),
                 "root_path": ""}
        matched = [r for r in app.routes if r.matches(scope)[0] is not Match.NONE]
        assert matched, path
        assert getattr(matched[0].endpoint, "__name__", "") != "moved", path  # not an old path's alias


def test_the_sillytavern_doc_leads_with_the_shortest_path_the_walk_takes():
    """docs/sillytavern.md opens with the shortest path (install, connect, start your campaign, play), in the order
    tests/test_st_walk.py walks it, and says what a new user met on the way: where an install's user folder is,
    that `--install` leaves a Git copy alone, that the reload after it disconnects, that only http(s) URLs install."""
    doc = (ROOT / "docs" / "sillytavern.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", doc, re.M)
    assert sections[0].startswith("The shortest path"), sections[:2]
    path = " ".join(doc[doc.index("## The shortest path"):doc.index("## 1. Make a campaign")].split())
    walk = (ROOT / "tests" / "test_st_walk.py").read_text(encoding="utf-8")
    steps = ["tagengine serve --upstream demo", "Install extension", "Install just for me",
             "Custom (OpenAI-compatible)", "Connect", "Import Character from File", "Start a campaign...",
             "Start and play it in this chat", "Save", "Edit the sheet", "Roll a check"]
    at = [0]
    for step in steps:  # each after the one before it
        at.append(path.find(step, at[-1]))
        assert at[-1] >= 0, f"{step!r} is not said after {steps[len(at) - 3] if len(at) > 2 else 'the start'}"
    assert all(s in walk for s in steps), [s for s in steps if s not in walk]
    for said in ("`http://` or `https://`", "`--dataRoot DIR`: `DIR/default-user`", "npm install -g sillytavern",
                 "does not replace a copy installed from its Git URL: it exits 1", "**The reload disconnects**",
                 "click **Connect** again"):
        assert said in doc, said


def test_the_campaign_line_says_how_it_was_chosen_without_nested_parentheses():
    """STX-16: "(the server's default campaign (--campaign))" read badly; each way a campaign is chosen is said
    inside the line's one pair of parentheses."""
    module = json.dumps((EXT / "panel.js").as_uri())
    script = (f"import {{ campaignWords }} from {module};\n"
              "console.log(JSON.stringify(['marker', 'url', 'default', 'asked'].map(by => campaignWords("
              "{ campaign: { name: 'heist', by, ruleset: 'Blades-like Crew' }, turn: 2 }))));")
    got = subprocess.run([node(), "--experimental-detect-module", "--input-type=module", "-e", script],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    lines = json.loads(got.stdout)
    assert len(lines) == 4 and all(line.startswith('Campaign "heist" (') for line in lines), lines
    assert not [line for line in lines if re.search(r"\([^()]*\(", line)], lines
    assert "the server's default campaign, --campaign" in lines[2]
