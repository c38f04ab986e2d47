"""`tagengine serve --count-with-upstream` (K-9..K-12): token counts from the model's own server.

llama.cpp (`POST /tokenize {"content"}` -> `{"tokens"}`), vLLM (`POST /tokenize {"model", "prompt"}` ->
`{"count", "max_model_len", "tokens"}`) and KoboldCpp (`POST /api/extra/tokencount {"prompt"}` ->
`{"value", "ids"}`) tokenize with the model they have loaded. The first request asks which one answers
(once; the answer, "none" included, is kept for the server's life); from then on each text the prompt
needs is asked once per model name and kept in a bounded LRU table. The fitting itself stays synchronous
(`prompt/upstream_tokens.py`): the history, the role names and the reminder are fetched before it, and
a text it meets that is not in the table yet (the system prompt on its first fit, the texts a cut makes)
stops it, is fetched, and the fitting runs again. When the upstream has no tokenize endpoint, or a count
fails, the request is counted as without the option (the registry's choice) and the log and
`x-tagengine-tokens` say so.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from array import array
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import PurePath
from typing import Any

import httpx

from ...history import ROLES
from ...prompt import Budget, Prompt, Report, build_prompt, reminder
from ...prompt.registry import choose
from ...prompt.tokens import SlowFit, release_rank_tables
from ...prompt.upstream_tokens import NotCounted, UpstreamTokenizer
from ...records import frozen
from ...ruleset import Ruleset
from ...state import GameState
from ..limits import COUNT_REQUESTS, COUNT_ROUNDS, COUNT_TIMEOUT, COUNTED_TOKENS_HELD, COUNTS_HELD, LOOP_CHARS
from ..runtime.worker_threads import Workers
from ..wire.json_codec import dumps, loads
from .client import Upstream, wire_headers

log = logging.getLogger("tagengine.serve")

PROBE = "Hello, world"
_TABLES = itertools.count(1)  # each server's table of counts has its own number


@frozen
class Endpoint:
    """One server kind's tokenize request and how its answer gives the token ids (None: not its shape)."""

    kind: str
    path: str
    body: Callable[[str, str | None], dict[str, Any]]
    ids: Callable[[Any], Sequence[int] | None]


def _int_list(items: Any) -> Sequence[int] | None:
    """A list of token ids (llama.cpp's `with_pieces` gives `{"id", "piece"}` items) as a compact array."""
    if not isinstance(items, list):
        return None
    ids: list[int] = []
    for item in items:
        i = item.get("id") if isinstance(item, dict) else item
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**31:
            return None
        ids.append(i)
    return array("i", ids)


def _llama_ids(doc: Any) -> Sequence[int] | None:
    return _int_list(doc.get("tokens")) if isinstance(doc, dict) and "count" not in doc else None


def _vllm_ids(doc: Any) -> Sequence[int] | None:
    return _int_list(doc.get("tokens")) if isinstance(doc, dict) and isinstance(doc.get("count"), int) else None


def _kobold_ids(doc: Any) -> Sequence[int] | None:
    if not isinstance(doc, dict):
        return None
    ids = _int_list(doc.get("ids"))
    value = doc.get("value")
    # bounded as an id is: a range's length is a C integer (a count past it was an OverflowError, a 500)
    if ids is None and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return range(value)  # an older KoboldCpp gives the count alone: a count is all the budget needs
    return ids


def _vllm_body(text: str, model: str | None) -> dict[str, Any]:
    return {"prompt": text, "add_special_tokens": False, **({"model": model} if model else {})}


# In the order they are tried. Special tokens are not added: the chat format counts them (K-2). vLLM answers
# 404 for a model name it does not serve (a chat app's own name for it): then it is asked without one, and a
# recent vLLM tokenizes with the model it serves.
ENDPOINTS = (
    Endpoint("llama.cpp", "/tokenize", lambda text, model: {"content": text, "add_special": False}, _llama_ids),
    Endpoint("vllm", "/tokenize", _vllm_body, _vllm_ids),
    Endpoint("vllm", "/tokenize", lambda text, model: _vllm_body(text, None), _vllm_ids),
    Endpoint("koboldcpp", "/api/extra/tokencount", lambda text, model: {"prompt": text, "special": False},
             _kobold_ids),
)


class CountFailed(Exception):
    """A tokenize request that failed this time (the request falls back; the endpoint stays). `reached`:
    the upstream answered (an HTTP error or another shape), as opposed to a connection that failed."""

    def __init__(self, message: str, reached: bool = True) -> None:
        super().__init__(message)
        self.reached = reached


