"""Turns block pages (bot challenges, captchas, login walls, a site's own ``blocked``
text) into failures of kind ``blocked`` before any spider sees them: the request's errback
counts them and backs the article off, and no snapshot is stored.

Runs before the retry middleware (a challenge answered again at once is the same
challenge; the article's back-off tries again later).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from zeroarchive.core.errors import BlockedPage
from zeroarchive.core.request_meta import archive_meta, site_id_of
from zeroarchive.core.stats import count
from zeroarchive.crawl.blocks import block_reason

logger = logging.getLogger(__name__)


class BlockPagesDownloaderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BlockPagesDownloaderMiddleware:
        if not crawler.settings.getbool("BLOCK_PAGES_ENABLED"):
            raise NotConfigured("BLOCK_PAGES_ENABLED is off")
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        site_id = site_id_of(request)
        # A media item is judged by its own bytes (zeroarchive/media/fetch.py: not-media).
        if site_id is None or not 200 <= response.status < 300 or is_media_request(request):
            return response
        site: Any = None
        site_of = getattr(self.crawler.spider, "site_of", None)
        if site_of is not None:
            site = site_of(request)
        headers = {
            key.decode("latin-1").lower(): b", ".join(values).decode("latin-1")
            for key, values in response.headers.items()
        }
        patterns = site.config.blocked if site is not None else ()
        reason = block_reason(headers, response.body, patterns)
        if reason is None:
            return response
        # errors/blocked is counted by the errback, with the request's other failures.
        count(self.crawler.stats, f"blocked/{reason}", site_id)
        logger.warning("Block page (%s) instead of %s: not archived", reason, response.url)
        raise BlockedPage(reason, response.url)


def is_media_request(request: Request) -> bool:
    return archive_meta(request).get("kind") == "media"
