"""Lets a browser spider look at each of its browser requests as it reaches the downloader
(not when it was built, which may be long before, or in another process in distributed
mode): the facebook spider waits there for a free page of the site, picks the browser
context, and drops the requests of a site that hit a login wall. Enabled by the spiders
that need it, not project-wide.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from scrapy.crawler import Crawler
from scrapy.http import Request


@runtime_checkable
class BrowserPagesSpider(Protocol):
    async def before_browser_download(self, request: Request) -> None:
        """Awaited for each request with ``meta["playwright"]``; may raise IgnoreRequest."""


class BrowserPagesDownloaderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserPagesDownloaderMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        spider = self.crawler.spider
        if request.meta.get("playwright") and isinstance(spider, BrowserPagesSpider):
            await spider.before_browser_download(request)
