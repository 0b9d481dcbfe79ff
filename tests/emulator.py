"""A small threaded HTTP server on 127.0.0.1 whose answers come from Python code, for the
source emulators (tests/ptt_server.py, tests/dcard_server.py): they need cookies, POSTs and
answers that change between requests, which the static ReplayServer does not do.

``hits`` counts requests per ``"METHOD path?query"``.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol, Self


@dataclass(frozen=True)
class Incoming:
    method: str
    path: str  # path and query, as requested
    headers: Mapping[str, str]
    body: bytes

    @property
    def cookies(self) -> dict[str, str]:
        jar = SimpleCookie()
        jar.load(self.headers.get("cookie", ""))
        return {name: morsel.value for name, morsel in jar.items()}


@dataclass(frozen=True)
class Reply:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class App(Protocol):
    def handle(self, request: Incoming) -> Reply: ...


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self._respond()

    def do_POST(self) -> None:
        self._respond()

    def _respond(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        incoming = Incoming(
            self.command,
            self.path,
            {name.lower(): value for name, value in self.headers.items()},
            body,
        )
        emulator = self.server.emulator
        with emulator.lock:
            emulator.hits[f"{self.command} {self.path}"] += 1
        reply = emulator.app.handle(incoming)
        self.send_response_only(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    emulator: EmulatorServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class EmulatorServer:
    def __init__(self, app: App) -> None:
        self.app = app
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("EmulatorServer is not running")
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def __enter__(self) -> Self:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.emulator = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="EmulatorServer", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None
        self._thread = None


def html(status: int, body: str, *headers: tuple[str, str]) -> Reply:
    return Reply(status, (("Content-Type", "text/html; charset=utf-8"), *headers), body.encode())


NOT_FOUND = html(404, "<!doctype html><html><body><h1>404 Not Found</h1></body></html>\n")
