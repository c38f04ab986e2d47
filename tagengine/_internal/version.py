"""The installed version, read only when asked (importlib.metadata costs 70 ms at start-up)."""

from __future__ import annotations


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("tagengine")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0.0.0+source"
