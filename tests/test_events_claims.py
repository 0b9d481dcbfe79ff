"""Broken canonical claims end to end: the 34 real Taiwanese news articles of tests/replay.py
served on 127.0.0.1, each with its og:url replaced by a claim broken the way sites break
them (the page's own URL without its scheme, as std.stheadline.com writes it; another host
without its scheme; empty, "/", relative, protocol-relative, javascript:, spaces and CJK,
percent-encoded, 3,000 characters long, a list page, the front page, another article of
the site, as a template naming the latest story on every page would) or left as saved
(the outlet's own absolute URL, another host here), crawled several times over a fake clock
through the `scrapy` command line. Every article answers 200 with its page every time:
every one must be stored under its own URL each time, none moved, none suspected and no
event raised."""

from __future__ import annotations

import html
import re
from pathlib import Path

from sqlalchemy import create_engine, select

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route, tw_news_pages, tw_news_routes
from tests.test_events import article_page, events, front_page, run
from tests.test_generic import stat, write_sites
from zeroarchive.core.schedule import HOUR, MINUTE
from zeroarchive.core.urls import canonicalize_url
from zeroarchive.storage.schema import article

T0 = 1_800_000_000
# The articles are the outlets' paths on this host (a made-up path with a colon is not).
ARTICLE = r"^http://127\.0\.0\.1:\d+/[\w.-]+\.(com|net|tw)[\w.]*/[^:]*$"
_CLAIM_TAGS = re.compile(rb"<(?:link|meta)\b[^>]*(?:canonical|og:url)[^>]*>", re.IGNORECASE)
_HEAD = re.compile(rb"<head\b[^>]*>", re.IGNORECASE)
# Of the 34 news articles: each of claims()' 15 kinds met, the last (another article) by
# a page that is not that article; each article more cost every one of the 4 crawls.
ARTICLES = 17


def claims(base: str, path: str, original: str, latest: str) -> list[str | None]:
    """One broken claim of each kind for the page at ``base + path`` (None: as saved);
    ``latest`` is the path of the story a broken template names on every page."""
    own = base + path
    return [
        own.removeprefix("http://"),  # its own URL without the scheme (std.stheadline.com)
        original.split("://", 1)[1],  # the outlet's URL without the scheme: relative here
        None,  # as saved: the outlet's absolute URL, another host here
        "",
        "/",
        base + "/news/",
        base + "/news/list-2.html",
        "list-2.html",
        "//std.stheadline.com/daily/article.php?id=1",
        "std.stheadline.com/daily/article.php?id=1",
        "javascript:void(0)",
        "/新聞 標題/ 報導 1",
        # its own URL with a character percent-encoded and a fragment
        base + re.sub(r"\d", lambda d: f"%{ord(d.group()):02X}", path, count=1) + "#%E4%B8%AD",
        "/" + "長" * 3000,
        base + latest,  # another article of the site
    ]


def with_claim(body: bytes, charset: str, claim: str | None) -> bytes:
    if claim is None:
        return body
    meta = f'<meta property="og:url" content="{html.escape(claim, quote=True)}">'
    tag = meta.encode(charset, errors="xmlcharrefreplace")
    body = _CLAIM_TAGS.sub(b"", body)
    head = _HEAD.search(body)
    at = head.end() if head else 0
    return body[:at] + tag + body[at:]


