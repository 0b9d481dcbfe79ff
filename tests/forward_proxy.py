"""A forward HTTP proxy on 127.0.0.1 for tests: it relays absolute-URI requests to their
server and counts what passed through it, by URL, and asks for credentials when given
some (407 without them, as real proxies do)."""

from __future__ import annotations

import base64
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        proxy = self.server.proxy
        if proxy.credentials is not None:
            expected = "Basic " + base64.b64encode(proxy.credentials.encode()).decode()
            if self.headers.get("Proxy-Authorization") != expected:
                with proxy.lock:
                    proxy.refused += 1
                self.send_response(407)
                self.send_header("Proxy-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        with proxy.lock:
            proxy.passed[self.path] += 1
            proxy.headers_seen.append(dict(self.headers))
        headers = {k: v for k, v in self.headers.items() if not k.lower().startswith("proxy-")}
        relay = urllib.request.Request(self.path, headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
        try:
            with opener.open(relay, timeout=30) as answer:
                status, reply_headers, body = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as exc:
            status, reply_headers, body = exc.code, exc.headers, exc.read()
        self.send_response(status)
        for name, value in reply_headers.items():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: ForwardProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class ForwardProxy:
    def __init__(self, credentials: str | None = None) -> None:
        #: "user:password" a client must send, or None for an open proxy.
        self.credentials = credentials
        self.passed: Counter[str] = Counter()
        self.headers_seen: list[dict[str, str]] = []
        self.refused = 0
        self.lock = threading.Lock()
        self._server: _Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self) -> str:
        auth = f"{self.credentials}@" if self.credentials else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
