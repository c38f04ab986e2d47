"""Checks rolled mid-reply: `tagengine serve --settle-checks` (docs/checks-in-serve.md,
docs/decisions.md CK-17..CK-21). The flag and the `x-tagengine-settle` header keep their names; inside the
server "settle" is only the engine's roll of one check (`commands/check.settle`), so this is "mid-reply".

When a reply closes a well-formed `[check:]` tag, the server stops that generation there, applies the
tag, and asks the upstream to continue the assistant message with the receipt in place: the request
again, with the reply so far (receipts and all) as a last assistant message, the prefill. The narration
after the tag is then written knowing the dice. At most COMMAND_LIMIT checks per reply (DEC-6): a check
past the limit is refused anyway, so there is nothing to settle.

An upstream that cannot continue a message answers 4xx to a trailing assistant message, or its answer
starts as the reply started (it answered anew instead of continuing). Before a model's first streamed
request the server asks it once with a tiny prefill (`probe`, CK-21), so the stream's header already
says how its checks are settled; a non-streamed request is not probed (its first continuation finds out
and still falls back in full). A model that passed the probe and fails a continuation later is found out
there (CK-18). Either way it is remembered: its later replies are settled at the end (receipts as the
stream passes, the narration as the model wrote it), and the `x-tagengine-settle` header says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import httpx

from ...commands import apply_reply
from ...commands.reasons import COMMAND_LIMIT
from ...ruleset import Ruleset
from ...state import GameState
from ...tags import scan
from ..errors import reply_too_large, upstream_failure, upstream_status
from ..limits import LOOP_CHARS, MAX_REPLY, MAX_SETTLE_HEADER, MODELS_HELD
from ..runtime.worker_threads import Workers
from ..upstream.client import Upstream
from ..wire.chat_completions import (
    chunk_content,
    first_choice,
    first_content,
    set_delta_content,
    set_unfinished,
    stop_chunk,
)
from ..wire.json_codec import dumps, loads_or_none
from ..wire.sse import DONE, is_done
from .receipts import ReceiptStream

log = logging.getLogger("tagengine.serve")

CHECKS_HEADER = "x-tagengine-settle"  # an interface: its name stays
MID_REPLY = "mid-reply"
AT_END = "at-end; the upstream cannot continue an assistant message"
SAME_START = 24  # characters: a continuation that starts as the reply did is a new answer, not a continuation
SHORTEST_REPEAT = 8  # a shorter whole continuation is never taken for a repeat
# the probe (CK-21): a prefill any chat model continues in a few tokens; one that answers anew repeats it
PROBE_USER = "Count from one to six in words, separated by spaces."
PROBE_PREFILL = "one two three"
PROBE_TOKENS = 8
UNASKED = "at-end; the upstream could not be asked"


class CheckStop:
    """The raw reply fed chunk by chunk; `feed` says where in the chunk a well-formed `[check:]` tag closes
    (the text after it is dropped: that generation stops there). Counts the reply's tags (DEC-6). Only the
    text after the reply's last `]` is scanned again with a chunk (a tag closing in it holds no `]` before
    its end), and the reply is kept in pieces: the work stays linear in the reply, as ReceiptStream's."""

    def __init__(self) -> None:
        self._through_bracket: list[str] = []  # the reply up to its last `]`
        self._tail: list[str] = []  # the reply after its last `]`
        self.tags = 0

    @property
    def raw(self) -> str:
        """The reply so far, as the model wrote it, up to the last check it stopped at."""
        return "".join(self._through_bracket) + "".join(self._tail)

    def feed(self, chunk: str) -> int | None:
        if "]" not in chunk:
            self._tail.append(chunk)
            return None
        tail = "".join(self._tail)
        text = tail + chunk
        for f in scan(text):
            if f.end <= len(tail):
                continue
            if f.tag is not None:
                self.tags += 1
                if f.name == "check" and self.tags <= COMMAND_LIMIT:
                    self._through_bracket.append(text[:f.end])  # a well-formed tag ends with its `]`
                    self._tail = []
                    return f.end - len(tail)
        last = text.rfind("]") + 1
        self._through_bracket.append(text[:last])
        self._tail = [text[last:]]
        return None


