"""Reading feeds and sitemaps (zeroarchive/crawl/feeds.py) on real ones: tests/fixtures/feeds
and the Big5 and GB2312 feeds of tests/fixtures/big5-feeds (see their SOURCE.txt)."""

from __future__ import annotations

import calendar
import gzip
import re
from pathlib import Path

import pytest
from scrapy.http import HtmlResponse
from scrapy.settings import Settings

from tests.conftest import project_settings
from zeroarchive.crawl.feeds import (
    BadListDocument,
    FeedsConfig,
    ListedLink,
    feed_links,
    gunzipped,
    newest,
    parse_feed,
    parse_sitemap,
    sitemaps_in_robots,
)

FIXTURES = Path(__file__).parent / "fixtures"
FEEDS = FIXTURES / "feeds"
CHINESE_FEEDS = FIXTURES / "big5-feeds"
CJK = re.compile("[\u4e00-\u9fff]")
MB = 1024 * 1024


def fixture(name: str) -> bytes:
    """A fixture's bytes as the site served them (the .gz of our copy undone once)."""
    raw = (FEEDS / name).read_bytes()
    return raw if name in ("xmlSitemap.gz", "sitemap.txt.gz") else gzip.decompress(raw)


def chinese_feed(name: str) -> bytes:
    return gzip.decompress((CHINESE_FEEDS / name).read_bytes())


def utc(*fields: int) -> int:
    return calendar.timegm((*fields, 0, 0, 0))


# --- feeds ------------------------------------------------------------------------------


def test_atom_feed_gives_links_and_publication_times() -> None:
    links = parse_feed(fixture("DaringFireball.atom.gz"), "https://daringfireball.net/feeds/main")
    assert len(links) == 48
    first = links[0]
    assert first.url == "https://daringfireball.net/thetalkshow/2017/06/26/ep-195"
    assert first.published == utc(2017, 6, 27, 0, 54, 17)
    assert all(link.url.startswith(("http://", "https://")) for link in links)


def test_rss_and_rdf_feeds() -> None:
    rss = parse_feed(fixture("DaringFireball.rss.gz"), "https://daringfireball.net/index.xml")
    assert len(rss) == 47
    assert all(link.published is not None for link in rss)
    news = parse_feed(fixture("livemint.xml.gz"), "https://www.livemint.com/rss/news")
    assert len(news) == 25
    assert news[0].url.startswith("https://www.livemint.com/news/india/pm-modi-xi-jinping-")
    assert news[0].published == utc(2019, 5, 29, 10, 16)
    rdf = parse_feed(fixture("bio.rdf.gz"), "http://connect.biorxiv.org/biorxiv_xml/")
    assert len(rdf) == 30
    assert rdf[0].url == "http://biorxiv.org/cgi/content/short/743294v1?rss=1"
    # RSS 1.0 gives dc:date, a day.
    assert rdf[0].published == utc(2019, 8, 27, 0, 0, 0)


def test_big5_feed_gives_chinese_titles_and_its_links() -> None:
    links = parse_feed(
        chinese_feed("Big5/coolloud.org.tw.xml.gz"), "http://www.coolloud.org.tw/rss.xml"
    )
    assert len(links) == 20
    first = links[0]
    assert first.title.startswith("1226檔下點交之後\n不見棺材不走人 進輪自救會長期抗戰")
    assert first.url == (
        "http://www.coolloud.org.tw/news/database/interface/detailstander.asp?ID=108725"
    )
    assert first.published == utc(2005, 12, 30, 15, 26, 28)


def test_gb2312_feed_gives_chinese_titles_and_its_links() -> None:
    links = parse_feed(chinese_feed("GB2312/lily.blogsome.com.xml.gz"), "http://lily.blogsome.com/")
    assert len(links) == 10
    (encoded,) = [link for link in links if "%" in link.url]
    assert encoded.url == "http://lily.blogsome.com/2004/12/21/%d7%abia/"
    assert encoded.title == "肖申克的救赎"
    westca = parse_feed(chinese_feed("GB2312/14.blog.westca.com.xml.gz"), "http://x.example/")
    assert westca[0].title == "想要飞 却怎么样也飞不高"


