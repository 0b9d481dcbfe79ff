"""Refuses requests for URLs longer than the archive accepts (2048 characters), whoever made
them: a link, a redirect's Location, a spider bug."""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request

from zeroarchive.core.urls import MAX_URL_LENGTH

logger = logging.getLogger(__name__)


class UrlTooLong(IgnoreRequest):
    pass


class UrlGuardDownloaderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlGuardDownloaderMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if len(request.url) > MAX_URL_LENGTH:
            if self.crawler.stats:
                self.crawler.stats.inc_value("zeroarchive/urls_rejected/too_long")
            logger.warning(
                "Refusing a %d-character URL (limit %d): %s...",
                len(request.url),
                MAX_URL_LENGTH,
                request.url[:120],
            )
            raise UrlTooLong(f"url_too_long: {len(request.url)} characters")
