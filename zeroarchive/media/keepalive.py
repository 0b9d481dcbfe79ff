"""HTTP/1.1 GETs of one host's media items, one after the other on one keep-alive
connection: what a media batch's items cost once their request has passed the crawl's
scheduler and every downloader middleware (middlewares/media.py).

Scrapy's own download handler costs about 2 ms of CPU an item (Twisted's agent, an endpoint
and a parser of its own per request, a ``Request`` and a ``Response`` each): most of what
images added to a stored page (bench/README.md, issue 42). This client sends the batch
request's own headers to the address the crawl's resolver gave for its host (the one the
private-target check saw), reads each answer's status line, headers and body
(``Content-Length``, chunked, or up to the connection's close), and hands back the bytes.
Anything it does not take as plain (a body past the size limit, an answer it cannot read,
a connection that fails or times out) raises ``NotPlain``: the caller then leaves that item
(and the rest) to Scrapy's handler or to a request of its own, as before.

The connection is read by a buffered protocol (``_Connection``): the socket's bytes go
straight into one buffer, sized for the answer's body once its length is known, and the
request's task wakes only when what it waits for is there (a head, a body's last byte).
asyncio's streams cost about 0.3 ms of CPU an item of 43 KB here (a 256 KiB ``bytes`` made
and shrunk by every receive, the bytes copied into the stream's buffer and out again, a
wake-up of the task per receive): as much as the rest of a page's images together
(bench/README.md, issue 42).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass

#: The longest status line and headers taken.
HEAD_LIMIT = 64 * 1024


class NotPlain(Exception):
    """An answer this client does not take: the item goes the whole way."""


@dataclass(frozen=True)
class Answer:
    status: int
    #: Header names lower-cased, to their last value.
    headers: dict[bytes, bytes]
    body: bytes


def _tls_context() -> ssl.SSLContext:
    # As Scrapy's default context factory: certificates are not verified (an archive keeps
    # what a site serves), the name is sent (SNI).
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


_TLS: ssl.SSLContext | None = None


def parse_head(head: bytes) -> tuple[bytes, int, dict[bytes, bytes]]:
    """The version, status and headers of an answer's head (up to its blank line).

    >>> parse_head(b"HTTP/1.1 200 OK\\r\\nContent-Type: image/png\\r\\nX: a\\r\\nx: b\\r\\n\\r\\n")
    (b'HTTP/1.1', 200, {b'content-type': b'image/png', b'x': b'b'})
    >>> try:
    ...     parse_head(b"garbage\\r\\n\\r\\n")
    ... except NotPlain as exc:
    ...     print("not plain:", exc)
    not plain: b'garbage'
    """
    lines = head.rstrip(b"\r\n").split(b"\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise NotPlain(lines[0][:100])
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or name[:1] in (b" ", b"\t"):
            raise NotPlain(line[:100])  # folded or broken headers: Twisted's parser judges
        headers[name.strip().lower()] = value.strip()
    return parts[0], int(parts[1]), headers


#: The least free room offered to a receive, and the smallest buffer.
_ROOM = 64 * 1024


class _Connection(asyncio.BufferedProtocol):
    """One connection's bytes in one buffer (``_buffer[_start:_end]`` not read yet); the
    reads wait for a head, a line or a number of bytes. The buffer is never resized in
    place (the transport may hold a view of it): a larger one replaces it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._buffer = bytearray(_ROOM)
        self._start = 0
        self._end = 0
        #: The absolute end of what the waiting read needs (0: any new bytes).
        self._until = 0
        self._waiter: asyncio.Future[None] | None = None
        self.eof = False
        self._error: BaseException | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if len(self._buffer) - self._end < _ROOM:
            unread = self._end - self._start
            wanted = max(self._until - self._start, unread + _ROOM, _ROOM)
            buffer = bytearray(wanted)
            buffer[:unread] = memoryview(self._buffer)[self._start : self._end]
            self._buffer, self._until = buffer, max(self._until - self._start, 0)
            self._start, self._end = 0, unread
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        if self._end >= self._until:
            self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def unread(self) -> int:
        return self._end - self._start

    async def _wait(self, until: int) -> None:
        if self._error is not None:
            raise self._error
        self._until = until
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
            self._until = 0

    def _take(self, n: int) -> bytes:
        start = self._start
        self._start = start + n
        if self._start == self._end:
            self._start = self._end = 0
        return bytes(memoryview(self._buffer)[start : start + n])

    async def readuntil(self, separator: bytes, limit: int = HEAD_LIMIT) -> bytes:
        """The bytes up to and with ``separator``."""
        searched = self._start
        while True:
            found = self._buffer.find(separator, searched, self._end)
            if found >= 0:
                return self._take(found + len(separator) - self._start)
            if self.unread > limit:
                raise NotPlain("a head or line too long")
            if self.eof:
                raise asyncio.IncompleteReadError(self._take(self.unread), None)
            searched = max(self._start, self._end - len(separator) + 1)
            await self._wait(0)

    async def readexactly(self, n: int) -> bytes:
        while self.unread < n:
            if self.eof:
                raise asyncio.IncompleteReadError(self._take(self.unread), n)
            await self._wait(self._start + n)
        return self._take(n)

    async def read_to_close(self, maxsize: int) -> bytes:
        """The bytes up to the connection's close; ``NotPlain`` past ``maxsize`` (0: no
        limit)."""
        while not self.eof:
            if maxsize and self.unread > maxsize:
                raise NotPlain("too large")
            await self._wait(self._start + maxsize + 1 if maxsize else 1 << 62)
        if maxsize and self.unread > maxsize:
            raise NotPlain("too large")
        return self._take(self.unread)


