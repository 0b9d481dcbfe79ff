"""Feeds and sitemaps as list pages of generic sites, end to end through the real `scrapy`
command line, on SQLite and MariaDB: two replayed sites whose articles are found only
through them.

- blog: its front page links no article, only its feed (a real Big5 RSS 1.0 feed); its
  config lists a second feed (a real Big5 Atom feed) and two that are not feeds.
- news: robots.txt names a sitemap index of a gzipped sitemap (a real local news site's),
  a news sitemap (a real wordpress.com one) and an old sitemap that is not followed; its
  config lists a sitemap too large to read and a gzip bomb.

The real documents are served with their hosts changed to the test server's.
"""

from __future__ import annotations

import calendar
import gzip
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from scrapy.utils.test import get_crawler
from sqlalchemy import create_engine, select

from spiders.generic import GenericSpider
from tests.conftest import project_settings
from tests.replay import ReplayServer, Route
from tests.test_facebook import chromium  # noqa: F401 (fixture)
from tests.test_generic import articles_by_url, crawl, list_ok_at, load_and_crawl, stat
from tests.test_generic_bad_input import RecordingServer
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.crawl.feeds import parse_feed, parse_sitemap
from zeroarchive.sites.record import Site, parse_config
from zeroarchive.storage.schema import article_snapshot

FIXTURES = Path(__file__).parent / "fixtures"
MAX_BYTES = 200_000
BLOG_ARTICLE = r"detailstander\.asp\?ID=\d+$|/20\d\d/\d\d/[\w-]+\.html$"
NEWS_ARTICLE = r"/news/|/20\d\d/\d\d/\d\d/[\w-]+/$"
XML = (("Content-Type", "application/xml"),)
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def fixture(name: str) -> bytes:
    return gzip.decompress((FIXTURES / name).read_bytes())


def utc(*fields: int) -> int:
    return calendar.timegm((*fields, 0, 0, 0))


def article_page(url: str) -> Route:
    body = f"<!doctype html><html><head><title>{url}</title></head><body><p>{url}</p></body>"
    return Route(200, HTML, f"{body}</html>".encode())


def front_page(*head: str) -> Route:
    body = "<!doctype html><html><head><title>home</title>" + "".join(head) + "</head>"
    return Route(200, HTML, (body + "<body><p>Nothing linked here.</p></body></html>").encode())


def on_server(body: bytes, origin: str, server: ReplayServer) -> bytes:
    """A real document with its links moved from ``origin`` to the test server."""
    return body.replace(origin.encode(), server.base_url.encode())


def serve_articles(server: ReplayServer, urls: list[str]) -> None:
    for url in urls:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        server.routes[path] = article_page(url)


def blog_routes(server: ReplayServer) -> tuple[list[str], list[str]]:
    """The blog's routes; returns the URLs of its RSS feed's and its Atom feed's entries."""
    rss = on_server(
        fixture("big5-feeds/Big5/coolloud.org.tw.xml.gz"), "http://www.coolloud.org.tw", server
    )
    atom = on_server(
        fixture("big5-feeds/Big5/0804.blogspot.com.xml.gz"), "http://0804.blogspot.com", server
    )
    server.routes.update(
        {
            "/": front_page(
                '<link rel="alternate" type="application/rss+xml" href="/rss.xml">',
                '<link rel="alternate" type="application/atom+xml" href="http://feeds.invalid/a">',
            ),
            "/rss.xml": Route(200, XML, rss),
            "/atom.xml": Route(200, XML, atom),
            "/home.xml": Route(200, HTML, fixture("feeds/DaringFireball.html.gz")),
            "/feed.json": Route(200, XML, fixture("feeds/inessential.json.gz")),
        }
    )
    rss_urls = [link.url for link in parse_feed(rss, server.url("/rss.xml"))]
    atom_urls = [link.url for link in parse_feed(atom, server.url("/atom.xml"))]
    serve_articles(server, rss_urls + atom_urls)
    return rss_urls, atom_urls


