"""`ServerContext`: everything one server holds, made once by `make_app` and handed to each route group.

Two servers in one process (two apps, as the tests make) share nothing through it: each has its own store,
campaigns, upstream client, snapshot cache, chain memos, token counts and mid-reply memory (SV-4).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import NotFoundError, TagengineError
from .edits.pending import PendingEdits
from .errors import Refused
from .guard.sessions import Sessions
from .limits import LOOP_CHARS, MAX_USER_ID, THREAD_MIN, WRITES_HELD
from .memory.campaigns import Campaign, Campaigns
from .memory.chain import Chain, Replayed
from .memory.latest_turns import Latest
from .memory.snapshots import SnapshotCache
from .memory.store import Store
from .options import Options
from .runtime.heap import freeze_long_lived
from .runtime.worker_threads import Workers
from .turn.mid_reply import MidReplyChecks
from .turn.request import CAMPAIGN_MODEL, MarkedHistory, RecentHistories, hides
from .upstream.counting import fitter
from .upstream.kinds import reach_upstream
from .wire.chat_completions import model_ids
from .wire.json_codec import ChatBodies, loads_or_none

log = logging.getLogger("tagengine.serve")


class ServerContext:
    """One server's parts: `options` (as started), `store` (the SQLite file), `campaigns`, `snapshots` (the
    states held in memory), `chain` (state from a history), `latest` (what the pages show), `upstream`,
    `workers` (the heavy steps' threads), `fit` (the prompt fitted, counted as --count-with-upstream says),
    `mid_reply` (--settle-checks, else None), `sessions` (the pages' sign-ins, with --api-key; else None)
    and `edits` (the players' edits waiting for the next reply)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.snapshots = SnapshotCache()
        self.store = Store(options.data, per_campaign=options.keep, pruned=self.snapshots.drop_gone,
                           writes_held=WRITES_HELD)  # written a turn's worth at a time (store.py, PF-55)
        self.campaigns = Campaigns(self.store, loaded=freeze_long_lived)  # a ruleset kept for good: frozen (ED-23)
        self.chain = Chain(self.store, self.snapshots)
        self.latest = Latest(self.store, self.snapshots)
        self.upstream = reach_upstream(options)
        self.workers = Workers()
        self.histories = RecentHistories()  # the last few requests' messages read (PF-59)
        self.bodies = ChatBodies()  # the chat bodies sent upstream, each message's JSON written once (PF-61)
        self.prompt_fitter = fitter(self.upstream, options.count_with_upstream, self.workers)
        self.mid_reply = MidReplyChecks(self.upstream, self.workers) if options.settle_checks else None
        self.sessions = Sessions(options.data, options.api_key) if options.api_key else None  # the pages' sign-ins
        self.edits = PendingEdits(self.store)  # the players' edits waiting for the next reply (edits/)
        self.real_model = options.upstream_model  # what a campaign's model id is sent upstream as (OW-1)

    def campaign(self, name: str) -> Campaign:
        """The campaign `name`, else a 404 naming the one asked for (its first 80 characters: a name is not
        bounded before it is looked up), or a 500 when its ruleset cannot be loaded."""
        try:
            return self.campaigns.get(name)
        except NotFoundError:
            raise Refused(404, f"unknown campaign {name[:80]!r}", "campaign_not_found") from None
        except (TagengineError, OSError) as e:
            # the reason names the server's own files: it goes to the log, the client gets none of it (SEC-9)
            log.error("campaign %s: its ruleset cannot be loaded: %s", name, e)
            raise Refused(500, f"campaign {name[:80]!r}: its ruleset cannot be loaded; the server's log says why",
                          "campaign_broken", "server_error") from None

    def user_of(self, headers: Mapping[str, str]) -> str | None:
        """The chat app's user a request names in --user-header (OW-6): None without the option or the header; a
        400 for a value past MAX_USER_ID characters or not printable."""
        if self.options.user_header is None:
            return None
        said = headers.get(self.options.user_header)
        if not said:
            return None
        if len(said) > MAX_USER_ID or not said.isprintable():
            raise Refused(400, f"{self.options.user_header} names a user in at most {MAX_USER_ID} printable "
                               "characters", "invalid_user")
        return said

    def users_campaign(self, name: str, headers: Mapping[str, str]) -> Campaign:
        """`campaign(name)` for the user the request names (OW-6): a campaign another user owns is a 404 as an
        unknown one is (its name tells nothing); one nobody owns becomes this user's. Without a user (no
        --user-header, or none sent) only a campaign nobody owns."""
        c = self.campaign(name)
        if self.options.user_header is None:
            return c
        user = self.user_of(headers)
        owner = self.store.claim(c.name, user) if user is not None else self.store.owners().get(c.name)
        if owner is not None and owner != user:
            raise Refused(404, f"unknown campaign {name[:80]!r}", "campaign_not_found")
        return c

    def hides(self, headers: Mapping[str, str]) -> bool:
        """Whether the request's chat shows replies as their narrations (OW-4): its `X-Tagengine-Show`, else
        --hide-tags; another value is a 400."""
        return hides(headers, self.options.hide_tags)

    def visible(self, headers: Mapping[str, str]) -> list[str]:
        """The campaigns a request's user may play (OW-6): theirs and those nobody owns; all without
        --user-header. The pages' campaign list; not `/v1/models`, which lists every campaign (OW-12)."""
        names = [r.name for r in self.store.campaigns()]
        if self.options.user_header is None:
            return names
        user, owners = self.user_of(headers), self.store.owners()
        return [n for n in names if owners.get(n, user) == user]

    async def upstream_model(self, headers: Mapping[str, str]) -> str | None:
        """The model a campaign's model id is sent upstream as (OW-1): --upstream-model, else the first model the
        upstream lists (asked once, then remembered), else None (the request's `model` taken out)."""
        if self.real_model is None:
            try:
                got = await self.upstream.send(self.upstream.request("GET", "/models", headers))
            except httpx.HTTPError:
                return None
            self.learn_model(loads_or_none(got.content) if got.status_code == 200 else None)
        return self.real_model

    def learn_model(self, doc: Any) -> None:
        """The first model of the upstream's model list `doc` that is not a campaign's, remembered while none is
        (OW-1); a document that lists none leaves it unknown."""
        if self.real_model is None:
            self.real_model = next((i for i in model_ids(doc) if not i.startswith(CAMPAIGN_MODEL)), None)

    async def read_history(self, messages: list[Any]) -> MarkedHistory:
        """`read_marked(messages)`: on the event loop while the text it scans stays within LOOP_CHARS characters, else
        in a worker thread, since it scans every system and user message for a near-miss marker (TR-8), at some 60 ms
        a megabyte of brackets (SEC-2, SEC-11); a reply counts only when it holds the marker's start, so a long chat
        of short user messages reads here, without a thread's hop per request (PF-21), in one pass (PF-32). A start
        the messages share with one of the last few requests' is not read again, nor counted (PF-59)."""
        marked = self.histories.read(messages, LOOP_CHARS)
        return marked if marked is not None else await self.workers.run(self.histories.read_whole, messages)

    async def replayed(self, c: Campaign, history: list[dict[str, str]], hidden: bool | None = None) -> Replayed:
        """The state after `history` (plain role/content messages), read as the server reads replies
        (--hide-tags, or `hidden`: narrations mapped back). What is too long for the event loop runs in a worker thread
        (`Chain.state_of`'s `defer`: a replay of more than THREAD_MIN replies or LOOP_CHARS characters, a
        history too long to hash), so it never stalls other requests (S-19, SEC-2)."""
        hidden = self.options.hide_tags if hidden is None else hidden  # the request's own say (OW-4), else the option
        found = self.chain.state_of(c, history, hidden=hidden, defer=THREAD_MIN)
        return found if isinstance(found, Replayed) else await self.workers.run(found.run)

    async def close(self) -> None:
        await self.upstream.close()
        self.store.close()
