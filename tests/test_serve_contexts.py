"""Issue 12 item 5: the context window by model name when `serve` has no --context (S-16): a table in the
package (tagengine/_internal/prompt/contexts.toml), reported in the x-tagengine-tokens header."""

from __future__ import annotations

import pytest
from serve_kit import Fake
from test_serve import SCRIPT, client, history, serving

from tagengine._internal.prompt.contexts import context_of, context_table


@pytest.mark.parametrize(("model", "context", "pattern"), [
    ("gpt-4o", 128000, "gpt-4o*"),
    ("gpt-4o-mini", 128000, "gpt-4o*"),  # the specific row before gpt-4*
    ("gpt-4", 8192, "gpt-4*"),
    ("gpt-4.1-mini", 1047576, "gpt-4.1*"),
    ("Claude-Sonnet-4-5", 200000, "claude*"),  # without case
    ("meta-llama/Llama-3.1-8B-Instruct", 131072, "*llama-3.1*"),  # a repository path
    ("llama-3-8b-instruct", 8192, "*llama-3*"),
    ("Qwen/Qwen2.5-7B-Instruct", 32768, "qwen*"),  # the part after the last "/"
    ("my-local-finetune", 8192, "default"),
    (None, 8192, "default"),
])
def test_the_table_gives_a_window_per_model(model, context, pattern):
    assert context_of(model) == (context, pattern)


def test_every_row_states_its_source_and_a_window():
    default, rows = context_table()
    assert default == 8192 and rows
    for row in rows:
        assert row.context > 0 and row.patterns and row.source.strip()


def test_the_header_says_where_the_window_came_from(tmp_path):
    with serving(tmp_path, Fake(SCRIPT)) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(
            model="claude-sonnet-4-5", messages=history("heist", ["one"], []), max_tokens=500)
        total, rest = raw.headers["x-tagengine-tokens"].split("/")
        assert rest.startswith("200000 response=500 context-from=table:claude* ") and int(total) > 0
        raw = client(srv).chat.completions.with_raw_response.create(
            model="someone/unknown-7b", messages=history("heist", ["one"], []), max_tokens=500)
        rest = raw.headers["x-tagengine-tokens"].split("/")[1]
        assert rest.startswith("8192 response=500 context-from=table:default ")
    with serving(tmp_path, Fake(SCRIPT), context=4096) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(
            model="claude-sonnet-4-5", messages=history("heist", ["one"], []), max_tokens=500)
        assert raw.headers["x-tagengine-tokens"].split("/")[1].startswith("4096 response=500 context-from=--context ")