def news_routes(server: ReplayServer) -> tuple[list[str], list[str]]:
    """The news site's routes; returns the URLs of its gzipped sitemap's entries and of
    its news sitemap's."""
    articles = on_server(
        fixture("feeds/hebdenbridgetimes-articles-sitemap.xml.gz"),
        "http://www.hebdenbridgetimes.co.uk",
        server,
    )
    news = on_server(
        fixture("feeds/shinpaideshou-news-sitemap.xml.gz"),
        "https://shinpaideshou.wordpress.com",
        server,
    )
    index = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "<sitemap><loc>/sitemaps/2009.xml</loc><lastmod>2009-12-31</lastmod></sitemap>\n"
        "<sitemap><loc>/sitemaps/articles.xml.gz</loc><lastmod>2015-05-03</lastmod></sitemap>\n"
        "<sitemap><loc>/sitemaps/news.xml</loc><lastmod>2017-04-25T10:00:36Z</lastmod></sitemap>\n"
        "</sitemapindex>\n"
    ).replace("<loc>/", f"<loc>{server.base_url}/")
    too_big = b"<urlset>" + b" " * MAX_BYTES + b"</urlset>"
    nested = {
        f"/nested/{n}.xml": Route(200, XML, sitemap_index(server.url(f"/nested/{n + 1}.xml")))
        for n in range(3)
    }
    server.routes.update(
        {
            "/robots.txt": Route(
                200,
                (("Content-Type", "text/plain"),),
                b"User-agent: *\nDisallow: /private/\n"
                b"Sitemap: /sitemap_index.xml\nSitemap: /nested/0.xml\n",
            ),
            "/": front_page(),
            "/sitemap_index.xml": Route(200, XML, index.encode()),
            "/sitemaps/articles.xml.gz": Route(
                200, (("Content-Type", "application/x-gzip"),), gzip.compress(articles)
            ),
            "/sitemaps/news.xml": Route(200, XML, news),
            "/sitemaps/2009.xml": Route(200, XML, fixture("feeds/sitemap-news.xml.gz")),
            "/sitemaps/huge.xml": Route(200, XML, too_big),
            "/sitemaps/bomb.xml.gz": Route(200, XML, gzip.compress(too_big)),
            **nested,
        }
    )
    article_urls = [link.url for link in parse_sitemap(articles).links]
    news_urls = [link.url for link in parse_sitemap(news).links]
    serve_articles(server, article_urls + news_urls)
    return article_urls, news_urls


def sitemap_index(*urls: str) -> bytes:
    children = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{children}'
        "</sitemapindex>"
    ).encode()


def snapshot_count(db_url: str) -> int:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        count = len(conn.execute(select(article_snapshot.c.article_id)).all())
    engine.dispose()
    return count


def test_articles_found_only_through_feeds_and_sitemaps(db_url: str, tmp_path: Path) -> None:
    with ReplayServer({}) as blog, ReplayServer({}) as news:
        rss_urls, atom_urls = blog_routes(blog)
        article_urls, news_urls = news_routes(news)
        sites = [
            {
                "name": "blog",
                "url": blog.url("/"),
                "type": "content_farm",
                "config": {
                    "article": BLOG_ARTICLE,
                    "feeds": [blog.url("/atom.xml"), blog.url("/home.xml"), blog.url("/feed.json")],
                    "delay": 0,
                },
            },
            {
                "name": "news",
                "url": news.url("/"),
                "type": "news",
                "config": {
                    "article": NEWS_ARTICLE,
                    "sitemaps": [news.url("/sitemaps/huge.xml"), news.url("/sitemaps/bomb.xml.gz")],
                    "delay": 0,
                },
            },
        ]
        settings = ("-s", f"FEEDS_MAX_BYTES={MAX_BYTES}", "-s", "FEEDS_SITEMAPS_PER_INDEX=2")
        run = load_and_crawl(db_url, tmp_path, sites, *settings)

        wanted_news = [url for url in article_urls if "/news/" in url] + news_urls
        assert (len(rss_urls), len(atom_urls), len(wanted_news)) == (20, 9, 52 + 3)
        stored = articles_by_url(db_url)
        assert set(stored) == {*rss_urls, *atom_urls, *wanted_news}
        for url in rss_urls + atom_urls + wanted_news:
            path = urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else "")
            server = blog if url.startswith(blog.base_url) else news
            assert server.hits[path] == 1, url
            assert stored[url]["snapshot_count"] == 1, url
        assert snapshot_count(db_url) == 20 + 9 + 55

        # Publication times as the feeds and the news sitemap give them; a plain sitemap's
        # lastmod is not one.
        first_rss = blog.url("/news/database/interface/detailstander.asp?ID=108725")
        assert stored[first_rss]["published_at"] == utc(2005, 12, 30, 15, 26, 28)
        assert all(stored[url]["published_at"] for url in rss_urls + atom_urls + news_urls)
        assert stored[news_urls[0]]["published_at"] == utc(2017, 4, 25, 10, 0, 36)
        assert all(stored[url]["published_at"] is None for url in wanted_news[:52])

        # The index's two newest sitemaps are read, the 2009 one is not.
        assert news.hits["/sitemaps/2009.xml"] == 0
        assert news.hits["/sitemaps/articles.xml.gz"] == news.hits["/sitemaps/news.xml"] == 1
        assert stat(run, "zeroarchive/sitemaps/children_skipped") == 1
        assert stat(run, "zeroarchive/sitemaps/discovered") == 2
        # An index in an index is followed, one in that is not.
        assert [news.hits[f"/nested/{n}.xml"] for n in range(4)] == [1, 1, 1, 0]
        assert stat(run, "zeroarchive/sitemaps/too_deep") == 1
        assert stat(run, "zeroarchive/feeds/discovered") == 1
        assert stat(run, "zeroarchive/feeds/entries") == 29
        assert stat(run, "zeroarchive/sitemaps/entries") == 74 + 3
        assert stat(run, "zeroarchive/sitemaps/not_article") == 74 - 52

        # Bad documents: an error and a stat each, and everything else went on.
        assert stat(run, "zeroarchive/errors/bad_feed") == 2
        assert stat(run, "zeroarchive/errors/too_large") == 2
        assert stat(run, "zeroarchive/list_page_failures") == 4
        assert f"cannot read the feed {blog.url('/home.xml')}" in run.output
        assert "an HTML page, not a feed" in run.output
        assert f"cannot read the sitemap {news.url('/sitemaps/bomb.xml.gz')}" in run.output
        # The blog's missing robots.txt is no failure of the blog.
        assert stat(run, "zeroarchive/sitemaps/robots_txt_http_404") == 1
        # List pages: the blog's front page and 2 feeds, the news site's front page, index,
        # 2 sitemaps and 3 nested indexes (robots.txt is not one); "last list ok" is set.
        assert stat(run, "zeroarchive/list_pages") == 3 + 4 + 3
        assert all(list_ok_at(db_url).values())

        again = crawl(db_url, tmp_path, "-a", "site=news", *settings)
        assert stat(again, "zeroarchive/articles_new") == 0
        assert stat(again, "zeroarchive/articles_found") == 55
        assert news.hits["/sitemaps/news.xml"] == 2


