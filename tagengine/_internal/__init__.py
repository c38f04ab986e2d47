"""tagengine's implementation. Nothing here is public API: `tagengine/__init__.py` lists what is.

One folder per layer (docs/architecture.md is the map). A module imports its own layer and the layers below
(tests/test_layers.py); code outside this package, tests aside, goes through `tagengine`.
"""
