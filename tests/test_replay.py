from __future__ import annotations

import http.client
import re
from collections import Counter
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.replay import (
    LIST_PATH,
    NOISE_HREFS,
    SITE_WARC,
    TRACKING_PARAM,
    ReplayServer,
    Route,
    html_pages,
    list_page_paths,
    site_routes,
    tracked,
    tw_news_pages,
    tw_news_routes,
)

HREF = re.compile(r'<a href="([^"]*)"')


def fetch(
    server: ReplayServer, path: str, method: str = "GET"
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request over a plain connection: no redirects followed, no proxy from the env."""
    port = urlsplit(server.base_url).port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def site() -> Iterator[ReplayServer]:
    with ReplayServer(site_routes()) as server:
        yield server


@pytest.fixture(scope="module")
def news() -> Iterator[ReplayServer]:
    with ReplayServer(tw_news_routes()) as server:
        yield server


def warc_payload(uri: str) -> bytes:
    with SITE_WARC.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if (
                record.rec_type == "response"
                and record.rec_headers.get_header("WARC-Target-URI") == uri
            ):
                payload: bytes = record.content_stream().read()
                return payload
    raise LookupError(uri)


def test_site_home_is_the_warc_payload(site: ReplayServer) -> None:
    status, headers, body = fetch(site, "/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert body == warc_payload("https://news.example/")
    assert headers["Content-Length"] == str(len(body))
    assert "Transfer-Encoding" not in headers
    assert site.url("/news") == site.base_url + "/news"


def test_site_routes_are_decoded_and_local() -> None:
    routes = site_routes()
    assert len(routes) == 16
    for route in routes.values():
        names = {name.lower() for name, _ in route.headers}
        assert not names & {"transfer-encoding", "content-encoding", "content-length"}
        location = route.header("Location")
        assert location is None or location.startswith("/")
    # Sent gzip-compressed and chunked on the wire; served as the page itself.
    assert routes["/news"].body.startswith(b"<!doctype html>")
    assert routes["/news/2013/11/27/weather-thanksgiving.html"].body.startswith(b"<!DOCTYPE")
    assert routes["/news/2013/11/27/weather-thanksgiving.html"].body == warc_payload(
        "https://news.example/news/2013/11/27/weather-thanksgiving.html"
    )
    # The https capture, not http's redirect to it (that would redirect to itself).
    assert routes["/"].status == 200
    # A revisit record: another URL, the front page's bytes.
    assert routes["/index.html"].body == routes["/"].body
    assert routes["/news/2014/01/02/retracted.html"].status == 404
    assert routes["/news/2024/05/01/annual-report"].body.startswith(b"%PDF-")
    assert routes["/static/logo.png"].body.startswith(b"\x89PNG")
    assert routes["/static/site.js"].body == b""


def test_site_html_pages() -> None:
    pages = html_pages(site_routes())
    assert len(pages) == 10
    assert pages == sorted(pages)
    assert {"/", "/news", "/news/2019/08/20/north-korea-drill.html"} <= set(pages)
    assert "/news/s/5071" not in pages
    assert "/news/2024/05/01/annual-report" not in pages


def test_redirect_is_path_only(site: ReplayServer) -> None:
    status, headers, body = fetch(site, "/news/s/5071")
    assert status == 301
    assert headers["Location"] == "/news/2019/08/20/north-korea-drill.html"
    assert b"Moved Permanently" in body


def test_head_has_length_but_no_body(site: ReplayServer) -> None:
    status, headers, body = fetch(site, "/news", method="HEAD")
    assert status == 200
    assert body == b""
    assert headers["Content-Length"] == str(len(site.routes["/news"].body))


def test_unknown_path_and_robots_are_404(site: ReplayServer) -> None:
    for path in ("/robots.txt", "/no/such/page?x=1"):
        status, headers, _ = fetch(site, path)
        assert status == 404
        assert headers["Content-Type"] == "text/html"


def test_hits_and_live_routes() -> None:
    with ReplayServer({}) as server:
        assert fetch(server, "/page")[0] == 404
        server.routes["/page"] = Route(200, (("Content-Type", "text/plain"),), b"v1")
        assert fetch(server, "/page")[2] == b"v1"
        server.routes["/page"] = Route(200, (("Content-Type", "text/plain"),), b"v2")
        assert fetch(server, "/page")[2] == b"v2"
        fetch(server, "/page?q=1")
        fetch(server, "/page", method="HEAD")
        assert server.hits == Counter({"/page": 3, "/page?q=1": 1})


def test_news_pages() -> None:
    pages = tw_news_pages()
    assert len(pages) == 34
    assert len({page.path for page in pages}) == 34
    by_name = {page.name: page for page in pages}
    assert by_name["udn_s1.html.gz"].path == "/udn.com/NEWS/NATIONAL/NAT4/7996060.shtml"
    assert by_name["setn.html.xz"].path == "/www.setn.com/News.aspx?NewsID=350370"
    assert not any(page.charset_header for page in pages if page.charset == "big5")
    without = [page for page in pages if page.charset != "big5" and not page.charset_header]
    assert len(without) == 10


def test_news_pages_serve_their_bytes(news: ReplayServer) -> None:
    routes = tw_news_routes()
    for page in tw_news_pages():
        status, headers, body = fetch(news, page.path)
        assert status == 200, page.name
        assert body == routes[page.path].body
        assert page.title.encode(page.charset) in body, page.name
        expected = f"text/html; charset={page.charset}" if page.charset_header else "text/html"
        assert headers["Content-Type"] == expected, page.name


def test_list_pages_link_every_article_as_designed(news: ReplayServer) -> None:
    pages = tw_news_pages()
    paths = list_page_paths()
    assert paths == [LIST_PATH, "/news/list-2.html", "/news/list-3.html", "/news/list-4.html"]
    article_hrefs: list[str] = []
    for n, path in enumerate(paths):
        status, headers, body = fetch(news, path)
        assert status == 200
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        hrefs = [unescape(href) for href in HREF.findall(body.decode("utf-8"))]
        assert hrefs[: len(NOISE_HREFS)] == list(NOISE_HREFS)
        hrefs = hrefs[len(NOISE_HREFS) :]
        if n + 1 < len(paths):
            assert hrefs.pop() == paths[n + 1]
            assert "下一頁" in body.decode("utf-8")
        article_hrefs += hrefs

    expected = [tracked(p.path) if i % 3 == 0 else p.path for i, p in enumerate(pages)]
    assert article_hrefs == [*expected, pages[0].path]
    assert tracked("/a?b=1") == f"/a?b=1&{TRACKING_PARAM}"
    untracked = Counter(
        href.replace(f"?{TRACKING_PARAM}", "").replace(f"&{TRACKING_PARAM}", "")
        for href in article_hrefs
    )
    assert untracked == Counter({p.path: 2 if i == 0 else 1 for i, p in enumerate(pages)})


def test_list_chain_length_follows_pages_per_list() -> None:
    assert len(list_page_paths(34)) == 1
    assert len(list_page_paths(9)) == 4
    routes = tw_news_routes(pages_per_list=5)
    assert sum(path.startswith("/news/") for path in routes) == 7
    with pytest.raises(ValueError):
        list_page_paths(0)
