"""A TCP forwarder the test controls, in front of MariaDB or Redis: ``cut()`` drops every
connection and refuses new ones (the server is unreachable) until ``restore()``."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TcpForwarder:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<target_port>."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    def via(self, url: str) -> str:
        """``url`` (a database or Redis URL on the target) pointed at the forwarder."""
        parts = urlsplit(url)
        user_info, at, _host = parts.netloc.rpartition("@")
        return urlunsplit(parts._replace(netloc=f"{user_info}{at}127.0.0.1:{self.port}"))

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                return
            with self._lock:
                self._connections += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        if self._listener is not None:
            # shutdown() first: a bare close() leaves the socket listening while the accept
            # thread is blocked on it.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._connections:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._connections.clear()

    def restore(self) -> None:
        self._listen()

    def __enter__(self) -> TcpForwarder:
        self._listen()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()
