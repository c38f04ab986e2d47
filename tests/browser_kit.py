"""A headless Chromium for the page tests (Playwright driving the system's browser: no browser download), or a
skip that says what is missing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def launched(*args: str) -> Iterator[Any]:
    """A fixture's body: the browser, launched with `args` beside the ones every test needs, closed after."""
    exe = chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine: install Debian's `chromium` package (./dev test does it as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed: pip install -e '.[dev]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu", *args])
        yield b
        b.close()
