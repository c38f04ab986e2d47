"""The table of upstream kinds (as `upstream_count.ENDPOINTS` is the table of tokenize endpoints): which
`--upstream` values name each kind, and how the server reaches it. The first row that accepts the value wins.

Every kind is reached as an OpenAI-compatible base URL and the httpx transport that carries its requests
(None: httpx's client with its own transports). The server speaks only the OpenAI chat completions API; a
kind that speaks another API gives a transport that answers in OpenAI's, as `demo` does with an app in
this process. So a new kind is one module beside this one, defining its `KIND`, and one row here (SV-5).
"""

from __future__ import annotations

from ..options import Options
from . import demo, over_http
from .client import Upstream, UpstreamKind

KINDS: tuple[UpstreamKind, ...] = (demo.KIND, over_http.KIND)  # the last accepts any value


def upstream_kind(url: str) -> UpstreamKind:
    """The first kind that accepts `url`."""
    return next(k for k in KINDS if k.accepts(url))


def reach_upstream(opts: Options) -> Upstream:
    """The upstream `opts` names, reached as its kind says."""
    base, transport = upstream_kind(opts.upstream).reach(opts.upstream, opts)
    return Upstream(base, transport, forward_client_key=opts.api_key is None, timeout=opts.timeout)