def test_pages_answering_with_their_article_are_stored_whatever_they_claim(
    db_url: str, tmp_path: Path
) -> None:
    routes = tw_news_routes(count=ARTICLES)
    pages = tw_news_pages(ARTICLES)
    with ReplayServer(routes) as server:
        base = server.url("")
        latest = pages[-1].path
        kinds = len(claims(base, "/", "http://x/", latest))
        for n, page in enumerate(pages):
            claim = claims(base, page.path, page.original_url, latest)[n % kinds]
            saved = routes[page.path]
            routes[page.path] = Route(
                200, saved.headers, with_claim(saved.body, page.charset, claim)
            )
        config = {"article": ARTICLE, "following": r"/news/list-\d+\.html$", "delay": 0}
        sites = [{"name": "tw", "url": server.url("/news/"), "type": "news", "config": config}]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        urls = {canonicalize_url(server.url(page.path)) for page in pages}

        engine = create_engine(db_url)
        snapshots: dict[str, int] = {}
        ignored: set[str] = set()
        for at in (T0, T0 + 11 * MINUTE, T0 + 2 * HOUR, T0 + 2 * HOUR + 11 * MINUTE):
            done = run("crawl", "generic", db_url=db_url, tmp_path=tmp_path, at=at)
            assert "looks gone" not in done.output
            assert stat(done, "zeroarchive/canonical_redirects") == 0
            ignored.update(re.findall(r"'zeroarchive/canonical/ignored/(\w+)'", done.output))
            with engine.connect() as conn:
                rows = {
                    row.url: row
                    for row in conn.execute(
                        select(
                            article.c.url,
                            article.c.snapshot_count,
                            article.c.redirect_to,
                            article.c.stop_reason,
                            article.c.gone_at,
                            article.c.deleted_at,
                        )
                    )
                }
            assert {url for url, row in rows.items() if row.snapshot_count} == urls
            for url in urls:
                row = rows[url]
                assert row.snapshot_count >= snapshots.get(url, 0), url
                assert (row.redirect_to, row.gone_at or 0, row.deleted_at or 0) == (None, 0, 0), url
                assert row.stop_reason != "moved", url
                snapshots[url] = row.snapshot_count
            assert events(db_url, tmp_path, at) == []
        engine.dispose()
    # Every article was stored in the first crawl and again two hours later.
    assert set(snapshots.values()) == {2}
    # Each kind of broken claim was met and counted.
    assert ignored == {
        "empty",
        "front_page",
        "list_page",
        "relative",
        "off_site",
        "bad_scheme",
        "not_article",
        "too_long",
        "other_article",
    }


def test_an_article_the_server_sends_to_another_hosts_page_is_not_taken_for_deleted(
    db_url: str, tmp_path: Path
) -> None:
    """The site moves one article to a new domain (here "localhost", another host than
    the site's 127.0.0.1): that answer says nothing of a deletion, and is a failure."""
    names = ("amove", "astay")
    routes = {"/": front_page(names), **{f"/news/{n}": article_page(n) for n in names}}
    with ReplayServer(routes) as server:
        config = {"article": "/news/", "following": r"^http://127\.0\.0\.1:\d+/$", "delay": 0}
        sites = [{"name": "farm", "url": server.url("/"), "type": "news", "config": config}]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        run("crawl", "generic", db_url=db_url, tmp_path=tmp_path, at=T0)
        elsewhere = server.url("/moved/amove").replace("127.0.0.1", "localhost")
        routes["/news/amove"] = Route(302, (("Location", elsewhere),), b"")
        routes["/moved/amove"] = article_page("amove")
        for at in (T0 + 2 * HOUR, T0 + 2 * HOUR + 11 * MINUTE):
            done = run("crawl", "generic", db_url=db_url, tmp_path=tmp_path, at=at)
            assert "looks gone" not in done.output
            assert events(db_url, tmp_path, at) == []
        engine = create_engine(db_url)
        with engine.connect() as conn:
            rows = {
                row.url.rsplit("/", 1)[1]: row
                for row in conn.execute(
                    select(
                        article.c.url,
                        article.c.snapshot_count,
                        article.c.redirect_to,
                        article.c.stop_reason,
                        article.c.gone_at,
                        article.c.deleted_at,
                    )
                )
            }
        engine.dispose()
    moved = rows["amove"]
    assert (moved.redirect_to, moved.gone_at or 0, moved.deleted_at or 0) == (None, 0, 0)
    assert (moved.snapshot_count, moved.stop_reason) == (1, "last_error:redirect_off_site")
    assert set(rows) == set(names)  # no article of the site under the other host's URL
    assert rows["astay"].snapshot_count >= 2