def test_discover_false_reads_only_the_listed_feeds(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with ReplayServer({}) as blog:
        _, atom_urls = blog_routes(blog)
        site = {
            "name": "blog",
            "url": blog.url("/"),
            "type": "news",
            "config": {
                "article": BLOG_ARTICLE,
                "feeds": blog.url("/atom.xml"),
                "discover": False,
                "delay": 0,
            },
        }
        load_and_crawl(db_url, tmp_path, [site])
        assert blog.hits["/rss.xml"] == 0
        # Only Scrapy's robots.txt middleware read it, not the spider for sitemaps.
        assert blog.hits["/robots.txt"] == 1
        assert set(articles_by_url(db_url)) == set(atom_urls)


def test_feeds_and_sitemaps_are_plain_list_requests_of_the_site(tmp_path: Path) -> None:
    crawler = get_crawler(
        GenericSpider, project_settings(ZEROARCHIVE_DB_URL=f"sqlite:///{tmp_path / 'a.db'}")
    )
    spider = GenericSpider.from_crawler(crawler)
    config = {
        "article": r"/a/\d+",
        "render": True,
        "feeds": "https://news.example.com/rss.xml",
        "sitemaps": ["https://news.example.com/sitemap.xml.gz"],
    }
    site = Site(3, "example", "https://news.example.com/news/", "news", parse_config(config, "x"))
    front, feed, sitemap, robots = spider.discovery_requests(site)
    assert front.meta["playwright"] is True
    assert [feed.url, sitemap.url, robots.url] == [
        "https://news.example.com/rss.xml",
        "https://news.example.com/sitemap.xml.gz",
        "https://news.example.com/robots.txt",
    ]
    for request, kind in ((feed, "feed"), (sitemap, "sitemap"), (robots, "robots")):
        assert "playwright" not in request.meta
        assert request.meta[META_KEY] == {
            "site_id": 3,
            "kind": "list",
            "depth": 0,
            "page_kind": kind,
        }
        assert request.meta["download_maxsize"] == 16 * 1024 * 1024
        assert request.priority == front.priority
    assert (feed.callback, sitemap.callback, robots.callback) == (
        spider.parse_feed,
        spider.parse_sitemap,
        spider.parse_robots,
    )
    # `scrapy schedule` builds its spiders without a crawler: the size cap then comes with
    # the worker that reads the answer.
    plain = Site(3, "example", site.url, "news", parse_config({**config, "render": False}, "x"))
    _, queued_feed, *_ = GenericSpider().discovery_requests(plain)
    assert queued_feed.url == feed.url and "download_maxsize" not in queued_feed.meta


def first_entries(feed: bytes, keep: int) -> bytes:
    """An RSS feed with only its first ``keep`` items."""
    items = list(re.finditer(rb"<item[ >].*?</item>\s*", feed, re.S))
    for item in reversed(items[keep:]):
        feed = feed[: item.start()] + feed[item.end() :]
    return feed


@pytest.mark.usefixtures("chromium")
def test_a_rendered_site_reads_its_feed_without_the_browser(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with RecordingServer({}) as blog:
        blog_routes(blog)
        # Two of the feed's 20 entries: each article is a page the browser renders.
        rss = first_entries(blog.routes["/rss.xml"].body, 2)
        blog.routes["/rss.xml"] = Route(200, XML, rss)
        rss_urls = [link.url for link in parse_feed(rss, blog.url("/rss.xml"))]
        assert len(rss_urls) == 2
        site = {
            "name": "blog",
            "url": blog.url("/"),
            "type": "news",
            "config": {"article": BLOG_ARTICLE, "render": True, "delay": 0},
        }
        run = load_and_crawl(db_url, tmp_path, [site])
    browsed = {seen.path for seen in blog.seen if seen.headers.get("Sec-Fetch-Mode")}
    plain = {seen.path for seen in blog.seen if not seen.headers.get("Sec-Fetch-Mode")}
    # The front page went through Chromium (which found the feed link in it), the feed not.
    assert "/" in browsed
    assert {"/rss.xml", "/robots.txt"} <= plain
    assert stat(run, "zeroarchive/feeds/discovered") == 1
    assert set(rss_urls) <= set(articles_by_url(db_url))
