"""`python -m tagengine`: the same as the `tagengine` command."""

from ._internal.cli import main

main()
