"""A host name that did not resolve fails at once, unretried, for the rest of the run
(middlewares/dns_failures.py); Scrapy's retries would look it up again three times."""

from __future__ import annotations

import pytest
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.http import Request
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

from middlewares.dns_failures import DnsFailuresConfig, DnsFailuresDownloaderMiddleware
from tests.conftest import project_settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_name_that_did_not_resolve_is_not_looked_up_again_nor_retried() -> None:
    crawler = get_crawler(settings_dict=project_settings())
    clock = Clock()
    dns = DnsFailuresDownloaderMiddleware(
        crawler, DnsFailuresConfig.from_settings(crawler.settings), clock
    )
    retry = RetryMiddleware.from_crawler(crawler)
    crawler.stats.open_spider()  # type: ignore[union-attr]
    first = Request("https://gone.example/robots.txt")
    assert dns.process_request(first) is None
    failure = CannotResolveHostError("no results for hostname lookup: gone.example")
    # Scrapy calls process_exception from the downloader outwards: this one, then retry.
    dns.process_exception(first, failure)
    assert retry.process_exception(first, failure) is None
    # The next request to the host fails at once with the lookup's own error.
    later = Request("https://gone.example/news/1")
    with pytest.raises(CannotResolveHostError, match="no results for hostname lookup"):
        dns.process_request(later)
    assert later.meta["dont_retry"] is True
    assert dns.process_request(Request("https://other.example/")) is None
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["dns_failures/hosts"] == 1
    assert stats["dns_failures/requests_failed_at_once"] == 1
    # A worker that never exits looks the name up again after the kept time.
    clock.now += crawler.settings.getfloat("DNS_FAILURES_KEEP_SECONDS")
    assert dns.process_request(Request("https://gone.example/news/2")) is None


def test_without_it_scrapy_retries_the_lookup() -> None:
    crawler = get_crawler(settings_dict=project_settings(DNS_FAILURES_ENABLED=False))
    with pytest.raises(NotConfigured):
        DnsFailuresDownloaderMiddleware.from_crawler(crawler)
    crawler.spider = Spider.from_crawler(crawler, "any")
    request = Request("https://gone.example/")
    retried = RetryMiddleware.from_crawler(crawler).process_exception(
        request, CannotResolveHostError("no results")
    )
    assert isinstance(retried, Request)
