"""The crawl's log says no password: Scrapy logs the URL of every request in its own lines
("Crawled (200) <GET url>", "Redirecting (301) to <GET url> from <GET url>", retries,
download errors, the overridden settings with their database and redis URLs), as do our
spiders and middlewares. An extension, so every crawl has it (`scrapy crawl`, `scrapy
save`, a crawler a test runs): it makes every log record of the process a
zeroarchive.core.shown.MaskedLogRecord before the crawler logs its settings."""

from __future__ import annotations

from scrapy.crawler import Crawler

from zeroarchive.core.shown import mask_logs


class MaskedLogs:
    """Credentials of URLs masked and control characters escaped in every log line."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MaskedLogs:
        mask_logs()
        return cls()
