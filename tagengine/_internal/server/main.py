"""`tagengine serve`: the app under uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import logging
from typing import TextIO

import uvicorn

from .access_log import AccessLog
from .app import Options, make_app


def serve(opts: Options, host: str, port: int, err: TextIO) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry upstream URLs
    app = make_app(opts)
    where = opts.upstream if opts.upstream == "demo" else "the upstream"  # a URL may carry a key: not echoed
    err.write(f"tagengine serve: http://{host}:{port}/v1 -> {where}; data in {opts.data}\n")
    # the access log prints paths only (no headers), so the Authorization header is never logged; it is
    # written after each response rather than before its first byte (access_log.py)
    uvicorn.run(AccessLog(app), host=host, port=port, log_level="info", access_log=False)
    return 0
