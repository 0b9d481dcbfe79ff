"""List pages go ahead of snapshots in every spider: a walk goes one list page at a time,
and a list page queued behind every snapshot would set the pace of discovery. Every source
of the registry is checked: a new source without an example site here fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.spiderloader import SpiderLoader
from scrapy.utils.test import get_crawler

from tests.conftest import project_settings
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.sites.record import Site, parse_config, parse_spec
from zeroarchive.sources import SOURCES, Source
from zeroarchive.storage.articles import DueArticle

# An example site of every source: (url, config).
EXAMPLES = {
    "generic": ("https://news.example.com/", {"article": r"/a/\d+"}),
    "ptt": ("https://www.ptt.cc/bbs/Gossiping/index.html", {}),
    "dcard": ("https://www.dcard.tw/f/trending", {}),
    "facebook": ("https://www.facebook.com/examplepage", {}),
    "youtube": ("https://www.youtube.com/channel/UCK8sQmJBp8GCxrOtXWBpyEA", {}),
}


def test_every_source_has_an_example() -> None:
    assert set(EXAMPLES) == {source.name for source in SOURCES}


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_list_pages_go_ahead_of_snapshots(source: Source, tmp_path: Path) -> None:
    name = source.name
    spider_cls = SpiderLoader(Settings({"SPIDER_MODULES": ["spiders"]})).load(name)
    assert issubclass(spider_cls, ArchiveSpider) and spider_cls.source is source
    crawler = get_crawler(
        spider_cls, project_settings(ZEROARCHIVE_DB_URL=f"sqlite:///{tmp_path / 'a.db'}")
    )
    spider = spider_cls.from_crawler(crawler)
    url, config = EXAMPLES[name]
    spec = parse_spec(
        {"name": "example", "url": url, "type": spider.site_types[0], "config": config}
    )
    site = Site(1, "example", spec.url, spec.type, parse_config(spec.config, "example"))
    first_list = next(iter(spider.discovery_requests(site)))
    snapshot = spider.snapshot_request(site, DueArticle(7, 1, spec.url + "post/1", "Article"))
    assert first_list.priority == source.list_priority
    assert snapshot.priority < first_list.priority
