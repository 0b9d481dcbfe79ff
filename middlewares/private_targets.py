"""Refuses requests to hosts that are not on the public internet (loopback, private,
link-local, multicast, reserved: zeroarchive/core/targets.py), unless the archive
(``ZEROARCHIVE_ALLOW_PRIVATE_TARGETS``) or the request's site (``allow_private_targets``,
for its own host) allows them.

Placed before every middleware that sends or makes requests, so it sees each one: a
spider's, robots.txt's, and those Scrapy's redirect and meta refresh middlewares schedule
anew for a ``Location`` or a ``<meta http-equiv="refresh">``. A name is resolved first by
the crawl's own resolver, whose cache the download then connects to (a name that answers
a public address here and 127.0.0.1 a moment later still reaches only the address checked),
and by the system's resolver for all its addresses, IPv6 too; a refusal is the failure kind
``private_target`` of the page, logged and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import threads

from middlewares.site_policy import SiteSpider
from zeroarchive.core.errors import PrivateTarget
from zeroarchive.core.targets import (
    TargetRefused,
    allow_private_targets,
    check_host,
    host_address,
    resolve,
    site_allows,
)

logger = logging.getLogger(__name__)


class PrivateTargetsDownloaderMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        allow_all: bool,
        resolver: Callable[[str], Sequence[str]] = resolve,
    ) -> None:
        self.crawler = crawler
        self.allow_all = allow_all
        self.resolver = resolver
        #: host -> why it is refused (None when it is public), once checked in this run.
        self.verdicts: dict[str, TargetRefused | None] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PrivateTargetsDownloaderMiddleware:
        return cls(crawler, allow_private_targets(crawler.settings))

    async def process_request(self, request: Request) -> None:
        if self.allow_all or request.url.startswith(("data:", "file:")):
            return
        try:
            host = urlparse_cached(request).hostname or ""
        except ValueError:
            return  # not a URL the downloader can fetch either
        if host not in self.verdicts:
            self.verdicts[host] = await self._check(host)
        why = self.verdicts[host]
        # The site is asked only for a refused host: a Protocol's isinstance costs ~20 us.
        if why is not None and not self._site_allows(request):
            if self.crawler.stats:
                kind = why.kind.replace(" ", "_")
                self.crawler.stats.inc_value(f"zeroarchive/targets_refused/{kind}")
            logger.warning(
                "Refusing %s: %s (not the public internet; a site may allow it with "
                "allow_private_targets: true, the archive with ZEROARCHIVE_ALLOW_PRIVATE_TARGETS)",
                request.url[:200],
                why,
            )
            raise PrivateTarget(str(why), request.url)

    def _site_allows(self, request: Request) -> bool:
        spider = self.crawler.spider
        if not isinstance(spider, SiteSpider):
            return False
        site = spider.site_of(request)
        return site is not None and site_allows(
            site.url, site.config.allow_private_targets, request.url
        )

    async def _check(self, host: str) -> TargetRefused | None:
        """Why ``host`` is refused, or None when every address it has is public."""
        try:
            check_host(host, resolver=None)
            if host_address(host) is not None:
                return None
            # The crawl's resolver first: the address it caches is the one connected to.
            from twisted.internet import reactor

            try:
                pinned = await maybe_deferred_to_future(reactor.resolve(host))  # type: ignore[arg-type]
            except Exception:
                pinned = None
            if pinned is not None:
                check_host(host, lambda _: [pinned])
            await maybe_deferred_to_future(threads.deferToThread(check_host, host, self.resolver))
        except TargetRefused as exc:
            return exc
        return None
