"""Per-site politeness: each site gets its own download slot (its ``delay``, one request at
a time), its user agent and cookies (its ``cookies``, and a browser session's from its
``cookies_file``), and may opt out of robots.txt.

A walk's page (a list page, a login) goes ahead of the site's snapshots waiting in its slot
(``WalkFirstQueue``): Scrapy's slot queue is first in, first out, and a walk's next page
handed to the downloader behind 30 snapshots of a site with a delay of 1 s waited half a
minute, though every snapshot after it waited for it.

A page's media items (zeroarchive/media/) are fetched as a browser loads them after the
page: a slot per host of its own (``media-<host>``), without the site's delay, at most
``MEDIA_CONNECTIONS`` at once; the site's ``delay`` paces its pages, and one page's items
come at once, as one reader's view does. Its ``cookies`` go to its own host only.

Runs before Scrapy's robots.txt (100), user-agent (500) and cookies (700) middlewares, so
what it sets is what they see.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.settings import BaseSettings

from zeroarchive.core.request_meta import archive_meta
from zeroarchive.distributed.walks import WALK_KINDS
from zeroarchive.sites.proxies import SessionCookies, cookies_for
from zeroarchive.sites.record import DEFAULT_DELAY, Site

logger = logging.getLogger(__name__)
# Browsers open six connections per host over HTTP/1.1 (Chrome, Firefox).
MEDIA_CONNECTIONS = 6


class WalkFirstQueue(deque[Any]):
    """A site slot's queue of (request, deferred) in which a walk's page is put behind the
    walk pages already waiting but ahead of every other request (Scrapy's slot takes from
    the left); the slot's delay and concurrency pace them all as before.

    >>> def entry(kind):
    ...     return Request("https://a.example/", meta={"zeroarchive": {"kind": kind}}), kind
    >>> queue = WalkFirstQueue([entry("snapshot"), entry("snapshot")])
    >>> queue.append(entry("list")); queue.append(entry("snapshot")); queue.append(entry("login"))
    >>> [kind for _, kind in queue]
    ['list', 'login', 'snapshot', 'snapshot', 'snapshot']
    """

    def append(self, entry: Any) -> None:
        if archive_meta(entry[0]).get("kind") not in WALK_KINDS:
            super().append(entry)
            return
        ahead = 0
        for queued, _ in self:
            if archive_meta(queued).get("kind") not in WALK_KINDS:
                break
            ahead += 1
        self.insert(ahead, entry)


@runtime_checkable
class SiteSpider(Protocol):
    """A spider that knows the site of each of its requests (the archive's spiders)."""

    def site_of(self, request: Request) -> Site | None: ...


def default_site_delay(settings: BaseSettings) -> float:
    """ZEROARCHIVE_SITE_DELAY, the delay of a site whose config gives none: the environment
    variable of that name (a test or lab deployment), else the setting, else DEFAULT_DELAY.

    >>> from scrapy.settings import Settings
    >>> default_site_delay(Settings({"ZEROARCHIVE_SITE_DELAY": "2.5"}))
    2.5
    """
    raw = os.environ.get("ZEROARCHIVE_SITE_DELAY") or settings.get("ZEROARCHIVE_SITE_DELAY")
    if raw is None or raw == "":
        return DEFAULT_DELAY
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 <= seconds <= 3600:
        raise ValueError(f"ZEROARCHIVE_SITE_DELAY must be 0 to 3600 seconds, got {raw!r}")
    return seconds


@dataclass(frozen=True)
class SitePolicyConfig:
    concurrency: int
    #: The delay of a site whose config gives none (ZEROARCHIVE_SITE_DELAY).
    default_delay: float = DEFAULT_DELAY

    def delay(self, site: Site) -> float:
        return self.default_delay if site.config.delay is None else site.config.delay

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SitePolicyConfig:
        if not settings.getbool("SITE_POLICY_ENABLED"):
            raise NotConfigured("SITE_POLICY_ENABLED is off")
        concurrency = settings.getint("SITE_POLICY_CONCURRENCY")
        if concurrency < 1:
            raise ValueError("SITE_POLICY_CONCURRENCY must be at least 1")
        return cls(concurrency, default_site_delay(settings))


class SitePolicyDownloaderMiddleware:
    def __init__(self, crawler: Crawler, config: SitePolicyConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.cookie_files = SessionCookies()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitePolicyDownloaderMiddleware:
        return cls(crawler, SitePolicyConfig.from_settings(crawler.settings))

    def process_request(self, request: Request) -> None:
        spider = self.crawler.spider
        if not isinstance(spider, SiteSpider):
            return
        site = spider.site_of(request)
        if site is None:
            return
        host = urlsplit(request.url).hostname or ""
        media = archive_meta(request).get("kind") == "media"
        if media:
            slot = f"media-{host}"
            wanted: dict[str, float] = {"delay": 0.0, "concurrency": MEDIA_CONNECTIONS}
        else:
            slot = f"site-{site.site_id}"
            wanted = {
                "delay": self.config.delay(site),
                "concurrency": self.config.concurrency,
            }
        request.meta["download_slot"] = slot
        downloader: Any = self.crawler.engine.downloader if self.crawler.engine else None
        if downloader is not None and downloader.per_slot_settings.get(slot) != wanted:
            downloader.per_slot_settings[slot] = wanted
            # A site record read again with another delay: the slot Scrapy made from the
            # old one keeps its own copy.
            live = downloader.slots.get(slot)
            if live is not None:
                live.delay = wanted["delay"]
        if not media and downloader is not None:
            # Scrapy makes the slot for its first request, after this: its second one
            # finds it. Taken over with what waits in it, in its order.
            live = downloader.slots.get(slot)
            if live is not None and not isinstance(live.queue, WalkFirstQueue):
                live.queue = WalkFirstQueue(live.queue)
        if site.config.ua:
            request.headers["User-Agent"] = site.config.ua
        if not media or _same_host(site.url, host):
            for name, value in site.config.cookies.items():
                request.cookies.setdefault(name, value)
        if site.config.cookies_file and not request.meta.get("playwright"):
            self._session(request, site)
        if not site.config.robots:
            request.meta["dont_obey_robotstxt"] = True

    def _session(self, request: Request, site: Site) -> None:
        """The session cookies of the site's ``cookies_file`` that go to the request's host."""
        assert site.config.cookies_file is not None
        cookies = self.cookie_files.read(
            self.crawler.stats, site.site_id, site.name, site.config.cookies_file
        )
        for name, value in cookies_for(cookies or (), urlsplit(request.url).hostname or "").items():
            request.cookies.setdefault(name, value)  # type: ignore[union-attr]


def _same_host(site_url: str, host: str) -> bool:
    """Whether ``host`` is the site's host or one of its subdomains.

    >>> _same_host("https://news.example/", "img.news.example"), _same_host("https://a.b/", "cdn.c")
    (True, False)
    """
    own = (urlsplit(site_url).hostname or "").removeprefix("www.")
    return bool(own) and (host == own or host.endswith("." + own) or host == "www." + own)
