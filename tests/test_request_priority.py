"""List pages go ahead of snapshots in every spider: a walk goes one list page at a time,
and a list page queued behind every snapshot would set the pace of discovery."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from spiders.dcard import DcardSpider
from spiders.facebook import FacebookSpider
from spiders.generic import GenericSpider
from spiders.ptt import PttSpider
from zeroarchive.archive_spider import ArchiveSpider
from zeroarchive.request_meta import LIST_PRIORITY
from zeroarchive.sites import Site, parse_config
from zeroarchive.storage.articles import DueArticle

SITES = {
    GenericSpider: ("news", "https://news.example.com/", {"article": r"/a/\d+"}),
    PttSpider: ("ptt", "https://www.ptt.cc/bbs/Gossiping/index.html", {}),
    DcardSpider: ("dcard", "https://www.dcard.tw/f/trending", {}),
    FacebookSpider: ("facebook", "https://www.facebook.com/examplepage", {}),
}


@pytest.mark.parametrize("spider_cls", list(SITES), ids=lambda c: c.name)
def test_list_pages_go_ahead_of_snapshots(spider_cls: type[ArchiveSpider], tmp_path: Path) -> None:
    kind, url, config = SITES[spider_cls]
    crawler = get_crawler(spider_cls, {"ZEROARCHIVE_DB_URL": f"sqlite:///{tmp_path / 'a.db'}"})
    spider = spider_cls.from_crawler(crawler)
    site = Site(1, "example", url, kind, parse_config(config, "example"))
    first_list = next(iter(spider.discovery_requests(site)))
    snapshot = spider.snapshot_request(site, DueArticle(7, 1, url + "post/1", "Article"))
    assert first_list.priority == LIST_PRIORITY
    assert snapshot.priority < first_list.priority
