"""Each stored page's media (zeroarchive/media/): every ``FetchedPage`` a spider yields, of
any source, is followed by the requests of the images, stylesheets and videos it shows
(its site's ``media`` kinds), when it is a first snapshot or a changed version. The
requests go back through the scheduler, so they ride the crawl's queue (redis too),
politeness, proxies, robots rules and private-target refusals as pages do. An item this
crawl fetched within ``ZEROARCHIVE_MEDIA_REUSE_SECONDS`` is recorded from what it holds,
not fetched again (0: every item is fetched for every snapshot)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.settings import BaseSettings

from zeroarchive.core.environment import from_environment
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count

if TYPE_CHECKING:
    from zeroarchive.media.fetch import MediaReuse


def media_enabled(settings: BaseSettings) -> bool:
    """``ZEROARCHIVE_MEDIA_ENABLED``: the environment variable, else the setting.

    >>> from scrapy.settings import Settings
    >>> media_enabled(Settings({"ZEROARCHIVE_MEDIA_ENABLED": False}))
    False
    """
    value = from_environment("ZEROARCHIVE_MEDIA_ENABLED", settings)
    return value is not None and value.strip().lower() not in ("0", "false", "no", "off")


class MediaSpiderMiddleware:
    def __init__(self, crawler: Crawler, reuse_seconds: float = 0.0) -> None:
        self.crawler = crawler
        # What this crawl fetched lately, not fetched again (zeroarchive/media/fetch.py);
        # the spider's media callback keeps what it got there.
        self.reuse: MediaReuse | None = None
        if reuse_seconds > 0:
            from zeroarchive.media.fetch import MediaReuse

            self.reuse = MediaReuse(reuse_seconds)
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MediaSpiderMiddleware:
        if not media_enabled(crawler.settings):
            raise NotConfigured("ZEROARCHIVE_MEDIA_ENABLED is off")
        seconds = crawler.settings.getfloat("ZEROARCHIVE_MEDIA_REUSE_SECONDS")
        if seconds < 0:
            raise ValueError("ZEROARCHIVE_MEDIA_REUSE_SECONDS must not be negative")
        return cls(crawler, seconds)

    def spider_opened(self, spider: Any) -> None:
        spider.media_reuse = self.reuse

    def _follow(self, response: Response, output: Any) -> Iterator[Any]:
        yield output
        if not isinstance(output, FetchedPage):
            return
        spider = self.crawler.spider
        site_of = getattr(spider, "site", None)
        site = site_of(output.site_id) if site_of is not None else None
        if site is None:
            return
        from zeroarchive.media.fetch import media_outputs

        meta = response.meta.get(META_KEY, {})
        n = 0
        for follow in media_outputs(output, site, meta.get("last_hash"), spider, self.reuse):
            n += 1
            yield follow
        if n:
            count(self.crawler.stats, "media/pages", output.site_id)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for output in result:
            yield from self._follow(response, output)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            for follow in self._follow(response, output):
                yield follow
