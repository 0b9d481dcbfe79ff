"""A host name that did not resolve is not looked up again, nor its request retried, for
the rest of the run (at most ``DNS_FAILURES_KEEP_SECONDS``): the requests that follow fail
at once with the same error.

Scrapy retries a failed lookup like any download error (``RETRY_TIMES``, here with
growing pauses: 2 + 4 + 8 s), and each request to the host looks it up again; on a machine
that cannot reach the site (no network, a name that no longer exists) that cost 14 s of
every crawl for nothing, and more where each lookup waits for ``DNS_TIMEOUT``. A name
that fails now fails again seconds later: the next run (or, for a worker that never
exits, the next lookup after ``DNS_FAILURES_KEEP_SECONDS``) tries it again.

It runs after the retry middleware in ``process_request`` order (before it in
``process_exception`` order), so it marks a failed request ``dont_retry`` before the
retry middleware sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.http import Request
from scrapy.settings import BaseSettings
from scrapy.utils.httpobj import urlparse_cached


@dataclass(frozen=True)
class DnsFailuresConfig:
    #: How long a failed name is not looked up again (a worker that never exits).
    keep_seconds: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DnsFailuresConfig:
        """The config, or NotConfigured when it is off.

        >>> from scrapy.settings import Settings
        >>> DnsFailuresConfig.from_settings(Settings({"DNS_FAILURES_ENABLED": True,
        ...     "DNS_FAILURES_KEEP_SECONDS": 600}))
        DnsFailuresConfig(keep_seconds=600.0)
        >>> DnsFailuresConfig.from_settings(Settings({"DNS_FAILURES_ENABLED": True,
        ...     "DNS_FAILURES_KEEP_SECONDS": -1}))
        Traceback (most recent call last):
        ...
        ValueError: DNS_FAILURES_KEEP_SECONDS must be positive, not -1.0
        """
        if not settings.getbool("DNS_FAILURES_ENABLED"):
            raise NotConfigured("DNS_FAILURES_ENABLED is off")
        keep = settings.getfloat("DNS_FAILURES_KEEP_SECONDS")
        if keep <= 0:
            raise ValueError(f"DNS_FAILURES_KEEP_SECONDS must be positive, not {keep}")
        return cls(keep_seconds=keep)


class DnsFailuresDownloaderMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        config: DnsFailuresConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.crawler = crawler
        self.config = config
        self._clock = clock
        #: host name -> (when its lookup failed, monotonic seconds; the error's text)
        self._failed: dict[str, tuple[float, str]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DnsFailuresDownloaderMiddleware:
        return cls(crawler, DnsFailuresConfig.from_settings(crawler.settings))

    def _inc(self, key: str) -> None:
        if self.crawler.stats:
            self.crawler.stats.inc_value(key)

    def process_request(self, request: Request) -> None:
        host = urlparse_cached(request).hostname
        failed = self._failed.get(host or "")
        if failed is None:
            return
        when, why = failed
        if self._clock() - when >= self.config.keep_seconds:
            del self._failed[host or ""]
            return
        self._inc("dns_failures/requests_failed_at_once")
        request.meta["dont_retry"] = True
        raise CannotResolveHostError(f"{why} (failed earlier in this run, not looked up again)")

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not isinstance(exception, CannotResolveHostError):
            return
        request.meta["dont_retry"] = True
        host = urlparse_cached(request).hostname or ""
        if host not in self._failed:
            self._inc("dns_failures/hosts")
            self._failed[host] = (self._clock(), str(exception))
