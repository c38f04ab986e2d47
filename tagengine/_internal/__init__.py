"""tagengine's implementation. Nothing here is public API: `tagengine/__init__.py` lists what is.

One folder per layer (docs/architecture.md is the map). Modules import each other freely inside this
package; code outside it, tests aside, goes through `tagengine`.
"""