class KeepAlive:
    """GETs to one host (``scheme://host:port`` at ``address``), each with ``headers``
    (name-value pairs, sent as they are after ``Host``), on one connection while the
    server keeps it open. Close it when done."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        address: str,
        headers: list[tuple[bytes, bytes]],
        maxsize: int = 0,
        timeout: float = 180.0,
    ) -> None:
        self.tls = scheme == "https"
        self.host = host
        self.port = port
        self.address = address
        default = 443 if self.tls else 80
        netloc = host if port == default else f"{host}:{port}"
        if ":" in host:  # an IPv6 literal
            netloc = f"[{host}]" if port == default else f"[{host}]:{port}"
        self._host = b"Host: " + netloc.encode("idna" if not host.isascii() else "ascii")
        self._head = b""
        self.maxsize = maxsize
        self.timeout = timeout
        self.ask_with(headers, maxsize, timeout)
        self._connection: _Connection | None = None
        #: Taken from a pool: its first request may meet the server's close of an idle
        #: connection, and is asked again on a new one.
        self._reused = False

    def ask_with(
        self, headers: list[tuple[bytes, bytes]], maxsize: int = 0, timeout: float = 180.0
    ) -> None:
        """The headers and limits of the next requests (another batch of the same host)."""
        self._head = self._host + b"".join(b"\r\n" + n + b": " + v for n, v in headers)
        self._head += b"\r\n\r\n"
        self.maxsize = maxsize
        self.timeout = timeout

    @property
    def key(self) -> tuple[bool, str, int, str]:
        return self.tls, self.host, self.port, self.address

    def idle_and_open(self) -> bool:
        """Whether the connection is open, with nothing unread, as the server left it."""
        connection = self._connection
        return connection is not None and not connection.eof and not connection.unread

    async def _connect(self) -> _Connection:
        global _TLS
        if self._connection is None:
            tls = None
            if self.tls:
                tls = _TLS = _TLS or _tls_context()
            name = self.host if self.tls and not is_literal(self.host) else None
            loop = asyncio.get_running_loop()
            _, self._connection = await loop.create_connection(
                lambda: _Connection(loop), self.address, self.port, ssl=tls, server_hostname=name
            )
        return self._connection

    async def get(self, target: str) -> Answer:
        """The answer to ``GET target`` (a path and query), or ``NotPlain``."""
        reused, self._reused = self._reused, False
        try:
            async with asyncio.timeout(self.timeout):
                if reused:
                    try:
                        return await self._get(target)
                    except (OSError, asyncio.IncompleteReadError) as exc:
                        if getattr(exc, "partial", b""):
                            raise
                        # The server closed the idle connection before this request came:
                        # asked again on a new one.
                        self.close()
                return await self._get(target)
        except NotPlain:
            self.close()
            raise
        except (OSError, EOFError, ValueError, asyncio.IncompleteReadError, TimeoutError) as exc:
            self.close()
            raise NotPlain(repr(exc)) from exc

    async def _get(self, target: str) -> Answer:
        reader = await self._connect()
        assert reader.transport is not None
        reader.transport.write(b"GET " + target.encode("ascii") + b" HTTP/1.1\r\n" + self._head)
        head = await reader.readuntil(b"\r\n\r\n")
        version, status, headers = parse_head(head)
        if status < 200:
            raise NotPlain(f"status {status}")
        keep = version == b"HTTP/1.1" and headers.get(b"connection", b"").lower() != b"close"
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            body = await self._chunked(reader)
        elif b"content-length" in headers:
            length = int(headers[b"content-length"])
            if self.maxsize and length > self.maxsize:
                raise NotPlain("too large")
            body = await reader.readexactly(length)
        else:
            body = await reader.read_to_close(self.maxsize)
            keep = False
        if not keep:
            self.close()
        return Answer(status, headers, body)

    async def _chunked(self, reader: _Connection) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            length = int(line.split(b";", 1)[0].strip(), 16)
            if length == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            size += length
            if self.maxsize and size > self.maxsize:
                raise NotPlain("too large")
            parts.append((await reader.readexactly(length + 2))[:-2])

    def close(self) -> None:
        if self._connection is not None and self._connection.transport is not None:
            self._connection.transport.close()
        self._connection = None


class KeepAlivePool:
    """Connections of finished batches kept for the next batch of their host (scheme,
    name, port and the address the crawl's resolver gave): a host's batches share one TCP
    (and TLS) handshake while its server keeps the connection, not one a batch. At most
    ``per_host`` idle connections a host, each kept ``idle_seconds`` (servers close idle
    ones after a few seconds: Apache's default is 5); one the server closed meanwhile
    costs its first request a new connection."""

    def __init__(self, per_host: int = 6, idle_seconds: float = 4.0) -> None:
        self.per_host = per_host
        self.idle_seconds = idle_seconds
        self._idle: dict[tuple[bool, str, int, str], list[tuple[float, KeepAlive]]] = {}

    def take(
        self,
        scheme: str,
        host: str,
        port: int,
        address: str,
        headers: list[tuple[bytes, bytes]],
        maxsize: int = 0,
        timeout: float = 180.0,
    ) -> KeepAlive:
        """A kept connection to the host, asking with ``headers`` from now on, else a new
        client (which connects at its first request)."""
        idle = self._idle.get((scheme == "https", host, port, address))
        now = time.monotonic()
        while idle:
            since, client = idle.pop()
            if now - since <= self.idle_seconds and client.idle_and_open():
                client.ask_with(headers, maxsize, timeout)
                client._reused = True
                return client
            client.close()
        return KeepAlive(scheme, host, port, address, headers, maxsize, timeout)

    def give(self, client: KeepAlive) -> None:
        """Keep ``client`` for its host's next batch, or close it (closed by the server,
        or the host has enough kept)."""
        idle = self._idle.setdefault(client.key, [])
        if client.idle_and_open() and len(idle) < self.per_host:
            idle.append((time.monotonic(), client))
        else:
            client.close()

    def close(self) -> None:
        for idle in self._idle.values():
            for _, client in idle:
                client.close()
        self._idle.clear()


def is_literal(host: str) -> bool:
    """Whether ``host`` is an IP address (no name to send for TLS).

    >>> is_literal("127.0.0.1"), is_literal("::1"), is_literal("cdn.example")
    (True, True, False)
    """
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
