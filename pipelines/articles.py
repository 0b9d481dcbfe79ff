"""Stores the article links that list pages yield: new URLs become Articles, due now."""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy.crawler import Crawler

from zeroarchive.archive import Archive, open_archive
from zeroarchive.archive_spider import now
from zeroarchive.items import ArticleLinks
from zeroarchive.stats import count


class ArticlesPipeline:
    def __init__(self, crawler: Crawler, archive: Archive) -> None:
        self.crawler = crawler
        self.archive = archive

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ArticlesPipeline:
        return cls(crawler, open_archive(crawler.settings))

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, ArticleLinks):
            return item
        # One round trip per list page, however many links it holds.
        new = await asyncio.to_thread(
            self.archive.articles.add, item.site_id, item.article_type, item.urls, now()
        )
        count(self.crawler.stats, "articles_found", item.site_id, len(item.urls))
        count(self.crawler.stats, "articles_new", item.site_id, new)
        return item
