"""A response's head and the first bytes of its body in one write (SB-16).

uvicorn writes a response's head as soon as the app starts the response, then each piece of the body as it
is sent: a whole answer left in two writes. On loopback each write wakes the client, and on a machine with
few cores the woken client then ran in the server's place until it had read the head: the body waited for
the client's turn (about 0.45 ms of a non-streamed turn on the benchmark machine). Here a head is held until
the next write on its connection, and the two go out in one system call; a head with nothing after it in
the same turn of the event loop (a stream whose first piece has not come) goes out at the end of that turn.
Every other write goes out at once, in order.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeadJoiner:
    """A connection's transport as uvicorn's protocol sees it: a response head waits for the next write."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.writelines((head, data))  # one system call (uvloop: writev), no copy
        elif data.startswith(b"HTTP/1.1 ") and data.endswith(b"\r\n\r\n"):  # uvicorn writes a head whole
            self._head = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def writelines(self, parts: tuple[bytes, ...] | list[bytes]) -> None:  # after a held head, never before it
        self.write(b"".join(parts))

    def flush(self) -> None:
        """The held head, if any, goes out now."""
        head, self._head = self._head, None
        if head is not None and not self._transport.is_closing():
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's own
        return getattr(self._transport, name)


class HeadJoiningProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools) over a HeadJoiner; given to uvicorn as its `http` class."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(cast(asyncio.Transport, HeadJoiner(transport, asyncio.get_running_loop())))