Fit = Callable[[Ruleset, GameState, list[dict[str, str]], Budget, Mapping[str, str]],
               Awaitable[tuple[Prompt, Budget, str | None]]]


def root_of(base: str) -> str:
    """The server's root: the OpenAI base URL without its `/v1` (the tokenize endpoints are not under it)."""
    return base[: -len("/v1")] if base.endswith("/v1") else base


class UpstreamCounts:
    """Which tokenize endpoint the upstream has, and the counts it gave (bounded LRU per model and text)."""

    def __init__(self, upstream: Upstream, workers: Workers | None = None, timeout: float = COUNT_TIMEOUT) -> None:
        self.upstream = upstream
        self.workers = workers if workers is not None else Workers()
        self.root = root_of(upstream.base)
        self.timeout = timeout
        self.endpoint: Endpoint | None = None
        self.detected = False
        self.asked = 0  # tokenize requests sent (tests and logs)
        self._lock = asyncio.Lock()
        self._known: OrderedDict[tuple[str, str], Sequence[int]] = OrderedDict()
        self._tokens = 0
        self.table = next(_TABLES)

    async def _ask(self, ep: Endpoint, text: str, model: str | None, incoming: Mapping[str, str]) -> Sequence[int]:
        self.asked += 1
        try:
            # through Upstream.send, where every answer is read within its bound (SEC-3)
            got = await self.upstream.send(httpx.Request(
                "POST", f"{self.root}{ep.path}", content=dumps(ep.body(text, model)),
                headers=wire_headers(self.upstream.headers(incoming)),
                extensions={"timeout": httpx.Timeout(self.timeout).as_dict()}))
        except httpx.HTTPError as e:
            raise CountFailed(f"{ep.kind} {ep.path}: {type(e).__name__}", reached=False) from None
        if got.status_code >= 400:
            raise CountFailed(f"{ep.kind} {ep.path}: HTTP {got.status_code}")
        try:
            ids = ep.ids(loads(got.content))
        except (ValueError, RecursionError):
            ids = None
        if ids is None:
            raise CountFailed(f"{ep.kind} {ep.path}: not its answer's shape")
        return ids

    async def detect(self, model: str | None, incoming: Mapping[str, str]) -> Endpoint | None:
        """The first endpoint that tokenizes a probe, asked once per server; None when none does. A probe
        that cannot reach the upstream at all decides nothing: the next request asks again."""
        async with self._lock:
            if self.detected:
                return self.endpoint
            unreachable = False
            for ep in ENDPOINTS:
                try:
                    if await self._ask(ep, PROBE, model, incoming):
                        self.endpoint = ep
                        break
                except CountFailed as e:
                    unreachable = unreachable or not e.reached
            if self.endpoint is None and unreachable:
                log.warning("token counts: the upstream could not be reached to ask for a tokenize endpoint; "
                            "this request is counted locally, the next one asks again")
                return None
            self.detected = True
            if self.endpoint is not None:
                log.info("token counts: the upstream's %s tokenize endpoint (%s) counts, exact for the model it "
                         "has loaded", self.endpoint.kind, self.endpoint.path)
            else:
                log.warning("token counts: the upstream answers none of llama.cpp's /tokenize, vLLM's /tokenize, "
                            "KoboldCpp's /api/extra/tokencount; counting with the tokenizer registry's choice for "
                            "each model (x-tagengine-tokens says which, and whether it is exact)")
            return self.endpoint

    def lookup(self, model: str | None) -> Callable[[str], Sequence[int] | None]:
        key = model or ""

        def ids(text: str) -> Sequence[int] | None:
            hit = self._known.get((key, text))
            if hit is not None:
                self._known.move_to_end((key, text))
            return hit

        return ids

    def _put(self, model: str | None, text: str, ids: Sequence[int]) -> None:
        old = self._known.pop((model or "", text), None)  # two requests may fetch the same text at once
        self._tokens += len(ids) - (len(old) if old is not None else 0)
        self._known[(model or "", text)] = ids
        while len(self._known) > COUNTS_HELD or self._tokens > COUNTED_TOKENS_HELD:
            _, old = self._known.popitem(last=False)
            self._tokens -= len(old)

    async def fetch(self, ep: Endpoint, model: str | None, texts: Iterable[str], incoming: Mapping[str, str]) -> None:
        """Counts for the texts not known yet, `COUNT_REQUESTS` requests at a time."""
        known = self.lookup(model)
        missing = [t for t in dict.fromkeys(texts) if t and known(t) is None]
        gate = asyncio.Semaphore(COUNT_REQUESTS)

        async def one(text: str) -> None:
            async with gate:
                self._put(model, text, await self._ask(ep, text, model, incoming))

        failed = [r for r in await asyncio.gather(*(one(t) for t in missing), return_exceptions=True)
                  if isinstance(r, BaseException)]
        if failed:
            raise failed[0]

    async def fitted_prompt(self, rs: Ruleset, state: GameState, history: list[dict[str, str]], budget: Budget,
                  incoming: Mapping[str, str]) -> tuple[Prompt, Budget, str | None]:
        """`build_prompt` counted by the upstream; else by the registry's choice, with why (a short code for
        `x-tagengine-tokens`): `none` (no tokenize endpoint), `failed` (a count failed), `rounds`. The budget
        returned is the one it counted with, so the prompt page counts each message as the fit did."""
        ep = await self.detect(budget.model, incoming)
        if ep is None:
            local = await local_prompt(self.workers, rs, state, history, budget)
            return local, budget, "none" if self.detected else "failed"
        tok = UpstreamTokenizer(ep.kind, budget.model, self.table, self.lookup(budget.model),
                                choose(budget.model).build())
        counted = replace(budget, tokenizer=tok)
        try:
            await self.fetch(ep, budget.model, [*ROLES, reminder(rs, state), *(m["content"] for m in history)],
                             incoming)
            for _ in range(COUNT_ROUNDS):
                try:
                    return build_prompt(rs, state, history, counted, checked=True), counted, None
                except NotCounted as e:
                    await self.fetch(ep, budget.model, [e.text], incoming)
        except CountFailed as e:
            log.warning("token counts: the upstream's count failed (%s); this request is counted locally", e)
            return await local_prompt(self.workers, rs, state, history, budget), budget, "failed"
        log.warning("token counts: the fit still met new texts after %d rounds; this request is counted locally",
                    COUNT_ROUNDS)
        return await local_prompt(self.workers, rs, state, history, budget), budget, "rounds"


