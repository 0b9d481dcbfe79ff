"""The source registry: one record per source, and everything read from it agrees."""

from __future__ import annotations

import inspect

import pytest
from scrapy.settings import Settings
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.misc import load_object

from zeroarchive import sources
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.sources import (
    SOURCES,
    SiteUrlError,
    Source,
    label_types,
    platform_of,
    resolve_type,
    site_type_names,
    source_for_article_type,
    source_for_type,
)


def test_each_site_type_and_article_type_belongs_to_one_source() -> None:
    types = [kind.name for source in SOURCES for kind in source.site_types]
    assert len(types) == len(set(types)) == len(site_type_names())
    assert len({source.article_type for source in SOURCES}) == len(SOURCES)
    assert len({source.name for source in SOURCES}) == len(SOURCES)
    for source in SOURCES:
        assert source_for_article_type(source.article_type) is source
        for kind in source.type_names:
            assert source_for_type(kind) is source


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_every_source_has_its_spider_and_parser(source: Source) -> None:
    spider = SpiderLoader(Settings({"SPIDER_MODULES": ["spiders"]})).load(source.name)
    assert issubclass(spider, ArchiveSpider)
    assert spider.source is source and spider.name == source.name
    parser = load_object(source.parser.replace(":", "."))
    assert list(inspect.signature(parser).parameters)[:3] == ["raw", "encoding", "url"]
    assert len(inspect.signature(parser).parameters) == 4


def test_a_spider_named_unlike_its_source_is_refused() -> None:
    with pytest.raises(TypeError, match="must be its source's name 'ptt'"):
        type("Wrong", (ArchiveSpider,), {"name": "wrong", "source": sources.ptt.SOURCE})


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_labels_and_aliases_mean_types_of_their_own_source(source: Source) -> None:
    labels = label_types()
    for label, kind in source.labels.items():
        assert source_for_type(kind) is source
        assert sources.fits(label, source)
        # A label two sources claim means the first's type off their platforms.
        first = next(s for s in SOURCES if label in s.labels)
        assert labels[sources.normalise_label(label)] == first.labels[label]
    for kind in source.site_types:
        for alias in kind.aliases:
            assert resolve_type(alias) == kind.name


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("https://www.ptt.cc/bbs/Gossiping/index.html", "ptt"),
        ("https://ptt.cc/bbs/Gossiping/index.html", "ptt"),
        ("https://www.dcard.tw/f/trending", "dcard"),
        ("https://m.dcard.tw/f/trending", "dcard"),
        ("https://www.facebook.com/MOHW.Taiwan/", "facebook"),
        ("https://m.facebook.com/groups/1/", "facebook"),
        ("https://mbasic.facebook.com/TaiwanNoOne", "facebook"),
        ("https://web.facebook.com/TaiwanNoOne", "facebook"),
        ("https://fb.com/TaiwanNoOne", "facebook"),
        ("https://www.youtube.com/@setnews", "youtube"),
        ("https://m.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ", "youtube"),
        ("https://youtu.be/2lAe1cqCOXo", "youtube"),
        ("https://www.cna.com.tw/", None),
        ("https://notfacebook.com/x", None),
        ("https://facebook.com.evil.example/x", None),
        ("http://127.0.0.1:8080/bbs/LoL/index.html", None),
    ],
)
def test_platforms_are_known_by_their_hosts(url: str, source: str | None) -> None:
    found = platform_of(url)
    assert (found.name if found else None) == source


@pytest.mark.parametrize(
    ("source", "url", "expected"),
    [
        ("ptt", "https://www.ptt.cc/bbs/Gossiping", "https://www.ptt.cc/bbs/Gossiping/index.html"),
        ("ptt", "https://www.ptt.cc/bbs/Gossiping/index39000.html", "https://www.ptt.cc/bbs/Gossiping/index.html"),
        ("ptt", "http://127.0.0.1:9/mirror/bbs/LoL/", "http://127.0.0.1:9/mirror/bbs/LoL/index.html"),
        ("dcard", "https://www.dcard.tw/f/trending/?latest=true", "https://www.dcard.tw/f/trending"),
        ("facebook", "https://www.facebook.com/MOHW.Taiwan/?ref=page_internal", "https://m.facebook.com/MOHW.Taiwan/posts/"),
        ("facebook", "https://www.facebook.com/pg/MOHW.Taiwan/posts/?__tn__=%2Cd", "https://m.facebook.com/MOHW.Taiwan/posts/"),
        ("facebook", "https://www.facebook.com/MOHW.Taiwan/posts/123456789/", "https://m.facebook.com/MOHW.Taiwan/posts/"),
        ("facebook", "https://www.facebook.com/groups/twgov/permalink/123/?__xts__=1", "https://m.facebook.com/groups/twgov/"),
        ("facebook", "https://www.facebook.com/profile.php?id=100064&ref=br_rs", "https://m.facebook.com/profile.php?id=100064"),
        ("youtube", "https://m.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ/videos", "https://www.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ"),
        ("youtube", "https://www.youtube.com/user/TheVolvorocks/featured?app=desktop", "https://www.youtube.com/user/TheVolvorocks"),
        ("youtube", "https://www.youtube.com/c/TTVNEWSview", "https://www.youtube.com/c/TTVNEWSview"),
        ("generic", "https://www.cna.com.tw/list/aall.aspx?x=1", "https://www.cna.com.tw/list/aall.aspx?x=1"),
    ],
)  # fmt: skip
def test_site_urls_are_normalised_to_what_the_spider_walks(
    source: str, url: str, expected: str
) -> None:
    assert sources.source_named(source).site_url(url) == expected


@pytest.mark.parametrize(
    ("source", "url", "says"),
    [
        ("ptt", "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html", "not a PTT board"),
        ("ptt", "https://www.ptt.cc/", "not a PTT board"),
        ("dcard", "https://www.dcard.tw/f/funny/p/224362515", "not a Dcard forum"),
        ("dcard", "https://www.dcard.tw/", "not a Dcard forum"),
        ("facebook", "https://www.facebook.com/", "not a Facebook page or group"),
        ("facebook", "https://www.facebook.com/search/top?q=x", "not a Facebook page or group"),
        ("facebook", "https://www.facebook.com/watch/?v=1", "not a Facebook page or group"),
        ("facebook", "https://www.facebook.com/story.php?story_fbid=1&id=2", "not a Facebook"),
        ("facebook", "https://www.facebook.com/profile.php", "not a Facebook page or group"),
        ("youtube", "https://www.youtube.com/watch?v=2lAe1cqCOXo", "not a YouTube channel"),
        ("youtube", "https://youtu.be/2lAe1cqCOXo", "not a YouTube channel"),
        ("youtube", "https://www.youtube.com/results?search_query=x", "not a YouTube channel"),
    ],
)
def test_urls_a_spider_cannot_archive_are_refused(source: str, url: str, says: str) -> None:
    with pytest.raises(SiteUrlError, match=says):
        sources.source_named(source).site_url(url)


def test_unknown_names_say_what_is_known() -> None:
    with pytest.raises(KeyError, match="known: generic, ptt"):
        sources.source_named("tiktok")
    with pytest.raises(KeyError, match="no source archives articles of type 'Tweet'"):
        source_for_article_type("Tweet")
