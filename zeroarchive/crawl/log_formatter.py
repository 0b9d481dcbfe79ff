"""Scrapy's log formatter, without the two DEBUG records it makes for every page when no
handler of the crawl shows DEBUG: "Crawled (200) <GET ...>" for each answer and "Scraped
from <200 ...>" for each item (a stored page, a list page's links). Scrapy's logger makes
them whatever the crawl's ``LOG_LEVEL`` (its root logger lets every level through; the
handler drops them), and a record is made by walking the caller's stack: 1.7 % of a
distributed worker's main thread in a py-spy profile of bench/crawl_distributed.py, and
the crawls that make most of them are those that log least. With ``-L DEBUG`` (or any
handler that shows DEBUG) they are made and logged as before.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.http import Request, Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from scrapy.spiders import Spider
from twisted.python.failure import Failure

from zeroarchive.core.quiet_log import lowest_shown_level


class QuietLogFormatter(LogFormatter):
    """Whether DEBUG is shown is read once, at the first page (the crawl's handlers are
    installed by then)."""

    _debug_shown: bool | None = None

    def debug_shown(self) -> bool:
        if self._debug_shown is None:
            self._debug_shown = lowest_shown_level() <= logging.DEBUG
        return self._debug_shown

    def crawled(  # type: ignore[override]
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        if not self.debug_shown():
            return None
        return super().crawled(request, response, spider)

    def scraped(  # type: ignore[override]
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        if not self.debug_shown():
            return None
        return super().scraped(item, response, spider)
