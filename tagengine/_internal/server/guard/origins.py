"""What the server believes of a request's `Host` and `Origin` (decisions TR-1..TR-3, docs/security.md).

A web page the player visits can send requests to the server, which listens on their machine: a form or a
`text/plain` fetch from another origin is sent without asking (no CORS preflight), and a page on a name the
attacker rebinds to 127.0.0.1 reads the answers as its own (DNS rebinding). So, before anything else:

- `Host` must be a name the server answers to: `localhost`, any IP address (a page whose address is an IP
  is on that IP: no name was rebound), the name given to `--host`, this machine's own name when it listens
  on every address, and each `--allow-host` (`*`: any). Else 400.
- A request that may change something (any method but GET, HEAD and OPTIONS) from a browser page must come
  from this server's own origin or an `--allow-origin`: its `Origin`, or when it sends none, its
  `Sec-Fetch-Site` (`same-origin` or `none`). `Origin: null` (a sandboxed frame, a file) is never one. A
  request with neither header is not from a browser (curl, an SDK, SillyTavern's server) and goes on. Else 403.
- The pages (/ui/) may be framed only by an `--allow-origin` (CSP `frame-ancestors`; with none, also
  `X-Frame-Options: DENY`), and say `nosniff`.

CORS (the answers an allowed origin's page may read) is Starlette's `CORSMiddleware`, after this one.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import error
from ..limits import HOSTS_HELD
from .auth import header

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
NOSNIFF = (b"x-content-type-options", b"nosniff")
EXPOSED = ("x-tagengine-campaign", "x-tagengine-tokens", "x-tagengine-history", "x-tagengine-settle",
           "x-tagengine-warning", "x-tagengine-quiet")  # what an allowed origin's page may read of an answer
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_names(host: str, allowed: Iterable[str]) -> frozenset[str] | None:
    """The names a request's Host may give besides an IP address (lower case, no port); None: any."""
    extra = [name.strip().lower().rstrip(".") for name in allowed]
    if "*" in extra:
        return None
    names = {"localhost", *extra}
    bound = host.strip().lower().rstrip(".")
    if bound in WILDCARD_BINDS:  # every address: the machine is reached by its own name too
        own = socket.gethostname().lower()
        names |= {own, own.split(".")[0], own.split(".")[0] + ".local"}
    elif not is_ip(bound.strip("[]")):
        names.add(bound)
    names.discard("")
    return frozenset(names)


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int | None]:
    """`name:port`, `[v6]:port`, `name` -> (name without brackets, in lower case, no trailing dot; the port
    or None). A port that is not a number gives the name ""."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            return "", None
    else:
        name, colon, port_text = value.rpartition(":")
        if not colon or ":" in name:  # no port, or an IPv6 address without brackets (not a Host, but a name)
            name, port = value, None
        else:
            port = port_text
    if port is not None and not (port.isascii() and port.isdigit()):
        return "", None
    return name.rstrip("."), None if port is None else int(port)


def origin_of(value: str) -> str | None:
    """An origin as `scheme://host[:port]` in lower case, a default port left out; None when `value` is not
    one (`null`, a path, no host)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query \
            or parts.fragment or parts.username is not None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = port if port is not None and port != DEFAULT_PORTS[parts.scheme] else None
    return f"{parts.scheme}://{host.rstrip('.')}" + (f":{shown}" if shown is not None else "")


def allowed_origins(values: Iterable[str]) -> tuple[str, ...]:
    """`--allow-origin` values as origins; ValueError naming one that is not an origin."""
    out = []
    for v in values:
        o = origin_of(v)
        if o is None:
            raise ValueError(f"--allow-origin {v!r}: an origin is scheme://host[:port], as the browser's address bar "
                             "shows the page (e.g. http://127.0.0.1:8000)")
        out.append(o)
    return tuple(dict.fromkeys(out))


def frame_headers(origins: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    """What a page says of who may frame it: only the allowed origins (none: nobody)."""
    if not origins:
        return [NOSNIFF, (b"content-security-policy", b"frame-ancestors 'none'"), (b"x-frame-options", b"DENY")]
    return [NOSNIFF, (b"content-security-policy", ("frame-ancestors " + " ".join(origins)).encode())]


class HostAndOrigin:
    """The checks above, as plain ASGI (a streamed answer goes straight through; only a page's start message
    is touched, to add its headers)."""

    def __init__(self, app: ASGIApp, names: frozenset[str] | None, origins: tuple[str, ...]) -> None:
        self.app = app
        self.names = names
        self.origins = frozenset(origins)
        self.page_headers = frame_headers(origins)
        self.hosts: dict[str, bool] = {}  # Host values seen -> answered to: a client sends the same one each time

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = (header(scope, b"host") or b"").decode("latin-1")
        refused = self.host_refused(host) if scope["path"] != "/healthz" else None
        if refused is None and scope["method"] not in SAFE_METHODS:
            refused = self.origin_refused(scope, host)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if scope["path"].startswith("/ui"):
            await self.app(scope, receive, self.with_page_headers(send))
            return
        await self.app(scope, receive, send)

    def host_refused(self, host: str) -> ASGIApp | None:
        if not host or self.names is None:  # no Host: HTTP/1.0, never a browser
            return None
        known = self.hosts.get(host)
        if known is None:
            name, _ = split_host(host)
            known = name in self.names or is_ip(name)
            if len(self.hosts) >= HOSTS_HELD:  # bounded: a client that sends many names empties it
                self.hosts.clear()
            self.hosts[host] = known
        if known:
            return None
        shown = ascii(host[:100])
        return error(400, f"Host {shown} is not a name this server answers to; if it is yours, start the server with "
                     "--allow-host NAME", "host_not_allowed", headers={"x-content-type-options": "nosniff"})

    def origin_refused(self, scope: Scope, host: str) -> ASGIApp | None:
        raw = header(scope, b"origin")
        if raw is None:
            site = header(scope, b"sec-fetch-site")
            if site is None or site in (b"same-origin", b"none"):
                return None
            said = f"a page of another site (Sec-Fetch-Site: {site.decode('latin-1')[:20]!a})"
        else:
            origin = origin_of(raw.decode("latin-1"))
            if origin is not None and (origin in self.origins or self.same_origin(origin, host)):
                return None
            said = f"the page {raw.decode('latin-1')[:100]!a}"
        return error(403, f"{said} may not change anything on this server; if that page is yours, start the server "
                     "with --allow-origin ORIGIN", "origin_not_allowed", headers={"x-content-type-options": "nosniff"})

    @staticmethod
    def same_origin(origin: str, host: str) -> bool:
        """Whether `origin` names the host and port the request was sent to (the scheme aside: a proxy in
        front may have taken TLS off)."""
        parts = urlsplit(origin)
        name, port = split_host(host)
        wanted = parts.port if parts.port is not None else DEFAULT_PORTS[parts.scheme]
        given = port if port is not None else DEFAULT_PORTS[parts.scheme]
        return bool(name) and (parts.hostname or "") == name and wanted == given

    def with_page_headers(self, send: Send) -> Send:
        extra = self.page_headers

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        return sending
