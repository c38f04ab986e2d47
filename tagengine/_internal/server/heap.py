"""The server's long-lived objects kept out of the cyclic garbage collector's full passes (`gc.freeze`).

A full collection walks every tracked object, and on the development machine it walks them at about
300-450 ns each: with a loaded ruleset of 800 derived values (60 000 objects, most of them the ruleset's and
the imports') every full pass cost 30-90 ms of the request it fell in, about one editor page in ten (ED-23).
What a server keeps for its whole life (the modules, the loaded rulesets and their compiled programs) never
becomes garbage while it is loaded, so it is frozen once it is there: the start-up's imports, and again each
time a campaign's ruleset is (re)loaded. Before each freeze what was frozen is put back and collected once, so
the cycles of a ruleset replaced when its file changed are still freed, at the cost of one full pass then
(the load itself costs more). A request's own garbage is never frozen: it is made and freed between freezes.
"""

from __future__ import annotations

import gc


def freeze_long_lived() -> None:
    """Collect what is garbage now (the earlier freeze's objects included), then freeze what is left."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
