"""Walking a chain of list pages (PTT's previous-page links, Dcard's ``before=`` pages) and
stopping early once pages in a row bring nothing new.

A walking spider yields a ``WalkedListPage``: the page's article links plus where the walk
goes next. The ArticlesPipeline stores the links and reports how many were new (the
``articles_stored`` signal), and only then is the next page requested. Knowing "new" thus
costs no database round trip of its own, and the walk's state travels in the item and in
request meta, never in the spider, so any worker of a distributed crawl can go on with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request

from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.signals import articles_stored
from zeroarchive.crawl.due_work import LinksClaim
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.sites.record import Site

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WalkedListPage(ArticleLinks):
    """Article links of one list page of a walk, and the page that comes after it."""

    next_url: str | None = None
    #: The list page request's own meta (site id, depth, stale run, round, ...).
    walk: Mapping[str, Any] = field(default_factory=dict)


def next_stale_run(new: int, stale_run: int, stale_limit: int) -> int | None:
    """Pages in a row with nothing new after this one, or None when the walk stops here.

    ``stale_limit`` 0 never stops early.

    >>> next_stale_run(new=3, stale_run=1, stale_limit=2)
    0
    >>> next_stale_run(new=0, stale_run=0, stale_limit=2)
    1
    >>> next_stale_run(new=0, stale_run=1, stale_limit=2) is None
    True
    >>> next_stale_run(new=0, stale_run=9, stale_limit=0)
    10
    """
    run = 0 if new else stale_run + 1
    if stale_limit and run >= stale_limit:
        return None
    return run


class ListWalkSpider(ArchiveSpider):
    """An ArchiveSpider whose list pages form a chain walked one page at a time."""

    stale_limit = 2

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ListWalkSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, ListWalkSpider)
        spider.stale_limit = crawler.settings.getint("ZEROARCHIVE_STALE_LIST_PAGES")
        if spider.stale_limit < 0:
            raise ValueError("ZEROARCHIVE_STALE_LIST_PAGES must be 0 (never) or more")
        crawler.signals.connect(spider._on_articles_stored, articles_stored)
        return spider

    def list_request(self, site: Site, url: str, walk: Mapping[str, Any]) -> Request:
        """The request of one list page; ``walk`` holds ``depth`` and ``stale_run``."""
        raise NotImplementedError

    def first_list_request(self, site: Site, url: str) -> Request:
        """The first page of the chain: the walk's tracked page (its own interval)."""
        return self.list_request(site, url, {"depth": 0, "stale_run": 0, "page_kind": "page"})

    def list_meta(self, site: Site, walk: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        """Request meta of a list page: the site's meta carrying the walk's state."""
        fields = {k: v for k, v in walk.items() if k not in ("site_id", "kind")}
        return self.request_meta(site, "list", **{**fields, **extra})

    def walked(
        self,
        site: Site,
        source_url: str,
        urls: list[str],
        next_url: str | None,
        walk: Mapping[str, Any],
    ) -> Iterator[Any]:
        """What a list page callback yields: its links, or straight on to the next page."""
        if next_url is not None and walk["depth"] >= site.config.depth:
            next_url = None
        if urls:
            yield WalkedListPage(
                site.site_id,
                self.source.article_type,
                source_url,
                tuple(dict.fromkeys(urls)),
                next_url=next_url,
                walk=dict(walk),
            )
            return
        request = self._next_request(site, next_url, walk, new=0)
        if request is not None:
            yield request

    def _next_request(
        self, site: Site, next_url: str | None, walk: Mapping[str, Any], new: int
    ) -> Request | None:
        if next_url is None:
            return None
        run = next_stale_run(new, walk["stale_run"], self.stale_limit)
        if run is None:
            logger.info(
                "Site %s (#%d): %d list page(s) in a row with nothing new; not walking on to %s",
                site.name,
                site.site_id,
                self.stale_limit,
                next_url,
            )
            return None
        # The pages after the first belong to its walk: not tracked of their own.
        walk = {k: v for k, v in walk.items() if k != "page_kind"}
        return self.list_request(
            site, next_url, {**walk, "depth": walk["depth"] + 1, "stale_run": run}
        )

    def links_claim(self, item: ArticleLinks) -> LinksClaim | None:
        """A page the walk goes on from has its links stored alone, so that the next page
        is asked for (``articles_stored``) without waiting for the claim, which comes with
        ``item_scraped``: the chain of pages is a walk's critical path."""
        if isinstance(item, WalkedListPage) and item.next_url is not None:
            return None
        return super().links_claim(item)

    def _on_articles_stored(self, item: Any, new: int) -> None:
        if not isinstance(item, WalkedListPage) or item.next_url is None:
            return
        site = self.sites.get(item.site_id) or self.archive.sites.get(item.site_id)
        if site is None:
            return
        self.sites[site.site_id] = site
        request = self._next_request(site, item.next_url, item.walk, new)
        if request is not None:
            self.crawler.engine.crawl(request)
