"""robots.txt, fetched once per site and run, and a site that cannot be reached said once.

Replaces Scrapy's RobotsTxtMiddleware (settings/base.py turns that one off). Scrapy's
fetches a host's robots.txt for its rules, and the generic spider fetched it again for its
``Sitemap:`` lines; here the spider's own robots.txt request is answered from the copy
fetched for the rules. Scrapy's logs a robots.txt that cannot be fetched with a stack
trace, then every request to the host fails again on its own, each with more lines; here
a host that does not resolve or refuses connections is ONE warning line, and the run's
other requests to it are dropped unsent as :class:`Unreachable` of the same kind (the
spiders count and back off on that kind as on the failure itself). Any other failure
(a timeout, a TLS error) is one line too, and the host is crawled without rules, as
Scrapy does. A failed host is tried again after :data:`RETRY_FAILED_AFTER`, and fetched
rules are fetched anew after :data:`REFRESH_AFTER`, for workers that never exit.

It runs after the site policy (the site's ``robots: false``) and before the proxies, so
robots.txt goes out as the site's own requests do (slot, user agent, proxy), and a
spider's robots.txt request answered from the run's copy is never counted as proxied.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from zeroarchive.core.errors import Unreachable, error_kind
from zeroarchive.core.request_meta import META_KEY

logger = logging.getLogger(__name__)

#: Failures of a robots.txt fetch (after its retries) that mean the host is not there.
UNREACHABLE_KINDS = frozenset({"dns", "connection_refused"})

#: Seconds after a failed robots.txt fetch before the host is tried again: a distributed
#: worker never exits, and one failure (a site restarting) must not drop the host for ever.
RETRY_FAILED_AFTER = 10 * 60
#: Seconds a fetched robots.txt is kept before it is fetched anew (workers run for ever).
REFRESH_AFTER = 24 * 60 * 60


def robots_url(url: str) -> str:
    """The robots.txt URL of ``url``'s host.

    >>> robots_url("https://www.cna.com.tw/list/aall.aspx?x=1")
    'https://www.cna.com.tw/robots.txt'
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


class RobotsTxtDownloaderMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        #: netloc -> the robots.txt response (any status), once fetched.
        self._responses: dict[str, Response] = {}
        #: netloc -> how its robots.txt fetch failed.
        self._failures: dict[str, str] = {}
        #: netloc -> when (monotonic seconds) its robots.txt fetch ended, either way.
        self._fetched_at: dict[str, float] = {}
        self._clock = time.monotonic

    async def process_request(self, request: Request) -> Response | None:  # type: ignore[override]
        if request.meta.get("dont_obey_robotstxt"):
            return None
        if request.url.startswith(("data:", "file:")):
            return None
        netloc = urlparse_cached(request).netloc
        rp = await self.robot_parser(request)
        kind = self._failures.get(netloc)
        if request.url == robots_url(request.url):
            # A spider's own request for robots.txt (its Sitemap: lines): the copy fetched.
            cached = self._responses.get(netloc)
            if cached is not None:
                self._stats.inc_value("robotstxt/served_from_run")
                return cached.replace(request=request)
            raise Unreachable(kind or "ignored", request.url)
        if kind in UNREACHABLE_KINDS:
            self._stats.inc_value("robotstxt/unreachable_dropped")
            raise Unreachable(kind, request.url)
        self.process_request_2(rp, request)
        return None

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        netloc = url.netloc
        self._forget_if_stale(netloc)
        if netloc not in self._parsers:
            self._parsers[netloc] = Deferred()
            meta: dict[str, object] = {
                "dont_obey_robotstxt": True,
                # Its retries' give-up line would be a second line for one unreachable host.
                "give_up_log_level": "DEBUG",
            }
            site = request.meta.get(META_KEY, {}).get("site_id")
            if site is not None:
                # Fetched as the site's own requests are: its download slot, user agent,
                # proxy and pauses (middlewares after this one read the site from here).
                meta[META_KEY] = {"site_id": site, "kind": "robots"}
            robots = Request(
                f"{url.scheme}://{netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                meta=meta,
                callback=NO_CALLBACK,
            )
            assert self.crawler.engine is not None
            try:
                response = await self.crawler.engine.download_async(robots)
            except Exception as exc:
                self._failed(exc, netloc, robots.url)
            else:
                self._responses[netloc] = response
                await self._parse_robots(response, netloc, request)
            self._fetched_at[netloc] = self._clock()
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[netloc]
        if isinstance(parser, Deferred):
            # One Deferred of its own per waiter: a future made from the shared one takes
            # its result and passes None on, so every request but the first waiting for
            # the host's robots.txt went out without its rules (Scrapy's own code does it).
            own: Deferred[RobotParser | None] = Deferred()

            def relay(result: RobotParser | None) -> RobotParser | None:
                own.callback(result)
                return result

            parser.addCallback(relay)
            return await maybe_deferred_to_future(own)
        return parser

    def _forget_if_stale(self, netloc: str) -> None:
        """Drop ``netloc``'s robots.txt (or its failure) once it is old enough to fetch anew."""
        fetched_at = self._fetched_at.get(netloc)
        if fetched_at is None:
            return  # never fetched, or its fetch is still under way
        keep_for = RETRY_FAILED_AFTER if netloc in self._failures else REFRESH_AFTER
        if self._clock() - fetched_at < keep_for:
            return
        del self._fetched_at[netloc]
        self._failures.pop(netloc, None)
        self._responses.pop(netloc, None)
        self._parsers.pop(netloc, None)

    def _failed(self, exc: Exception, netloc: str, url: str) -> None:
        kind, _ = error_kind(Failure(exc))
        self._failures[netloc] = kind
        if kind in UNREACHABLE_KINDS:
            self._stats.inc_value(f"robotstxt/unreachable/{kind}")
            logger.warning(
                "Site %s cannot be reached (%s: %s); its requests of this run are dropped",
                netloc,
                kind,
                exc,
            )
        elif not isinstance(exc, IgnoreRequest):
            logger.warning(
                "robots.txt of %s failed (%s: %s); crawling it without rules", url, kind, exc
            )
        self._robots_error(exc, netloc)
