"""Local test websites for end-to-end crawls: saved real pages on 127.0.0.1.

- ``site_routes()``: news.example, a small news site replayed from its WARC
  (fixtures/replay/news.example.warc.gz: real article pages behind list pages, with
  redirects, a 404, a PDF, static files and revisit records; see SOURCE.txt there).
- ``warc_routes(path, host)``: any other WARC's captures of one host, the same way.
- ``tw_news_routes()``: 34 real Taiwanese news articles, each served at
  ``/<host><path>[?query]`` of its original URL, plus generated list pages
  ``/news/``, ``/news/list-2.html``, ... that link to them.

Use ``with ReplayServer(routes) as server:`` and point the crawler at ``server.url(path)``.
"""

from __future__ import annotations

import gzip
import html
import json
import lzma
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

FIXTURES = Path(__file__).parent / "fixtures"
SITE_WARC = FIXTURES / "replay" / "news.example.warc.gz"
SITE_HOST = "news.example"
NEWS_SOURCES = ("tw-news-2014", "tw-news-twnews")

LIST_PATH = "/news/"
TRACKING_PARAM = "utm_source=list"
NOISE_HREFS = (
    "#top",
    "/about.html",
    "http://example.invalid/x",
    "javascript:void(0)",
    "mailto:x@y",
)

_DROPPED_HEADERS = frozenset({"transfer-encoding", "content-encoding", "content-length"})
_NOT_FOUND = b"<!doctype html><html><body><h1>404 Not Found</h1></body></html>\n"


