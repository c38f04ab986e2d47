"""What `tagengine serve` was started with: one field per option of the command, named as the option, so the
command line and the server read the same names (the flags are an interface, DESIGN.md, SV-1); `transport`
and `samples` are for tests and the demo."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from .memory.store import DEFAULT_PER_CAMPAIGN

UPSTREAM_TRANSPORTS = ("own", "httpx")  # --upstream-transport: the server's own (transport.py), or httpx's


@dataclass
class Options:
    upstream: str
    data: Path
    campaign: str | None = None
    api_key: str | None = None
    context: int | None = None
    timeout: float = 300.0
    transport: httpx.AsyncBaseTransport | None = None  # tests: an upstream in this process
    samples: Path | None = None
    count_with_upstream: bool = False  # token counts from the upstream's tokenize endpoint
    hide_tags: bool = False  # the player gets the narration; the tagged reply stays in the store (S-14)
    keep: int = DEFAULT_PER_CAMPAIGN  # snapshots kept per campaign, the least recently used pruned (S-20)
    settle_checks: bool = False  # --settle-checks: checks rolled mid-reply (mid_reply.py)
    upstream_transport: str = "own"  # one of UPSTREAM_TRANSPORTS (SV-6)
    rulesets: Path | None = None  # --rulesets DIR: the rulesets a campaign started on the pages may use
    # who may talk to the server (TR-1..TR-4; guard/origins.py, docs/security.md)
    host: str = "127.0.0.1"  # --host: the address it listens on; the names a request's Host may give follow
    allow_host: tuple[str, ...] = ()  # --allow-host: more names a request's Host may give (`*`: any)
    allow_origin: tuple[str, ...] = ()  # --allow-origin: other origins whose pages may call it (CORS)
    trust_proxy: str | None = None  # --trust-proxy: addresses whose X-Forwarded-Proto and -For are believed
    # a chat app in front (OW-1, OW-6; docs/open-webui.md)
    upstream_model: str | None = None  # --upstream-model: the model sent upstream for a campaign's model id
    user_header: str | None = None  # --user-header: the header that names the chat app's user; campaigns kept apart
