"""Stores the article links that list pages yield: new URLs become Articles, due now."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler

from zeroarchive.core.clock import now
from zeroarchive.core.db_retry import write_with_retry
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.signals import articles_stored
from zeroarchive.core.stats import count
from zeroarchive.storage.archive import Archive, open_archive


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
        found_at = now()
        new = await write_with_retry(
            lambda: self.archive.articles.add(
                item.site_id, item.article_type, item.urls, found_at, item.published
            ),
            "article links",
            self.crawler.settings.getfloat("ZEROARCHIVE_DB_RETRY_SECONDS"),
            self.crawler.stats,
        )
        count(self.crawler.stats, "articles_found", item.site_id, len(item.urls))
        count(self.crawler.stats, "articles_new", item.site_id, new)
        # Walking spiders decide from `new` whether older list pages are worth a request.
        self.crawler.signals.send_catch_log(articles_stored, item=item, new=new)
        return item
