"""The server's long-lived objects kept out of the cyclic garbage collector's full passes (`gc.freeze`).

A full collection walks every tracked object, and on the development machine it walks them at about
300-450 ns each: with a loaded ruleset of 800 derived values (60 000 objects, most of them the ruleset's and
the imports') every full pass cost 30-90 ms of the request it fell in, about one editor page in ten (ED-23).
What a server keeps for its whole life (the modules, the loaded rulesets and their compiled programs) never
becomes garbage while it is loaded, so it is frozen once it is there: the start-up's imports, and again each
time a campaign's ruleset is (re)loaded. Each freeze collects first what is not frozen (what came since the
last one), so a request's garbage is never frozen. Only when a loaded ruleset was replaced (its file changed,
the campaign's start made again) is what was frozen put back and collected once, so the old ruleset's cycles
are freed: a full pass over the whole heap then, not at every load (ED-24: in a process with a large heap, as
the test suite's, that pass was most of a server's start-up).
"""

from __future__ import annotations

import gc


def freeze_long_lived(replaced: bool = False) -> None:
    """Collect what is garbage now, then freeze what is left; `replaced`: something frozen may have died since
    (a ruleset loaded again), so the earlier freeze's objects are collected too."""
    if replaced:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
