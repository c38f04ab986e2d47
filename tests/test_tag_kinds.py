"""Issue 11: one tag vocabulary. Grammar, scanner, stream filter, command table, reasons table and prompt
teaching agree, and a tag kind is named only in the files its row, its module and its teaching own."""

from __future__ import annotations

import ast
import re
import sys
import types

import pytest
from cmdkit import sample_state

from conftest import ROOT, load_sample
from tagengine._internal.commands import REASONS
from tagengine._internal.commands import table as table_module
from tagengine._internal.commands.dispatch import apply_reply
from tagengine._internal.commands.family import Family, Op
from tagengine._internal.commands.result import Outcome, ok
from tagengine._internal.prompt import reminder
from tagengine._internal.tags import parse
from tagengine._internal.tags import vocabulary as voc
from tagengine._internal.tags.scan import found_in, scan

PKG = ROOT / "tagengine"


def code_strings(path) -> list[str]:
    """Every string constant of a module that is not a docstring."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


@pytest.mark.parametrize("kind", voc.TAG_KINDS, ids=lambda k: k.name)
def test_a_tag_kind_is_named_only_by_its_row_its_module_and_its_teaching(kind):
    """Counting the files that name a kind: its vocabulary row, its family module (which builds the Family),
    its teaching template, and the system prompt's one example. A new kind needs no other file."""
    allowed = {"tagengine/_internal/tags/vocabulary.py", f"tagengine/_internal/commands/{kind.family}.py",
               f"prompts/teach/{kind.name}.j2", "prompts/system.j2"}
    opener = re.compile(rf"\[\s*{kind.name}\s*:", re.I)
    naming = set()
    for path in PKG.rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        strings = code_strings(path)
        if any(opener.search(s) for s in strings):
            naming.add(rel)
        if re.search(rf"Family\.of\(\s*[\"']{kind.name}[\"']", path.read_text()):
            naming.add(rel)
    for folder in ("prompts", "grammars"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and opener.search(re.sub(r"\{#.*?#\}|//[^\n]*", "", path.read_text(), flags=re.S)):
                naming.add(str(path.relative_to(ROOT)))
    assert naming <= allowed, sorted(naming - allowed)
    assert f"tagengine/_internal/commands/{kind.family}.py" in naming


def test_table_scanner_grammar_stream_and_teaching_agree():
    """Every kind of the vocabulary has a family, is found by the scanner and parsed by the grammar, is
    held back by the stream filter while it is being written, and refuses only with reasons of the table."""
    from tagengine._internal.stream import StreamFilter

    families = table_module.families()
    assert tuple(families) == voc.TAG_NAMES
    rs, state = load_sample("blades-like"), sample_state("blades-like")
    for name, family in families.items():
        assert family.name == name and family.ops
        found = scan(f'x [{name.upper()}: a="b"] y')
        assert [f.name for f in found] == [name] and found[0].tag is not None
        assert parse(f'[{name}: a="b"]').name == name
        sf = StreamFilter(rs, state)
        assert sf.feed("Mira runs. [" + name[:3]) == "Mira runs. "
        out = apply_reply(rs, state, f'[{name}: nonsense="1"]')
        assert all(r.result != "refused" or r.reason in REASONS for r in out.receipts)
    text = reminder(rs, state)
    for kind in voc.TAG_KINDS:
        if families[kind.name].teach is not None and families[kind.name].teach(rs, state) is not None:
            assert f"[{kind.name}:" in text


def test_a_new_kind_needs_only_its_row_its_module_and_its_teaching(monkeypatch, tmp_path):
    """A third kind, `probe`, added the way the architecture says: a vocabulary row, a module defining
    FAMILY, a teaching template. The dispatcher applies it and the reminder teaches it, with no other
    file changed (the vocabulary's patterns are built for the extended table as they are for the real one)."""
    from jinja2 import ChoiceLoader, FileSystemLoader

    from tagengine._internal.commands import dispatch
    from tagengine._internal.prompt import render

    module = types.ModuleType("tagengine._internal.commands.probe")

    def echo(rs, state, tag):
        return Outcome(ok(tag.get("say") or ""), state)

    module.FAMILY = Family.of("probe", lambda rs, tag: "echo", (Op("echo", echo),),
                              lambda rs, state: {"word": "ping"})
    monkeypatch.setitem(sys.modules, module.__name__, module)
    kinds = (*voc.TAG_KINDS, voc.TagKind("probe", "probe"))
    extended = voc.vocabulary(tuple(k.name for k in kinds))
    monkeypatch.setattr(table_module, "TAG_KINDS", kinds)
    monkeypatch.setattr(dispatch, "found_in", lambda text: found_in(text, extended))  # the row, as the scanner reads it
    (tmp_path / "teach").mkdir()
    (tmp_path / "teach" / "probe.j2").write_text('- Probes: [probe: say="{{ k.word }}"]\n')
    env = render.env().overlay(loader=ChoiceLoader([FileSystemLoader(str(tmp_path)), render.env().loader]))
    monkeypatch.setattr(render, "env", lambda: env)
    render.template.cache_clear()  # the templates kept by name are the package environment's
    table_module.families.cache_clear()
    table_module.family_of.cache_clear()
    try:
        rs, state = load_sample("blades-like"), sample_state("blades-like")
        out = apply_reply(rs, state, 'Mira listens. [probe: say="hi"]')
        assert out.text == 'Mira listens. [probe: say="hi" result="ok" now="hi"]'
        assert out.receipts[0].name == "probe"
        assert '- Probes: [probe: say="ping"]' in reminder(rs, state)
    finally:
        render.template.cache_clear()
        table_module.families.cache_clear()
        table_module.family_of.cache_clear()