@pytest.mark.parametrize("content_type", [None, "text/xml", "application/rss+xml; charset=utf-8"])
def test_every_chinese_feed_decodes_whatever_the_server_says(content_type: str | None) -> None:
    """The declared encoding wins over a missing or wrong charset header: no title of the
    43 Big5 and GB2312 feeds has a replacement character, and most are Chinese."""
    entries = chinese = 0
    feeds = sorted(CHINESE_FEEDS.glob("*/*.xml.gz"))
    for path in feeds:
        if path.name.startswith("_"):
            continue  # an HTML page, below
        links = parse_feed(gzip.decompress(path.read_bytes()), "http://x.example/", content_type)
        assert links, path.name
        for link in links:
            assert "\ufffd" not in link.title, (path.name, link.title)
            assert link.url.startswith("http://"), (path.name, link.url)
        entries += len(links)
        chinese += sum(1 for link in links if CJK.search(link.title))
    assert (entries, chinese) == (551, 391)


@pytest.mark.parametrize(
    "name",
    [
        "big5-feeds/Big5/_chromium_Big5_with_no_encoding_specified.html.gz",
        "big5-feeds/GB2312/_mozilla_bug171813_text.html.gz",
        "feeds/DaringFireball.html.gz",
    ],
)
def test_an_html_page_is_not_a_feed(name: str) -> None:
    with pytest.raises(BadListDocument, match="an HTML page, not a feed") as raised:
        parse_feed(gzip.decompress((FIXTURES / name).read_bytes()), "http://x.example/feed")
    assert raised.value.kind == "not_a_feed"


@pytest.mark.parametrize("name", ["inessential.json.gz", "Subs.opml.gz"])
def test_json_feeds_and_opml_are_not_feeds(name: str) -> None:
    with pytest.raises(BadListDocument, match="not a feed") as raised:
        parse_feed(fixture(name), "http://x.example/feed")
    assert raised.value.kind == "not_a_feed"


def test_a_feed_broken_part_way_keeps_the_entries_before_the_break() -> None:
    body = fixture("DaringFireball.atom.gz")
    cut = body[: len(body) // 2]
    links = parse_feed(cut, "https://daringfireball.net/feeds/main")
    assert 10 < len(links) < 48


def test_relative_entry_links_resolve_against_the_feed() -> None:
    body = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        b"<item><title>a</title><link>/story/1.html</link></item></channel></rss>"
    )
    (link,) = parse_feed(body, "https://news.example/feeds/rss.xml")
    assert link == ListedLink("https://news.example/story/1.html", title="a")


# --- sitemaps ---------------------------------------------------------------------------


def test_news_sitemap_gives_publication_dates_and_titles() -> None:
    sitemap = parse_sitemap(fixture("shinpaideshou-news-sitemap.xml.gz"))
    assert not sitemap.is_index and not sitemap.recovered
    assert [link.published for link in sitemap.links] == [
        utc(2017, 4, 25, 10, 0, 36),
        utc(2017, 4, 24, 10, 0, 33),
        utc(2017, 4, 24, 10, 0, 10),
    ]
    assert sitemap.links[0].title == "Job Opening: Reischauer Policy Research Fellow"
    google = parse_sitemap(fixture("sitemap-news.xml.gz"))
    assert [(link.url, link.published) for link in google.links] == [
        ("http://www.example.org/business/article55.html", utc(2008, 12, 23, 0, 0, 0)),
        ("http://www.example.org/empty_news_name.html", utc(2025, 5, 27, 0, 0, 0)),
    ]


def test_news_site_sitemap_with_extensions() -> None:
    sitemap = parse_sitemap(fixture("hebdenbridgetimes-articles-sitemap.xml.gz"))
    assert len(sitemap.links) == 74
    first = sitemap.links[0]
    assert first.url.endswith("/news/local/video-tour-de-yorkshire-in-calderdale-1-7242580")
    # lastmod is when it changed, not when it was published; the video's date is the video's.
    assert (first.modified, first.published) == (utc(2015, 5, 3, 17, 51, 50), None)
    videos = parse_sitemap(fixture("sitemap-videos.xml.gz"))
    assert all(link.published is None for link in videos.links)


def test_gzipped_and_text_sitemaps() -> None:
    xml = parse_sitemap(gunzipped(fixture("xmlSitemap.gz"), MB))
    assert [link.url for link in xml.links][:2] == [
        "http://www.example.com/",
        "http://www.example.com/catalog?item=12&desc=vacation_hawaii",
    ]
    assert xml.links[0].modified == utc(2005, 1, 1, 0, 0, 0)
    text = parse_sitemap(gunzipped(fixture("sitemap.txt.gz"), MB))
    assert len(text.links) == 5 and not text.is_index
    bom = parse_sitemap(fixture("sitemap-with-bom.txt.gz"))
    assert [link.url for link in bom.links] == [
        "http://www.domain.com/page1.html",
        "http://www.domain.com/page2.html",
    ]