def restarts(cont: str, start: str, prefill: str, final: bool) -> bool | None:
    """Whether a continuation answers anew: it starts as the reply started (as the model wrote it, or as
    the prefill has it). None: too little text yet to say."""
    got = cont.lstrip()
    refs = [r.lstrip() for r in (start, prefill) if r.strip()]
    need = min([SAME_START, *(len(r) for r in refs)])
    if len(got) < need:
        if not final:
            return None
        return len(got) >= SHORTEST_REPEAT and any(r.startswith(got) for r in refs)
    return any(got[:need] == r[:need] for r in refs)


class MidReplyChecks:
    """Per server: rolls each check of a reply where the model wrote it and has `upstream` continue after
    the dice; remembers the models that can and cannot continue an assistant message."""

    def __init__(self, upstream: Upstream, workers: Workers | None = None) -> None:
        self.upstream = upstream
        self.workers = workers if workers is not None else Workers()
        self.cannot: dict[str, str] = {}  # model name -> how it was found out
        self.can: dict[str, None] = {}  # model names that passed the probe (insertion-ordered, bounded)
        self._probing: dict[str, asyncio.Task[str | None]] = {}  # one probe per model at a time

    @staticmethod
    def model(body: Mapping[str, Any]) -> str:
        m = body.get("model")
        return m if isinstance(m, str) else ""

    def applies(self, body: Mapping[str, Any]) -> bool:
        """Roll this request's checks mid-reply: one choice, and a model not known to be unable to continue."""
        return body.get("n") in (None, 1) and self.model(body) not in self.cannot

    def header(self, body: Mapping[str, Any], unasked: str | None = None) -> str:
        if unasked is not None:
            return header_value(f"{UNASKED} ({unasked})")
        why = self.cannot.get(self.model(body))
        return MID_REPLY if why is None else header_value(f"{AT_END} ({why})")

    def _found_out(self, model: str, why: str) -> None:
        self.can.pop(model, None)  # passed the probe, failed a real continuation: the probe was wrong
        log.warning("model %r cannot continue an assistant message (%s): its checks are settled at the end "
                    "from now on", model[:80], why)
        _bounded_put(self.cannot, model, why)

    async def probe(self, body: Mapping[str, Any], incoming: Mapping[str, str]) -> str | None:
        """Before a model's first streamed request: ask the upstream once whether it continues a prefill
        (CK-21), and remember the answer. Concurrent first requests share one probe. None when the model's
        ability is known now (`header` says it); else why the upstream could not be asked (a 5xx, the
        network): that decides nothing, this request is settled at the end, and the next one probes again."""
        model = self.model(body)
        if model in self.cannot or model in self.can:
            return None
        task = self._probing.get(model)
        if task is None:
            task = asyncio.ensure_future(self._probe(model, incoming))
            self._probing[model] = task
            task.add_done_callback(lambda _: self._probing.pop(model, None))
        return await asyncio.shield(task)

    async def _probe(self, model: str, incoming: Mapping[str, str]) -> str | None:
        out = {"model": model, "messages": [{"role": "user", "content": PROBE_USER},
                                            {"role": "assistant", "content": PROBE_PREFILL}],
               "max_tokens": PROBE_TOKENS, "temperature": 0, "stream": False}
        cont, why, cannot = await self._ask(self.upstream.request("POST", "/chat/completions", incoming, dumps(out)))
        if cannot:
            self._found_out(model, why)
        elif cont is None:
            return why
        elif restarts(cont, PROBE_PREFILL, PROBE_PREFILL, True):
            self._found_out(model, "its continuation repeated the reply's start")
        else:
            _bounded_put(self.can, model, None)
        return None

    def _request(self, body: Mapping[str, Any], prefill: str, incoming: Mapping[str, str],
                 stream: bool) -> httpx.Request:
        out = dict(body)
        out["messages"] = [*body["messages"], {"role": "assistant", "content": prefill}]
        out["stream"] = stream
        return self.upstream.request("POST", "/chat/completions", incoming, dumps(out))

    async def continue_whole(self, text: str, body: Mapping[str, Any], incoming: Mapping[str, str], rs: Ruleset,
                             state: GameState, headers: dict[str, str]) -> str:
        """The raw reply with its checks rolled where they stand: stopped after each check, continued by the
        upstream. When a continuation fails, the first answer as it came (settled at the end), said in
        `headers`."""
        stop, rest, start, size = CheckStop(), text, "", len(text)
        headers[CHECKS_HEADER] = MID_REPLY
        for _ in range(COMMAND_LIMIT + 1):  # each turn rolls one more check of the reply, at most the limit
            if size > MAX_REPLY:
                raise reply_too_large()
            if stop.feed(rest) is None:
                return stop.raw
            start = start or stop.raw
            raw = stop.raw
            # the reply so far applied: in a worker thread once it is long (SEC-2)
            prefill = (await self.workers.run(apply_reply, rs, state, raw) if len(raw) > LOOP_CHARS
                       else apply_reply(rs, state, raw)).text
            cont, why, cannot = await self._continue_whole(body, prefill, incoming)
            if cont is not None and restarts(cont, start, prefill, True):
                cont, why, cannot = None, "its continuation repeated the reply's start", True
            if cont is None:
                if cannot:
                    self._found_out(self.model(body), why)
                headers[CHECKS_HEADER] = header_value(f"{AT_END} ({why})" if cannot else f"at-end; {why}")
                return text
            rest = cont
            size += len(cont)
        return stop.raw

    async def _continue_whole(self, body: Mapping[str, Any], prefill: str,
                              incoming: Mapping[str, str]) -> tuple[str | None, str, bool]:
        """(the continuation's text, "", False); or (None, why, True) when the upstream cannot continue a
        message; or (None, why, False) when this one request failed (a 5xx, the network)."""
        cont, why, cannot = await self._ask(self._request(body, prefill, incoming, False))
        if cont is None and not cannot:
            why = f"the continuation failed: {why}"
        return cont, why, cannot

    async def _ask(self, request: httpx.Request) -> tuple[str | None, str, bool]:
        """A non-streamed request with a trailing assistant message (a continuation or the probe), judged
        (CK-18): (its text, "", False); (None, why, True) when the upstream cannot continue a message;
        (None, why, False) when this one request failed (a 5xx, the network)."""
        try:
            got = await self.upstream.send(request)
        except httpx.HTTPError as e:
            return None, upstream_failure(e).message, False
        if 400 <= got.status_code < 500:
            return None, f"it answered {got.status_code} to a trailing assistant message", True
        if got.status_code >= 400:
            return None, upstream_status(got.status_code, got.content).message, False
        cont = first_content(loads_or_none(got.text))
        if cont is None:
            return None, "its continuation had no message content", True
        return cont, "", False

    async def continued_events(self, first: httpx.Response, body: Mapping[str, Any], incoming: Mapping[str, str],
                               filt: ReceiptStream) -> AsyncGenerator[str, None]:
        """The `data` of each event the client's stream is made from (relay.relay_stream reads it in place
        of the upstream's own): the first generation up to its first check, then each continuation."""
        stop, response, start = CheckStop(), first, ""
        prefill: str | None = None  # set while a continuation is not yet known to continue
        try:
            while True:  # one turn per generation: at most 1 + COMMAND_LIMIT (CheckStop stops at the limit)
                generation = _Generation(stop, start, prefill)
                async for data in generation.events(self.upstream.events(response)):
                    yield data
                if generation.restarted:
                    self._found_out(self.model(body), "its continuation repeated the reply's start")
                    for data in _end_here():
                        yield data
                    return
                if not generation.stopped:
                    return
                await response.aclose()  # that generation stops here
                start = start or stop.raw
                prefill = filt.sent  # the reply so far with the check's receipt: relay fed it before asking again
                got = await self._next_generation(body, prefill, incoming)
                if isinstance(got, list):  # it failed: the stream ends with these events
                    for data in got:
                        yield data
                    return
                response = got
        finally:
            await response.aclose()

    async def _next_generation(self, body: Mapping[str, Any], prefill: str,
                               incoming: Mapping[str, str]) -> httpx.Response | list[str]:
        """The continuation after `prefill`, streamed; or the events that end the client's stream when it
        cannot be had."""
        try:
            response = await self.upstream.send(self._request(body, prefill, incoming, True), stream=True)
        except httpx.HTTPError as e:
            return [dumps(upstream_failure(e).doc()).decode()]
        if response.status_code < 400:
            return response
        content = await response.aread()
        await response.aclose()
        if response.status_code < 500:
            self._found_out(self.model(body), f"it answered {response.status_code} to a trailing assistant message")
            return _end_here()
        return [dumps(upstream_status(response.status_code, content).doc()).decode()]


