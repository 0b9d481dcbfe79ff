"""End-to-end crawls of small synthetic sites full of bad input, through the real `scrapy`
command line: every bad page or link gets a logged error and a stat, and every other
article of the site is still archived."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine, select

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route, _Handler
from tests.test_generic import articles_by_url, crawl, export, load_and_crawl, stat, write_sites
from zeroarchive.storage.schema import article_snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "generic_bad_input"
BIG5_PAGE = FIXTURES / "big5_no_charset.html"
BIG5_TEXT = "台北看守所昨天抽查前總統陳水扁的房舍"
HTML = (("Content-Type", "text/html; charset=utf-8"),)
MAXSIZE = 200_000
LONG_LINK = "/a/" + "x" * 3000


@dataclass(frozen=True)
class Seen:
    """One GET the server answered: when (monotonic seconds), which route, which headers."""

    at: float
    path: str
    headers: Message


class _RecordingHandler(_Handler):
    def do_GET(self) -> None:
        site = self.server.replay
        assert isinstance(site, RecordingServer)
        key = site.route_key(self.path)
        site.record(key, self.headers)
        body = site.streamed.get(key)
        if body is None:
            super().do_GET()
            return
        with site._hits_lock:
            site.hits[key] += 1
        # No Content-Length: an HTTP/1.0 body ends when the connection closes, so only the
        # bytes received can tell the client that the page is too big.
        self.send_response_only(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body)


class RecordingServer(ReplayServer):
    """A ReplayServer that records every GET with its headers, answers the paths in
    ``sequences`` with one route per request (the last one repeating), and sends the
    bodies in ``streamed`` without a Content-Length."""

    def __init__(
        self,
        routes: dict[str, Route],
        sequences: dict[str, list[Route]] | None = None,
        streamed: dict[str, bytes] | None = None,
    ) -> None:
        super().__init__(routes)
        self.seen: list[Seen] = []
        self.sequences = {key: list(queue) for key, queue in (sequences or {}).items()}
        self.streamed = dict(streamed or {})
        self._base_url = ""

    def url(self, path: str) -> str:
        """The URL of ``path``, still known after the server stops (to read the archive)."""
        return self._base_url + path

    def record(self, key: str, headers: Message) -> None:
        with self._hits_lock:
            self.seen.append(Seen(time.monotonic(), key, headers))
            queue = self.sequences.get(key)
            if queue:
                self.routes[key] = queue.pop(0)

    def __enter__(self) -> RecordingServer:
        super().__enter__()
        assert self._httpd is not None
        # Swapped before any request can arrive; tests/replay.py stays as it is.
        self._httpd.RequestHandlerClass = _RecordingHandler
        self._base_url = self.base_url
        return self


def page(title: str, head: str = "", body: str = "") -> Route:
    html = (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>{head}'
        f"</head><body><h1>{title}</h1>{body or f'<p>{title}</p>'}</body></html>\n"
    )
    return Route(200, HTML, html.encode())


def list_page(*hrefs: str) -> Route:
    items = "".join(f'<li><a href="{href}">{href[:40]}</a></li>' for href in hrefs)
    return page("list", body=f"<ul>{items}</ul>")


def redirect(location: str) -> Route:
    return Route(302, (("Location", location), *HTML), b"")


def error(status: int) -> Route:
    return Route(status, HTML, f"<html><body>error {status}</body></html>".encode())


def site(name: str, url: str, article: str = r"/a/", **config: Any) -> dict[str, object]:
    return {
        "name": name,
        "url": url,
        "type": "news",
        "config": {"article": article, "delay": 0, **config},
    }


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'archive.db'}"


def snapshot_article_ids(db_url: str) -> list[int]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        ids = sorted(conn.execute(select(article_snapshot.c.article_id)).scalars())
    engine.dispose()
    return ids


def test_canonical_and_redirects_file_the_snapshot_under_the_final_url(
    db_url: str, tmp_path: Path
) -> None:
    routes = {
        "/list/": list_page("/a/1", "/a/2", "/a/3", "/a/4"),
        "/a/1": page("one", head='<link rel="canonical" href="/a/1/final">'),
        "/a/1/final": page("one"),
        "/a/2": redirect("/a/2b"),
        "/a/2b": page("two"),
        "/a/3": page("three", head='<meta property="og:url" content="http://elsewhere.example/x">'),
    }
    with RecordingServer(routes) as server:
        # Some sites declare their front page as the canonical URL of every article.
        front = f'<meta property="og:url" content="{server.url("/")}">'
        server.routes["/a/4"] = page("four", head=front)
        run = load_and_crawl(db_url, tmp_path, [site("canon", server.url("/list/"))])
        assert server.hits["/a/1/final"] == 0
        assert server.hits["/a/2b"] == 1

    rows: dict[str, dict[str, Any]] = articles_by_url(db_url)
    for source, target in (("/a/1", "/a/1/final"), ("/a/2", "/a/2b")):
        moved, final = rows[server.url(source)], rows[server.url(target)]
        assert moved["redirect_to"] == final["article_id"], source
        assert (moved["next_snapshot_at"], moved["stop_reason"]) == (0, "moved"), source
        assert moved["snapshot_count"] == 0, source
        assert final["snapshot_count"] == 1, target
        assert final["redirect_to"] is None, target
        assert final["next_snapshot_at"] > time.time(), target
    for own in ("/a/3", "/a/4"):
        row = rows[server.url(own)]
        assert (row["snapshot_count"], row["redirect_to"]) == (1, None), own
    assert "http://elsewhere.example/x" not in rows
    assert server.url("/") not in rows
    assert snapshot_article_ids(db_url) == sorted(
        rows[server.url(path)]["article_id"] for path in ("/a/1/final", "/a/2b", "/a/3", "/a/4")
    )
    assert stat(run, "zeroarchive/canonical_redirects") == 2
    assert stat(run, "zeroarchive/snapshots_saved") == 4
    assert "4 snapshots saved, 0 unchanged, 2 moved" in run.output


# --- one site, many bad pages: crawled once, checked one bad input per test -----------------

GOOD = ("/a/ok1", "/a/ok2")


@dataclass(frozen=True)
class BadCrawl:
    run: Run
    server: RecordingServer
    rows: dict[str, dict[str, Any]]
    exported: dict[str, dict[str, object]]
    finished_at: float

    def row(self, path: str) -> dict[str, Any]:
        return self.rows[self.server.url(path)]


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BadCrawl]:
    tmp_path = tmp_path_factory.mktemp("bad_input")
    db_url = sqlite_url(tmp_path)
    huge = page("huge", body="<p>" + "x" * 1_000_000 + "</p>")
    routes = {
        "/list/": list_page(
            *GOOD,
            "/a/loop",
            "/a/huge",
            "/a/huge-stream",
            LONG_LINK,
            "/a/big5",
            "/a/flaky",
            "/a/gone",
            "/list/2",
        ),
        **{path: page(path) for path in GOOD},
        "/a/loop": redirect("/a/loop2"),
        "/a/loop2": redirect("/a/loop"),
        "/a/huge": huge,
        "/a/big5": Route(200, (("Content-Type", "text/html"),), BIG5_PAGE.read_bytes()),
        "/a/flaky": error(500),
    }
    sequences = {"/a/flaky": [error(500), error(500), page("flaky")]}
    with RecordingServer(routes, sequences, streamed={"/a/huge-stream": huge.body}) as server:
        sites = [
            site("bad", server.url("/list/"), following=r"/list/\d+$", depth=1),
            site("dead", server.url("/dead-list/"), article=r"/dead/"),
        ]
        run = load_and_crawl(
            db_url,
            tmp_path,
            sites,
            "-s",
            f"DOWNLOAD_MAXSIZE={MAXSIZE}",
            "-s",
            "RETRY_BACKOFF_BASE=0.1",
        )
        finished_at = time.time()
    exported = {urlsplit(str(r["url"])).path: r for r in export(db_url, tmp_path, "--site", "bad")}
    yield BadCrawl(run, server, articles_by_url(db_url), exported, finished_at)


def test_bad_input_leaves_every_good_article_archived(bad: BadCrawl) -> None:
    for path in (*GOOD, "/a/big5", "/a/flaky"):
        assert bad.row(path)["snapshot_count"] == 1, path
        assert bad.row(path)["failure_count"] == 0, path
        assert bad.exported[path]["status"] == 200, path
    assert set(bad.exported) == {*GOOD, "/a/big5", "/a/flaky"}
    assert stat(bad.run, "zeroarchive/snapshots_saved") == 4
    assert "finish_reason': 'finished'" in bad.run.output


def test_redirect_loop_backs_the_article_off(bad: BadCrawl) -> None:
    row = bad.row("/a/loop")
    assert row["failure_count"] == 1
    assert row["stop_reason"] == "last_error:redirect_loop"
    assert row["next_snapshot_at"] > bad.finished_at
    assert row["snapshot_count"] == 0
    assert stat(bad.run, "zeroarchive/errors/redirect_loop") == 1
    assert f"Snapshot of {bad.server.url('/a/loop')} failed: redirect_loop" in bad.run.output
    # Scrapy gives up after REDIRECT_MAX_TIMES (10) redirects: 11 requests in all.
    assert bad.server.hits["/a/loop"] + bad.server.hits["/a/loop2"] == 11


def test_page_over_download_maxsize_is_too_large(bad: BadCrawl) -> None:
    # /a/huge announces its size; /a/huge-stream is cut off once too many bytes arrived.
    for path in ("/a/huge", "/a/huge-stream"):
        row = bad.row(path)
        assert (row["failure_count"], row["snapshot_count"]) == (1, 0), path
        assert row["stop_reason"] == "last_error:too_large", path
        assert f"Snapshot of {bad.server.url(path)} failed: too_large" in bad.run.output
        assert bad.server.hits[path] == 1, path
    assert stat(bad.run, "zeroarchive/errors/too_large") == 2
    # What the errback receives in both cases, whatever Scrapy logs about it.
    exception = "downloader/exception_type_count/scrapy.exceptions.DownloadCancelledError"
    assert stat(bad.run, exception) == 2


def test_too_long_link_is_rejected_and_never_requested(bad: BadCrawl) -> None:
    assert stat(bad.run, "zeroarchive/urls_rejected/too_long") == 1
    assert f"Ignoring a link on {bad.server.url('/list/')}: too_long: 'http://" in bad.run.output
    assert all(len(path) < 2048 for path in bad.server.hits)
    assert all(len(url) < 2048 for url in bad.rows)
    assert len(bad.rows) == 8  # every article link of the list page but the long one


def test_big5_page_without_charset_is_decoded(bad: BadCrawl) -> None:
    record = bad.exported["/a/big5"]
    assert record["encoding"] == "cp950"
    assert BIG5_TEXT in str(record["html"])


def test_500_twice_then_200_is_retried_and_archived(bad: BadCrawl) -> None:
    assert bad.server.hits["/a/flaky"] == 3
    assert stat(bad.run, "retry/count") >= 2
    assert "flaky" in str(bad.exported["/a/flaky"]["html"])
    # The backoff (0.1 s, then 0.2 s) sits between the three requests.
    times = [seen.at for seen in bad.server.seen if seen.path == "/a/flaky"]
    assert times[2] - times[0] >= 0.25


def test_404_article_is_suspected_gone_not_stopped(bad: BadCrawl) -> None:
    row = bad.row("/a/gone")
    # Confirmed (an event) only by a second answer 10 minutes later: zeroarchive/events/.
    assert (row["gone_evidence"], row["next_snapshot_at"]) == ("404", row["gone_at"] + 600)
    assert f"Snapshot of {bad.server.url('/a/gone')} failed: http_404" in bad.run.output


def test_404_list_pages_are_counted_and_the_crawl_finishes(bad: BadCrawl) -> None:
    assert bad.server.hits["/list/2"] == 1
    assert bad.server.hits["/dead-list/"] == 1
    assert stat(bad.run, "zeroarchive/list_page_failures") == 2
    assert stat(bad.run, "zeroarchive/errors/http_404") == 3
    assert f"List page {bad.server.url('/list/2')} failed: http_404" in bad.run.output
    assert f"List page {bad.server.url('/dead-list/')} failed: http_404" in bad.run.output
    assert "finish_reason': 'finished'" in bad.run.output


# --- per-site politeness ---------------------------------------------------------------


def test_robots_txt_is_obeyed_unless_the_site_opts_out(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": Route(
            200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /private/\n"
        ),
        "/list/": list_page("/a/public", "/private/x"),
        "/a/public": page("public"),
        "/private/x": page("private"),
    }
    article = r"/(a|private)/"
    db_url = sqlite_url(tmp_path)
    with RecordingServer(dict(routes)) as obeys, RecordingServer(dict(routes)) as ignores:
        # discover: false, or the spider would also read robots.txt for its sitemaps.
        run = load_and_crawl(
            db_url,
            tmp_path,
            [
                site("obeys", obeys.url("/list/"), article=article, discover=False),
                site(
                    "ignores", ignores.url("/list/"), article=article, robots=False, discover=False
                ),
            ],
        )
    assert obeys.hits["/robots.txt"] == 1
    assert (obeys.hits["/private/x"], obeys.hits["/a/public"]) == (0, 1)
    assert (ignores.hits["/robots.txt"], ignores.hits["/private/x"]) == (0, 1)
    rows = articles_by_url(db_url)
    refused = rows[obeys.url("/private/x")]
    assert refused["snapshot_count"] == 0
    # Retrying cannot help until the site's config changes: it stops at once.
    assert refused["stop_reason"] == "forbidden:robots_disallowed"
    assert refused["next_snapshot_at"] == 0
    assert rows[ignores.url("/private/x")]["snapshot_count"] == 1
    assert stat(run, "zeroarchive/errors/robots_disallowed") == 1
    assert f"Snapshot of {obeys.url('/private/x')} failed: robots_disallowed" in run.output


def test_site_user_agent_cookies_and_delay_are_applied(tmp_path: Path) -> None:
    articles = [f"/a/{n}" for n in range(1, 5)]
    routes = {"/list/": list_page(*articles), **{path: page(path) for path in articles}}
    with RecordingServer(routes) as server:
        polite = site(
            "polite",
            server.url("/list/"),
            delay=0.5,
            ua="TestBot/1.0",
            cookies={"over18": "1"},
        )
        run = load_and_crawl(sqlite_url(tmp_path), tmp_path, [polite])
    assert stat(run, "zeroarchive/snapshots_saved") == 4
    fetched = [seen for seen in server.seen if seen.path in articles]
    assert sorted(seen.path for seen in fetched) == articles
    for seen in fetched:
        assert seen.headers["User-Agent"] == "TestBot/1.0", seen.path
        assert "over18=1" in (seen.headers["Cookie"] or ""), seen.path
    # Three pauses of 0.5 s between four requests, each varied by Scrapy's ±50%
    # DOWNLOAD_DELAY_JITTER; a behaviour check, not a benchmark (no delay: ~10 ms).
    assert fetched[-1].at - fetched[0].at >= 3 * 0.5 * 0.5


# --- sites file and modes --------------------------------------------------------------


def test_a_broken_site_in_the_sites_file_does_not_stop_the_good_ones(tmp_path: Path) -> None:
    routes = {
        "/one/": list_page("/one/a/1"),
        "/one/a/1": page("one"),
        "/two/": list_page("/two/a/1"),
        "/two/a/1": page("two"),
        "/broken/": list_page("/broken/a/1"),
    }
    db_url = sqlite_url(tmp_path)
    with RecordingServer(routes) as server:
        sites = [
            site("one", server.url("/one/"), article=r"/one/a/"),
            site("broken", server.url("/broken/"), article=r"/broken/a/", following=r"/p/(\d+"),
            site("two", server.url("/two/"), article=r"/two/a/"),
        ]
        sites_file = write_sites(tmp_path / "sites.yaml", sites)
        loaded = scrapy("load_sites", str(sites_file), db_url=db_url, cwd=tmp_path)
        assert loaded.returncode == 1, loaded.output
        assert "site 'broken': following: bad regex '/p/(\\\\d+'" in loaded.stderr
        assert "2 added, 0 updated, 0 unchanged, 1 failed" in loaded.stdout
        run = crawl(db_url, tmp_path)
    assert server.hits["/broken/"] == 0
    assert (server.hits["/one/a/1"], server.hits["/two/a/1"]) == (1, 1)
    rows = articles_by_url(db_url)
    assert [rows[server.url(p)]["snapshot_count"] for p in ("/one/a/1", "/two/a/1")] == [1, 1]
    assert stat(run, "zeroarchive/snapshots_saved") == 2


def test_discover_mode_then_snapshot_mode(tmp_path: Path) -> None:
    articles = ["/a/1", "/a/2", "/a/3"]
    routes = {"/list/": list_page(*articles), **{path: page(path) for path in articles}}
    db_url = sqlite_url(tmp_path)
    with RecordingServer(routes) as server:
        discovered = load_and_crawl(
            db_url, tmp_path, [site("modes", server.url("/list/"))], "-a", "mode=discover"
        )
        assert server.hits["/list/"] == 1
        assert [server.hits[path] for path in articles] == [0, 0, 0]
        assert stat(discovered, "zeroarchive/articles_new") == 3
        assert stat(discovered, "zeroarchive/snapshots_saved") == 0
        rows = articles_by_url(db_url)
        assert [rows[server.url(path)]["snapshot_count"] for path in articles] == [0, 0, 0]

        # The list pages are not due again for ten minutes; the articles are due now.
        snapshotted = crawl(db_url, tmp_path, "-a", "mode=snapshot")
        assert server.hits["/list/"] == 1
        assert [server.hits[path] for path in articles] == [1, 1, 1]
    assert stat(snapshotted, "zeroarchive/list_pages") == 0
    assert stat(snapshotted, "zeroarchive/snapshots_saved") == 3
    rows = articles_by_url(db_url)
    assert [rows[server.url(path)]["snapshot_count"] for path in articles] == [1, 1, 1]
