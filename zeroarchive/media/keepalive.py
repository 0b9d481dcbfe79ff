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
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
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
        reader = self._reader
        return reader is not None and not reader.at_eof() and not len(reader._buffer)  # type: ignore[attr-defined]

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        global _TLS
        if self._reader is None or self._writer is None:
            tls = None
            if self.tls:
                tls = _TLS = _TLS or _tls_context()
            name = self.host if self.tls and not is_literal(self.host) else None
            self._reader, self._writer = await asyncio.open_connection(
                self.address, self.port, ssl=tls, server_hostname=name, limit=HEAD_LIMIT
            )
        return self._reader, self._writer

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
        reader, writer = await self._connect()
        writer.write(b"GET " + target.encode("ascii") + b" HTTP/1.1\r\n" + self._head)
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
            body = await self._to_close(reader)
            keep = False
        if not keep:
            self.close()
        return Answer(status, headers, body)

    async def _chunked(self, reader: asyncio.StreamReader) -> bytes:
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

    async def _to_close(self, reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        size = 0
        while chunk := await reader.read(256 * 1024):
            size += len(chunk)
            if self.maxsize and size > self.maxsize:
                raise NotPlain("too large")
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


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
