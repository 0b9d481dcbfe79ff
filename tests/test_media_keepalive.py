"""The media batch's keep-alive client (zeroarchive/media/keepalive.py) against a scripted
local server: answers by length, chunked and up to the close, one connection for a
host's items while the server keeps it, and anything not plain refused (``NotPlain``)."""

from __future__ import annotations

import asyncio

import pytest

from zeroarchive.media.keepalive import KeepAlive, KeepAlivePool, NotPlain

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
# Answered as /a.png, then the server closes the connection without saying so (as a server
# closes an idle keep-alive connection).
ANSWERS[b"/last.png"] = ANSWERS[b"/a.png"]


async def _serve(seen: list[bytes], connections: list[int]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                seen.append(head)
                target = head.split(b" ")[1]
                writer.write(ANSWERS[target])
                await writer.drain()
                if b"close" in target or b"big" in target or b"last" in target:
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


def test_a_hosts_next_batch_takes_the_connection_its_last_one_left_open() -> None:
    """Batches of one host share a connection (one TCP and TLS handshake, not one a
    batch), each asking with its own headers; one the server closed meanwhile, or kept
    too long, is not taken."""
    seen: list[bytes] = []
    connections: list[int] = []

    async def run() -> list[int]:
        server = await _serve(seen, connections)
        port = server.sockets[0].getsockname()[1]
        pool = KeepAlivePool()
        opened = []
        for page in ("1", "2", "3"):
            client = pool.take(
                "http", "127.0.0.1", port, "127.0.0.1", [(b"Referer", page.encode())]
            )
            assert (await client.get("/a.png")).body == PNG
            pool.give(client)
            opened.append(len(connections))
        # The server closes after this one; the pool sees it and connects anew.
        client = pool.take("http", "127.0.0.1", port, "127.0.0.1", [])
        assert (await client.get("/last.png")).body == PNG
        pool.give(client)
        await asyncio.sleep(0.05)
        client = pool.take("http", "127.0.0.1", port, "127.0.0.1", [])
        assert (await client.get("/a.png")).body == PNG
        opened.append(len(connections))
        # Kept longer than idle_seconds: not taken.
        pool.idle_seconds = 0.0
        pool.give(client)
        await asyncio.sleep(0.01)
        client = pool.take("http", "127.0.0.1", port, "127.0.0.1", [])
        assert (await client.get("/a.png")).body == PNG
        opened.append(len(connections))
        client.close()
        pool.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)
        return opened

    assert asyncio.run(run()) == [1, 1, 1, 2, 3]
    referers = [line for head in seen[:3] for line in head.split(b"\r\n") if b"Referer" in line]
    assert referers == [b"Referer: 1", b"Referer: 2", b"Referer: 3"]


def test_a_taken_connection_the_server_closed_is_asked_again_on_a_new_one() -> None:
    connections: list[int] = []

    async def run() -> bytes:
        server = await _serve([], connections)
        port = server.sockets[0].getsockname()[1]
        pool = KeepAlivePool()
        client = pool.take("http", "127.0.0.1", port, "127.0.0.1", [])
        await client.get("/last.png")
        await asyncio.sleep(0.05)  # the server's close has come
        client._reused = True  # as the pool leaves a client it hands out again
        try:
            return (await client.get("/a.png")).body
        finally:
            client.close()
            server.close()
            await server.wait_closed()
            await asyncio.sleep(0.05)

    assert asyncio.run(run()) == PNG
    assert len(connections) == 2
