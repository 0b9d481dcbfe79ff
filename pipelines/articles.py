"""Stores the article links that list pages yield: new URLs become Articles, due now.

A spider that snapshots new articles as soon as their list page is stored (the archive's
spiders: ``ArchiveSpider.links_claim``) has its site's due articles claimed in the same
transaction as the links, and gets them back (``links_claimed``) once they are: one commit
and one round trip to the database between a list page and its first snapshots, not two
with a turn of the reactor between them."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from scrapy.crawler import Crawler

from zeroarchive.core.clock import now
from zeroarchive.core.db_retry import write_with_retry
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.signals import articles_stored
from zeroarchive.core.stats import count
from zeroarchive.crawl.due_work import LinksClaim, store_and_claim
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.articles import DueArticle


@runtime_checkable
class ClaimingSpider(Protocol):
    """A spider that has due articles claimed with the links it found (ArchiveSpider)."""

    def links_claim(self, item: ArticleLinks) -> LinksClaim | None: ...

    def links_claimed(self, item: ArticleLinks, due: list[DueArticle]) -> None: ...


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
        spider = self.crawler.spider
        claim = spider.links_claim(item) if isinstance(spider, ClaimingSpider) else None
        retry_seconds = self.crawler.settings.getfloat("ZEROARCHIVE_DB_RETRY_SECONDS")
        due: list[DueArticle] = []
        if claim is None:
            new = await write_with_retry(
                lambda: self.archive.articles.add(
                    item.site_id, item.article_type, item.urls, found_at, item.published
                ),
                "article links",
                retry_seconds,
                self.crawler.stats,
            )
        else:
            # On MariaDB the claim can deadlock with a batch of snapshot writes: the whole
            # transaction is retried like any transient write, with the same owner.
            new, due = await write_with_retry(
                lambda: store_and_claim(self.archive, item, found_at, claim),
                "article links and leases",
                retry_seconds,
                self.crawler.stats,
            )
        count(self.crawler.stats, "articles_found", item.site_id, len(item.urls))
        count(self.crawler.stats, "articles_new", item.site_id, new)
        # Walking spiders decide from `new` whether older list pages are worth a request.
        self.crawler.signals.send_catch_log(articles_stored, item=item, new=new)
        if claim is not None:
            assert isinstance(spider, ClaimingSpider)
            spider.links_claimed(item, due)
        return item
