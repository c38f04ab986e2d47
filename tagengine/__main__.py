"""`python -m tagengine`: the same as the `tagengine` command."""

from ._internal.console import script

script()