async def local_prompt(workers: Workers, rs: Ruleset, state: GameState, history: list[dict[str, str]],
                       budget: Budget) -> Prompt:
    """`build_prompt` with the registry's choice: on the event loop when it has little new text to count
    (LOOP_CHARS), else in a worker thread (SEC-2)."""
    try:
        return build_prompt(rs, state, history, budget, checked=True, quick=LOOP_CHARS)
    except SlowFit:
        return await workers.run(partial(slow_fit, rs, state, history, budget))


def slow_fit(rs: Ruleset, state: GameState, history: list[dict[str, str]], budget: Budget) -> Prompt:
    """`build_prompt` in a worker thread; a tokenizer it built (a counter that has counted nothing fits here)
    then gives back its Python rank table, here rather than on the event loop (PF-34)."""
    prompt = build_prompt(rs, state, history, budget, checked=True)
    release_rank_tables()
    return prompt


def fitter(upstream: Upstream, count_with_upstream: bool, workers: Workers) -> Fit:
    """How the server fits a prompt: asking the upstream for counts, or not (the registry's choice)."""
    if count_with_upstream:
        return UpstreamCounts(upstream, workers).fitted_prompt

    async def local_fit(rs: Ruleset, state: GameState, history: list[dict[str, str]], budget: Budget,
                        incoming: Mapping[str, str]) -> tuple[Prompt, Budget, str | None]:
        return await local_prompt(workers, rs, state, history, budget), budget, None

    return local_fit


def tokens_header(report: Report, fallback: str | None, whence: str) -> str:
    """`x-tagengine-tokens`: `<total>/<context> response=<n> context-from=<whence> tokenizer=<name>
    exact=<true|false>` (`whence`: `--context` or the context table's row, S-16), then
    `upstream-count=<why>` when `--count-with-upstream` could not count this request. A tokenizer file is
    named by its file name only (the server's folders are not the client's business)."""
    name = PurePath(report.encoding).name if "/" in report.encoding or "\\" in report.encoding else report.encoding
    out = (f"{report.total}/{report.context} response={report.response} context-from={whence} "
           f"tokenizer={name.replace(' ', '_')} "
           f"exact={'true' if report.exact else 'false'}")
    return f"{out} upstream-count={fallback}" if fallback else out
