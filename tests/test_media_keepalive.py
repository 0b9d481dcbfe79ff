"""The media batch's keep-alive client (zeroarchive/media/keepalive.py) against a scripted
local server: answers by length, chunked and up to the close, one connection for a
host's items while the server keeps it, and anything not plain refused (``NotPlain``)."""

from __future__ import annotations

import asyncio

import pytest

from zeroarchive.media.keepalive import KeepAlive, NotPlain

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40

ANSWERS = {
    b"/a.png": b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n"
    % len(PNG)
    + PNG,
    b"/chunked.png": b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x;x=1\r\n%s\r\n" % (len(part), part) for part in (PNG[:100], PNG[100:]))
    + b"0\r\nX-Trailer: 1\r\n\r\n",
    b"/gone.png": b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\ngone",
    b"/big.png": b"HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n" + PNG,
    b"/close.png": b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n" + PNG,
    b"/garbage": b"ICY 200 OK\r\n\r\n",
}


async def _serve(seen: list[bytes], connections: list[int]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                seen.append(head)
                target = head.split(b" ")[1]
                writer.write(ANSWERS[target])
                await writer.drain()
                if b"close" in target or b"big" in target:
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()
        await writer.wait_closed()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


def test_a_hosts_items_come_on_one_connection_by_length_chunked_and_to_the_close() -> None:
    seen: list[bytes] = []
    connections: list[int] = []

    async def run() -> tuple[list[tuple[int, bytes, bytes | None]], int]:
        server = await _serve(seen, connections)
        port = server.sockets[0].getsockname()[1]
        client = KeepAlive(
            "http", "127.0.0.1", port, "127.0.0.1", [(b"Referer", b"https://news.example/a/1")]
        )
        got = []
        for target in ("/a.png", "/chunked.png", "/gone.png", "/close.png", "/a.png"):
            answer = await client.get(target)
            got.append((answer.status, answer.body, answer.headers.get(b"content-type")))
        client.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)  # the closed sockets' last callbacks
        return got, port

    got, port = asyncio.run(run())
    assert got == [
        (200, PNG, b"image/png"),
        (200, PNG, b"image/png"),
        (404, b"gone", None),
        (200, PNG, b"image/png"),
        (200, PNG, b"image/png"),
    ]
    # Four on the first connection; the one after the server's close on a second.
    assert len(connections) == 2
    assert all(b"\r\nReferer: https://news.example/a/1\r\n" in head for head in seen)
    assert all(f"\r\nHost: 127.0.0.1:{port}\r\n".encode() in head for head in seen)


@pytest.mark.parametrize("target", ["/big.png", "/garbage"])
def test_what_is_not_plain_is_refused(target: str) -> None:
    async def run() -> None:
        server = await _serve([], [])
        port = server.sockets[0].getsockname()[1]
        client = KeepAlive("http", "127.0.0.1", port, "127.0.0.1", [], maxsize=len(PNG) * 2)
        try:
            with pytest.raises(NotPlain):
                await client.get(target)
        finally:
            client.close()
            server.close()
            await server.wait_closed()
            await asyncio.sleep(0.05)

    asyncio.run(run())