def test_sitemap_index_with_urls_as_element_text() -> None:
    index = parse_sitemap(fixture("sitemap.index.xml.gz"))
    assert index.is_index
    assert len(index.links) == 15
    assert index.links[0].url == "https://example.com/sitemap.jss?portalCode=10260&lang=en"


def test_a_wrong_namespace_is_still_a_sitemap() -> None:
    sitemap = parse_sitemap(fixture("sitemap.badns.xml.gz"))
    assert [link.url for link in sitemap.links] == [
        "http://www.example.com/1",
        "http://www.example.com/2",
    ]


def test_what_is_not_a_sitemap() -> None:
    with pytest.raises(BadListDocument, match=r"root element <feed>") as raised:
        parse_sitemap(fixture("atom.xml.gz"))
    assert raised.value.kind == "not_a_sitemap"
    with pytest.raises(BadListDocument, match=r"root element <html>"):
        parse_sitemap(fixture("DaringFireball.html.gz"))
    for junk in (b"", b"\x00\x01 binary", b'{"json": true}'):
        with pytest.raises(BadListDocument, match="not well-formed XML") as raised:
            parse_sitemap(junk)
        assert raised.value.kind == "bad_xml"


def test_a_sitemap_broken_part_way_keeps_the_entries_before_the_break() -> None:
    body = fixture("hebdenbridgetimes-articles-sitemap.xml.gz")
    sitemap = parse_sitemap(body[: len(body) // 2])
    assert sitemap.recovered
    assert 20 < len(sitemap.links) < 74
    assert sitemap.links[0].url.endswith("-1-7242580")


def test_gzip_bombs_and_broken_gzip_are_refused() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * (4 * MB) + b"</urlset>")
    assert len(bomb) < 10_000
    with pytest.raises(BadListDocument, match="more than 1048576 bytes") as raised:
        gunzipped(bomb, MB)
    assert raised.value.kind == "too_large"
    with pytest.raises(BadListDocument, match="more than 1048576 bytes") as raised:
        gunzipped(b"<urlset>" + b" " * MB + b"</urlset>", MB)
    assert raised.value.kind == "too_large"
    with pytest.raises(BadListDocument, match="broken gzip") as raised:
        gunzipped(b"\x1f\x8b\x08\x00garbage", MB)
    assert raised.value.kind == "bad_gzip"


def test_newest_children_of_an_index_by_lastmod() -> None:
    dated = [
        ListedLink(f"https://x.example/sitemap-{year}.xml", modified=utc(year, 1, 1, 0, 0, 0))
        for year in range(2000, 2026)
    ]
    children = (*dated, ListedLink("https://x.example/undated.xml"))
    kept, left_out = newest(children, 3)
    assert [link.url.rsplit("-", 1)[1] for link in kept] == ["2025.xml", "2024.xml", "2023.xml"]
    assert left_out == 24


# --- where sites name them --------------------------------------------------------------


def test_feed_links_of_a_real_front_page() -> None:
    page = HtmlResponse(
        "https://daringfireball.net/", body=fixture("DaringFireball.html.gz"), encoding="utf-8"
    )
    assert feed_links(page) == ["https://daringfireball.net/feeds/main"]


def test_sitemaps_named_in_robots_txt() -> None:
    robots = (
        b"User-agent: *\nDisallow: /private/\n\n"
        b"Sitemap: /sitemap_index.xml\nSITEMAP:  https://cdn.example/news.xml.gz \n"
    )
    assert sitemaps_in_robots(robots, "https://news.example/robots.txt") == [
        "https://news.example/sitemap_index.xml",
        "https://cdn.example/news.xml.gz",
    ]


def test_config_from_settings() -> None:
    config = FeedsConfig.from_settings(Settings(project_settings()))
    assert config == FeedsConfig(max_bytes=16 * MB, sitemaps_per_index=10)
    with pytest.raises(ValueError, match="FEEDS_SITEMAPS_PER_INDEX"):
        FeedsConfig.from_settings(Settings(project_settings(FEEDS_SITEMAPS_PER_INDEX=0)))
