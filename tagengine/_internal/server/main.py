"""`tagengine serve`: the app under uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import logging
from typing import TextIO

import uvicorn

from .app import make_app
from .limits import KEEP_ALIVE, YOUNG_OBJECTS
from .options import Options
from .runtime.access_log import AccessLog
from .runtime.connections import guard_for_this_process
from .runtime.heap import young_collections


def serve(opts: Options, host: str, port: int, err: TextIO) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry upstream URLs
    app = make_app(opts)
    young_collections(YOUNG_OBJECTS)  # this process serves: its collector is tuned to requests (heap.py, PF-54)
    where = opts.upstream if opts.upstream == "demo" else "the upstream"  # a URL may carry a key: not echoed
    err.write(f"tagengine serve: http://{host}:{port}/v1 -> {where}; data in {opts.data}\n")
    # the access log prints paths only (no headers), so the Authorization header is never logged; it is
    # written after each response rather than before its first byte (access_log.py)
    # keep-alive past the 5 s that httpx (so the openai SDK) and uvicorn both default to: at equal timeouts a
    # client reuses a connection just as the server closes it (a ReadError now and then); a chat app's turns
    # come seconds apart, and each then opens no new connection (S-29)
    # slow clients timed, connections capped below the file-descriptor limit (connections.py, SEC-4), a head
    # and its body in one write (head_join.py, SB-16); X-Forwarded-Proto and -For are believed from
    # --trust-proxy's addresses only (uvicorn believes this machine's by default, and any process here could
    # then choose its client address, TR-3)
    protocol = guard_for_this_process().protocol()
    uvicorn.run(AccessLog(app), host=host, port=port, log_level="info", access_log=False,
                timeout_keep_alive=KEEP_ALIVE, http=protocol,
                proxy_headers=opts.trust_proxy is not None, forwarded_allow_ips=opts.trust_proxy)
    return 0
