"""The kinds of upstream `tagengine serve` can talk to, one module each, listed in `kinds.KINDS`."""
