"""What issue 26's checks cost a request, in this process (decision TR-7).

1. The middleware in front of every request (`server/guard/origins.py` `HostAndOrigin`, then `auth.py`
   `ApiKeyAuth` with a key): the CPU a request spends in them, against the same request sent to the bare app,
   interleaved round by round. The app answers at once, so the figure is the middleware's own.
2. Reading a SillyTavern-sized chat (`chat_request.read_marked`: 200 messages, a 6 KB character card, the
   Author's Note marker): with the near-miss marker scan (TR-8) as it runs, against the same reader with the
   scan's pattern swapped for one that fails at once (what the reader cost without it).

Medians and ranges over rounds; the machine may be shared, so both sides run in every round, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tagengine._internal.server.guard.auth import ApiKeyAuth
from tagengine._internal.server.guard.origins import HostAndOrigin, host_names
from tagengine._internal.server.guard.sessions import Sessions
from tagengine._internal.server.turn import request as chat_request

HEADERS = [(b"host", b"127.0.0.1:5005"), (b"accept", b"*/*"), (b"accept-encoding", b"gzip, deflate, br"),
           (b"authorization", b"Bearer sk-bench"), (b"content-type", b"application/json"),
           (b"user-agent", b"node-fetch"), (b"content-length", b"81234")]  # as SillyTavern's server sends


async def bare(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def requests(app: Any, n: int, path: str) -> float:
    """CPU seconds for `n` POSTs through `app`."""
    scope = {"type": "http", "method": "POST", "path": path, "headers": HEADERS, "client": ("127.0.0.1", 1)}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        return None

    start = time.process_time()
    for _ in range(n):
        await app(scope, receive, send)
    return time.process_time() - start


def chat() -> list[dict[str, str]]:
    card = ("Mira is a lantern-bearer of the Gravewatch, tall and quiet, who keeps the old rites. " * 70)[:6000]
    msgs = [{"role": "system", "content": "Write GM's next reply in a fictional chat between GM and User."},
            {"role": "system", "content": card}, {"role": "system", "content": "[Start a new Chat]"}]
    for i in range(98):
        msgs.append({"role": "user", "content": f"We move on to the next room, carefully ({i})."})
        msgs.append({"role": "assistant", "content": "The door gives. " * 20 + '[clock: name="Alarm raised" tick="1" '
                     'result="ok" now="1/6"]'})
    msgs.insert(len(msgs) - 4, {"role": "system", "content": '[tagengine: campaign="heist"]'})
    return msgs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--requests", type=int, default=20000, help="requests per side per round (default 20000)")
    p.add_argument("--reads", type=int, default=300, help="chats read per side per round (default 300)")
    args = p.parse_args()

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        guarded = HostAndOrigin(ApiKeyAuth(bare, "sk-bench", Sessions(Path(tmp), "sk-bench")),
                                host_names("127.0.0.1", []), ())
        sides: dict[str, list[float]] = {"bare app": [], "Host/Origin + key": [], "page (frame headers)": []}
        for _ in range(args.rounds):
            for name, app, path in (("bare app", bare, "/v1/chat/completions"),
                                    ("Host/Origin + key", guarded, "/v1/chat/completions"),
                                    ("page (frame headers)", HostAndOrigin(bare, host_names("127.0.0.1", []), ()),
                                     "/ui/c/heist")):
                sides[name].append(asyncio.run(requests(app, args.requests, path)) / args.requests * 1e6)
    print(f"1. middleware, CPU per request (us), {args.rounds} rounds of {args.requests}:")
    for name, xs in sides.items():
        print(f"   {name:22s} median {statistics.median(xs):6.2f}  range {min(xs):6.2f}-{max(xs):6.2f}")
    added = [g - b for g, b in zip(sides["Host/Origin + key"], sides["bare app"], strict=True)]
    print(f"   added by the checks: median {statistics.median(added):.2f} us")

    messages = chat()
    size = sum(len(m["content"]) for m in messages)
    real = chat_request.NEAR_MARKER
    never = re.compile(r"\A(?!)")  # fails at once: the reader as it was without the scan
    times: dict[str, list[float]] = {"with the near-miss scan": [], "without it": []}
    for _ in range(args.rounds):
        for name, pattern in (("with the near-miss scan", real), ("without it", never)):
            chat_request.NEAR_MARKER = pattern
            start = time.process_time()
            for _ in range(args.reads):
                chat_request.read_marked(messages)
            times[name].append((time.process_time() - start) / args.reads * 1e6)
    chat_request.NEAR_MARKER = real
    print(f"2. read_marked on {len(messages)} messages ({size // 1024} KiB), CPU per chat (us):")
    for name, xs in times.items():
        print(f"   {name:24s} median {statistics.median(xs):7.1f}  range {min(xs):7.1f}-{max(xs):7.1f}")


if __name__ == "__main__":
    main()
