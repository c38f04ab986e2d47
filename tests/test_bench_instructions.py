"""`benchmarks/instructions.py --within`: the function named is called through `operator.call` (the C function
callgrind collects within), a coroutine function step by step, and either gives what it gave before: the instrument
counts the code it names and changes nothing it measures."""

from __future__ import annotations

import asyncio
import operator
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import instructions


@pytest.fixture
def owner(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[types.ModuleType, list[Any]]]:
    """A module with a plain function, a coroutine function and a class's method, and the calls `operator.call`
    saw."""
    module = types.ModuleType("within_target")

    def add(a: int, b: int = 1) -> int:
        return a + b

    async def later(x: int) -> int:
        await asyncio.sleep(0)  # a step out to the loop and back: the coroutine is driven across it
        return x * 2

    async def fails() -> None:
        await asyncio.sleep(0)
        raise KeyError("inner")

    class Box:
        def twice(self, x: int) -> int:
            return 2 * x

    module.add, module.later, module.fails, module.Box = add, later, fails, Box  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "within_target", module)
    seen: list[Any] = []
    real = operator.call

    def counted(f: Any, *a: Any, **k: Any) -> Any:
        seen.append(f)
        return real(f, *a, **k)

    monkeypatch.setattr(operator, "call", counted)
    yield module, seen


def test_a_function_named_is_called_through_operator_call_and_gives_what_it_gave(
        owner: tuple[types.ModuleType, list[Any]]) -> None:
    module, seen = owner
    instructions.collected_within("within_target:add")
    assert module.add(2, b=3) == 5
    assert len(seen) == 1
    instructions.collected_within("within_target:Box.twice")
    assert module.Box().twice(4) == 8
    assert len(seen) == 2


def test_a_coroutine_function_is_driven_step_by_step_through_operator_call(
        owner: tuple[types.ModuleType, list[Any]]) -> None:
    module, seen = owner
    instructions.collected_within("within_target:later")
    instructions.collected_within("within_target:fails")
    assert asyncio.run(module.later(21)) == 42
    assert len(seen) == 2  # the first step to the sleep, the second from it to the end: every step inside
    with pytest.raises(KeyError, match="inner"):
        asyncio.run(module.fails())