class _Generation:
    """One generation's events as the client's stream takes them: passed on up to a check that closes in them
    (then `stopped`); a continuation's held back until it is known not to answer anew (else `restarted`)."""

    def __init__(self, stop: CheckStop, start: str, prefill: str | None) -> None:
        self.stop, self.start, self.prefill = stop, start, prefill
        self.stopped = self.restarted = False

    async def events(self, upstream: AsyncIterator[str]) -> AsyncIterator[str]:
        held: list[str] = []
        seen = ""
        async for data in upstream:
            if self.prefill is not None:
                held.append(data)
                verdict, seen = self._judge(data, seen)
                if verdict is None:
                    continue
                if verdict:
                    self.restarted = True
                    return
                self.prefill, pending = None, held
            else:
                pending = [data]
            for item in pending:
                out, at = _stop_event(item, self.stop)
                yield out
                if at is not None:
                    self.stopped = True
                    return
        if self.prefill is not None:  # the continuation ended before saying anything: pass it on
            for item in held:
                yield item

    def _judge(self, data: str, seen: str) -> tuple[bool | None, str]:
        """Whether the continuation answers anew, by what it said so far (None: too little yet)."""
        assert self.prefill is not None
        ended = is_done(data)
        doc = None if ended else loads_or_none(data)
        content, finished = chunk_content(doc)
        seen += content or ""
        final = finished or ended or not isinstance(doc, dict) or "error" in doc
        return restarts(seen, self.start, self.prefill, final), seen


