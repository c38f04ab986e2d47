"""An OpenAI-compatible server over HTTP (`--upstream http://host:port/v1`): the server's own transport
(`transport.HTTP11Transport`, SB-13), or httpx's with `--upstream-transport httpx`. httpx's is used too where
a proxy from the environment applies to the URL, since only its transports read the proxy settings (S-28)."""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httpx

from ..options import Options
from .client import UpstreamKind
from .transport import HTTP11Transport


def _any_url(url: str) -> bool:
    return True  # any other value is a base URL (httpx refuses what is not one, on the first request)


def _over_http(url: str, opts: Options) -> tuple[str, httpx.AsyncBaseTransport | None]:
    if opts.transport is not None:  # a test's upstream in this process
        return url, opts.transport
    if opts.upstream_transport == "httpx" or proxied(url):  # httpx's client and its own transports
        return url, None
    return url, HTTP11Transport()


def proxied(url: str) -> bool:
    """Whether a proxy from the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY) applies to `url`."""
    parts = urlsplit(url)
    proxies = getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not proxy_bypass(parts.hostname or "")


KIND = UpstreamKind("openai", _any_url, _over_http)
