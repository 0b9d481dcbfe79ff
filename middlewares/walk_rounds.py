"""Every request a walk's page yields for the same site's walk (the next list pages, the
feeds a front page links to, a sitemap index's sitemaps, a login's next step) carries the
walk's ``round``, however the spider built it: so the walk's pages are de-duplicated per
walk, not per hour, and redis counts them on the walk's counter until the last is
answered (zeroarchive/distributed/walks.py). Requests the dispatcher queued carry it from
the start; without one (an embedded crawl) nothing changes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from zeroarchive.core.request_meta import META_KEY
from zeroarchive.distributed.walks import WALK_KINDS, walk_of


def carry_round(response: Response, output: Any) -> Any:
    """``output`` of ``response``'s callback, given the walk's round if it is a page of it."""
    if not isinstance(output, Request) or response.request is None:
        return output
    walk = walk_of(response.request)
    meta = output.meta.get(META_KEY)
    if walk is None or not isinstance(meta, dict) or meta.get("kind") not in WALK_KINDS:
        return output
    if meta.get("site_id") == walk[0] and "round" not in meta:
        meta["round"] = walk[1]
    return output


class WalkRoundsSpiderMiddleware:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WalkRoundsSpiderMiddleware:
        return cls()

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for output in result:
            yield carry_round(response, output)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            yield carry_round(response, output)