def _stop_event(data: str, stop: CheckStop) -> tuple[str, int | None]:
    """The event, ended after a check that closes in it (then the index), else as it came."""
    if is_done(data):
        return data, None
    doc = loads_or_none(data)
    content, _ = chunk_content(doc)
    if content is None:
        return data, None
    if len(content) > MAX_REPLY:  # not scanned: the relay ends the stream with its error event (SEC-3)
        raise reply_too_large()
    k = stop.feed(content)
    if k is None:
        return data, None
    choice = first_choice(doc)
    assert choice is not None  # chunk_content found its content
    set_delta_content(choice, content[:k])
    set_unfinished(choice)
    return dumps(doc).decode(), k


def header_value(text: str) -> str:
    """`text` as a header value: printable ASCII, at most MAX_SETTLE_HEADER characters. The why of a failure may quote
    the upstream's error message, which may hold any character: a line break no header can carry (uvicorn
    refused it: a dropped connection), or one beyond latin-1 (a UnicodeEncodeError: a 500)."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:MAX_SETTLE_HEADER])


def _bounded_put(names: dict[str, Any], model: str, value: Any) -> None:
    """Put `model` in an insertion-ordered table of at most MODELS_HELD names (the oldest goes)."""
    if len(names) >= MODELS_HELD:
        names.pop(next(iter(names)))
    names[model] = value


def _end_here() -> list[str]:
    """The reply ends at the receipt: nothing written without the dice reaches the client (CK-19)."""
    return [dumps(stop_chunk()).decode(), DONE]
