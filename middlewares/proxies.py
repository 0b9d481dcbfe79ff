"""Sends a site's plain requests through its proxies (config ``proxy``: one URL or a list,
used in turn), else through the shared pool (``ZEROARCHIVE_PROXIES``, in turn). Browser
requests get their proxy per browser context (zeroarchive/crawl/browser.py).

Runs before Scrapy's HttpProxyMiddleware (750), which moves the proxy's credentials into
a Proxy-Authorization header: they never reach a log.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request

from zeroarchive.core.stats import count
from zeroarchive.sites.proxies import proxies_for, proxy_pool


class ProxyDownloaderMiddleware:
    def __init__(self, crawler: Crawler, pool: tuple[str, ...]) -> None:
        self.crawler = crawler
        self.pool = pool
        self._turns: dict[tuple[str, ...], Iterator[str]] = {}
        self._by_host: dict[str, tuple[str, ...]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProxyDownloaderMiddleware:
        return cls(crawler, proxy_pool(crawler.settings))

    def process_request(self, request: Request) -> None:
        if request.meta.get("playwright") or "proxy" in request.meta:
            return
        site_of: Any = getattr(self.crawler.spider, "site_of", None)
        site = site_of(request) if site_of is not None else None
        host = urlsplit(request.url).netloc
        if site is not None:
            proxies = proxies_for(site.config.proxies, self.pool)
            # Requests of no site to a site's host (robots.txt, which Scrapy's robots
            # middleware asks for after this one passed) take the same way.
            self._by_host[host] = proxies
        else:
            proxies = self._by_host.get(host, self.pool)
        if not proxies:
            return
        turn = self._turns.setdefault(proxies, itertools.cycle(proxies))
        request.meta["proxy"] = next(turn)
        count(self.crawler.stats, "proxied", site.site_id if site else None)
