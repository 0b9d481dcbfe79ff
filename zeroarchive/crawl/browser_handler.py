"""scrapy-playwright's download handler, one per crawl for both of its schemes.

Scrapy builds a handler for every scheme in ``DOWNLOAD_HANDLERS``, and scrapy-playwright's
starts its own Playwright driver (a node process, ~0.45 CPU s) when the engine starts: mapped
to http and https, a crawl started two drivers, and a site whose pages are on both schemes
got two Chromiums. Kept apart from browser.py: importing it imports Playwright, which a crawl
that renders nothing never needs.
"""

from __future__ import annotations

import weakref
from typing import Any

from scrapy.crawler import Crawler
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

_handlers: weakref.WeakKeyDictionary[Crawler, SharedBrowserHandler] = weakref.WeakKeyDictionary()


class SharedBrowserHandler(ScrapyPlaywrightDownloadHandler):
    """The same handler (one driver, one browser) for every scheme of a crawler, closed
    once."""

    _closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        handler = _handlers.get(crawler)
        if handler is None:
            handler = _handlers[crawler] = cls(crawler)
        return handler

    async def close(self) -> None:
        # Scrapy closes the handler of each scheme: this one is both.
        if self._closed:
            return
        self._closed = True
        await super().close()