@dataclass(frozen=True)
class Route:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    #: Seconds the answer waits (a slow page); cut short once the route is replaced by
    #: one without a delay.
    delay: float = 0.0
    #: Sent without a Content-Length (the body ends when the connection closes).
    unsized: bool = False

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        replay = self.server.replay
        key = replay.route_key(self.path)
        if send_body:
            with replay._hits_lock:
                replay.hits[key] += 1
                replay.last_hit_at = time.perf_counter()
                if replay.first_hit_at is None:
                    replay.first_hit_at = replay.last_hit_at
        route = replay.routes.get(key) or replay.fallback
        if route is None:
            route = Route(404, (("Content-Type", "text/html"),), _NOT_FOUND)
        deadline = time.monotonic() + route.delay
        while time.monotonic() < deadline and replay.routes.get(key, route).delay:
            time.sleep(0.05)
        etag = route.header("ETag")
        if etag is not None and self.headers.get("If-None-Match") == etag:
            # A conditional request for an unchanged page, as real servers answer it.
            self.send_response_only(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # send_response() would add its own Server and Date next to the recorded ones.
        self.send_response_only(route.status)
        for name, value in route.headers:
            if name.lower() != "content-length":
                self.send_header(name, value)
        if not route.unsized:
            self.send_header("Content-Length", str(len(route.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(route.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops the SYNs of a crawler opening 32 connections
    # at once, and each dropped one stalls its request a second or more (TCP retransmits);
    # real servers listen with hundreds (nginx: 511).
    request_queue_size = 512
    replay: ReplayServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients (Scrapy on shutdown, timeouts) may drop connections mid-response.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ReplayServer:
    """A threaded HTTP server on 127.0.0.1 serving ``routes`` (path+query -> Route).

    ``routes`` is served live: a test may add or replace entries while it runs.
    ``fallback`` answers unknown paths (default: a 404 page); a route with an ETag answers
    a request whose If-None-Match names it with 304 Not Modified.
    ``hits`` counts GET requests per requested path+query, unknown paths included;
    ``first_hit_at`` and ``last_hit_at`` are the ``time.perf_counter()`` of the first and
    the latest GET (benchmarks time crawls by them, without process start-up).
    """

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.fallback: Route | None = None
        self.hits: Counter[str] = Counter()
        self.first_hit_at: float | None = None
        self.last_hit_at: float | None = None
        self._hits_lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def reset_hits(self) -> None:
        with self._hits_lock:
            self.hits.clear()
            self.first_hit_at = self.last_hit_at = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ReplayServer is not running")
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def route_key(self, path: str) -> str:
        """The route a request path hits; like real servers, query order does not matter."""
        if path in self.routes or "?" not in path:
            return path
        wanted = _query_key(path)
        return next((key for key in self.routes if _query_key(key) == wanted), path)

    def url(self, path: str) -> str:
        return self.base_url + path

    def __enter__(self) -> ReplayServer:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.replay = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="ReplayServer", daemon=True
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


def _query_key(path: str) -> tuple[str, list[str]]:
    base, _, query = path.partition("?")
    return base, sorted(query.split("&"))


def _path_query(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class _Capture:
    status: int
    headers: tuple[tuple[str, str], ...]
    payload: bytes | None
    refers_to: str | None
    digest: str | None


def _warc_route(host: str, capture: _Capture, payload: bytes) -> Route:
    headers = []
    for name, value in capture.headers:
        if name.lower() in _DROPPED_HEADERS:
            continue
        if name.lower() == "location" and urlsplit(value).hostname == host:
            value = _path_query(value)
        headers.append((name, value))
    return Route(capture.status, tuple(headers), payload)


@cache
def _warc_routes(warc: Path, host: str) -> dict[str, Route]:
    records: list[tuple[str, _Capture]] = []
    with warc.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type not in ("response", "revisit") or record.http_headers is None:
                continue
            rec = record.rec_headers
            http = record.http_headers
            payload = record.content_stream().read() if record.rec_type == "response" else None
            capture = _Capture(
                status=int(http.get_statuscode()),
                headers=tuple(http.headers),
                payload=payload,
                refers_to=rec.get_header("WARC-Refers-To-Target-URI"),
                digest=rec.get_header("WARC-Payload-Digest"),
            )
            records.append((rec.get_header("WARC-Target-URI"), capture))

    by_uri: dict[str, _Capture] = {}
    by_digest: dict[str, _Capture] = {}
    for uri, capture in records:
        if capture.payload is not None:
            by_uri.setdefault(uri, capture)
            if capture.digest:
                by_digest.setdefault(capture.digest, capture)

    def payload_of(capture: _Capture) -> bytes | None:
        if capture.payload is not None:
            return capture.payload
        original = by_uri.get(capture.refers_to or "")
        if original is None or original.digest != capture.digest:
            original = by_digest.get(capture.digest or "")
        return None if original is None else original.payload

    # The first response for a URL wins; a revisit only fills a URL that has no response.
    routes_by_scheme: dict[str, dict[str, Route]] = {"http": {}, "https": {}}
    for want_response in (True, False):
        for uri, capture in records:
            parts = urlsplit(uri)
            if parts.hostname != host or parts.scheme not in routes_by_scheme:
                continue
            if (capture.payload is not None) != want_response:
                continue
            routes = routes_by_scheme[parts.scheme]
            key = _path_query(uri)
            payload = payload_of(capture)
            if key not in routes and payload is not None:
                routes[key] = _warc_route(host, capture, payload)

    routes = dict(routes_by_scheme["http"])
    for key, route in routes_by_scheme["https"].items():
        existing = routes.get(key)
        # An http URL that redirects to its https twin would loop once made path-only.
        if existing is None or (
            300 <= existing.status < 400 and existing.header("Location") == key
        ):
            routes[key] = route
    return routes


def warc_routes(warc: Path, host: str) -> dict[str, Route]:
    """The captures of ``host`` in ``warc``, keyed by path+query; a fresh dict every call.

    Payloads are decoded (chunked, gzip) and Location headers on ``host`` made path-only.
    The first response for a URL wins; a revisit fills only a URL without a response; an
    https capture stands in for an http one that merely redirects to it.
    """
    return dict(_warc_routes(warc, host))


def site_routes() -> dict[str, Route]:
    """news.example from its WARC."""
    return warc_routes(SITE_WARC, SITE_HOST)


def html_pages(routes: dict[str, Route]) -> list[str]:
    """Sorted paths of the routes that are 200 text/html pages."""
    return sorted(
        key
        for key, route in routes.items()
        if route.status == 200
        and (route.header("Content-Type") or "").lower().startswith("text/html")
    )


@dataclass(frozen=True)
class NewsPage:
    name: str
    path: str
    original_url: str
    charset: str
    title: str
    published_at: str
    body_snippets: tuple[str, ...]
    charset_header: bool


@cache
def _news() -> tuple[tuple[NewsPage, bytes], ...]:
    loaded = []
    for source in NEWS_SOURCES:
        folder = FIXTURES / source
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        pages_folder = folder / "html" if (folder / "html").is_dir() else folder
        for name in sorted(expected):
            raw = (pages_folder / name).read_bytes()
            body = gzip.decompress(raw) if name.endswith(".gz") else lzma.decompress(raw)
            loaded.append((name, expected[name], body))

    pages = []
    others = 0
    for name, facts, body in loaded:
        if facts["charset"].lower() == "big5":
            charset_header = False
        else:
            # Every third non-Big5 page relies on its <meta> (or on sniffing) alone.
            charset_header = others % 3 != 2
            others += 1
        parts = urlsplit(facts["url"])
        page = NewsPage(
            name=name,
            path=f"/{parts.netloc}{_path_query(facts['url'])}",
            original_url=facts["url"],
            charset=facts["charset"],
            title=facts["title"],
            published_at=facts["published_at"],
            body_snippets=tuple(facts["body_snippets"]),
            charset_header=charset_header,
        )
        pages.append((page, body))
    return tuple(pages)


def _some_news(count: int | None) -> tuple[tuple[NewsPage, bytes], ...]:
    """``count`` of the articles spread evenly over them (both sources, every charset
    kind), in their order; all of them when ``count`` is None. A crawl's CPU grows with
    its articles: the scenarios about processes, not pages, take a few."""
    news = _news()
    if count is None:
        return news
    if not 1 <= count <= len(news):
        raise ValueError(f"count must be between 1 and {len(news)}")
    return tuple(news[i * len(news) // count] for i in range(count))


def tw_news_pages(count: int | None = None) -> list[NewsPage]:
    """The 27 tw-news-2014 then the 7 tw-news-twnews articles, each sorted by file name
    (or ``count`` of them spread over these)."""
    return [page for page, _ in _some_news(count)]


def list_page_paths(pages_per_list: int = 10, count: int | None = None) -> list[str]:
    """The list page chain: ``/news/``, ``/news/list-2.html``, ..."""
    if pages_per_list < 1:
        raise ValueError("pages_per_list must be at least 1")
    lists = -(-len(_some_news(count)) // pages_per_list)
    return [LIST_PATH] + [f"/news/list-{n}.html" for n in range(2, lists + 1)]


def tracked(path: str) -> str:
    """``path`` with the tracking parameter the list pages add to some links."""
    return f"{path}{'&' if '?' in path else '?'}{TRACKING_PARAM}"


def _list_page(
    number: int, items: list[tuple[str, str]], extra: list[tuple[str, str]], next_path: str | None
) -> bytes:
    def anchor(href: str, text: str, attrs: str = "") -> str:
        return f'<a href="{html.escape(href)}"{attrs}>{html.escape(text)}</a>'

    nav_texts = ("回到頂端", "關於我們", "外部連結", "分享", "聯絡我們")
    lines = [
        "<!doctype html>",
        '<html lang="zh-Hant"><head><meta charset="utf-8">',
        f"<title>即時新聞 第{number}頁</title></head>",
        '<body><a name="top"></a>',
        "<nav>" + " ".join(anchor(h, t) for h, t in zip(NOISE_HREFS, nav_texts, strict=True)),
        "</nav>",
        "<ul>",
        *(f"<li>{anchor(href, title)}</li>" for href, title in items),
        "</ul>",
    ]
    if extra:
        lines += ["<aside><h2>熱門新聞</h2><ul>"]
        lines += [f"<li>{anchor(href, title)}</li>" for href, title in extra]
        lines += ["</ul></aside>"]
    if next_path is not None:
        next_link = anchor(next_path, "下一頁", ' rel="next"')
        lines.append(f'<p class="pager">{next_link}</p>')
    lines.append("</body></html>\n")
    return "\n".join(lines).encode("utf-8")


def tw_news_routes(pages_per_list: int = 10, count: int | None = None) -> dict[str, Route]:
    """The articles (``tw_news_pages(count)``) plus the list page chain linking to them.

    The list pages link to every article in ``tw_news_pages()`` order with a
    root-relative href; articles 0, 3, 6, ... carry ``tracked()`` links, and the
    last list page links to article 0 once more (plain) in a 熱門 box, so that
    article is linked twice, once with and once without the tracking parameter.
    """
    news = _some_news(count)
    routes: dict[str, Route] = {}
    for page, body in news:
        content_type = f"text/html; charset={page.charset}" if page.charset_header else "text/html"
        routes[page.path] = Route(200, (("Content-Type", content_type),), body)

    paths = list_page_paths(pages_per_list, count)
    links = [
        (tracked(page.path) if i % 3 == 0 else page.path, page.title)
        for i, (page, _) in enumerate(news)
    ]
    first_page = news[0][0]
    for n, path in enumerate(paths):
        items = links[n * pages_per_list : (n + 1) * pages_per_list]
        is_last = n == len(paths) - 1
        extra = [(first_page.path, first_page.title)] if is_last else []
        body = _list_page(n + 1, items, extra, None if is_last else paths[n + 1])
        routes[path] = Route(200, (("Content-Type", "text/html; charset=utf-8"),), body)
    return routes
