"""Each stored page's media (zeroarchive/media/): every ``FetchedPage`` a spider yields, of
any source, is followed by the requests of the images, stylesheets and videos it shows
(its site's ``media`` kinds), when it is a first snapshot or a changed version. The
requests go back through the scheduler, so they ride the crawl's queue (redis too),
politeness, proxies, robots rules and private-target refusals as pages do. An item this
crawl fetched within ``ZEROARCHIVE_MEDIA_REUSE_SECONDS`` is recorded from what it holds,
not fetched again (0: every item is fetched for every snapshot)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.resolver import dnscache
from scrapy.settings import BaseSettings
from w3lib.url import safe_url_string

from zeroarchive.core.environment import from_environment
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.request_meta import META_KEY, archive_meta
from zeroarchive.core.stats import count
from zeroarchive.core.urls import MAX_URL_LENGTH

if TYPE_CHECKING:
    from zeroarchive.media.fetch import Fetched, MediaReuse
    from zeroarchive.media.keepalive import KeepAlive

logger = logging.getLogger(__name__)


def media_enabled(settings: BaseSettings) -> bool:
    """``ZEROARCHIVE_MEDIA_ENABLED``: the environment variable, else the setting.

    >>> from scrapy.settings import Settings
    >>> media_enabled(Settings({"ZEROARCHIVE_MEDIA_ENABLED": False}))
    False
    """
    value = from_environment("ZEROARCHIVE_MEDIA_ENABLED", settings)
    return value is not None and value.strip().lower() not in ("0", "false", "no", "off")


class MediaSpiderMiddleware:
    def __init__(self, crawler: Crawler, reuse_seconds: float = 0.0) -> None:
        self.crawler = crawler
        # What this crawl fetched lately, not fetched again (zeroarchive/media/fetch.py);
        # the spider's media callback keeps what it got there.
        self.reuse: MediaReuse | None = None
        if reuse_seconds > 0:
            from zeroarchive.media.fetch import MediaReuse

            self.reuse = MediaReuse(reuse_seconds)
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MediaSpiderMiddleware:
        if not media_enabled(crawler.settings):
            raise NotConfigured("ZEROARCHIVE_MEDIA_ENABLED is off")
        seconds = crawler.settings.getfloat("ZEROARCHIVE_MEDIA_REUSE_SECONDS")
        if seconds < 0:
            raise ValueError("ZEROARCHIVE_MEDIA_REUSE_SECONDS must not be negative")
        return cls(crawler, seconds)

    def spider_opened(self, spider: Any) -> None:
        spider.media_reuse = self.reuse

    def _follow(self, response: Response, output: Any) -> Iterator[Any]:
        yield output
        if not isinstance(output, FetchedPage):
            return
        spider = self.crawler.spider
        site_of = getattr(spider, "site", None)
        site = site_of(output.site_id) if site_of is not None else None
        if site is None:
            return
        from zeroarchive.media.fetch import grouped, media_outputs

        meta = response.meta.get(META_KEY, {})
        n = 0
        outputs = media_outputs(output, site, meta.get("last_hash"), spider, self.reuse)
        for follow in grouped(outputs):
            n += 1
            yield follow
        if n:
            count(self.crawler.stats, "media/pages", output.site_id)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for output in result:
            yield from self._follow(response, output)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            for follow in self._follow(response, output):
                yield follow


class MediaBatchDownloaderMiddleware:
    """Fetches the items of a media request's batch (zeroarchive/media/fetch.py,
    ``batched``): last in the chain, once the request went through every other
    middleware (its host's slot and private-target verdict, the site's proxy, cookies and
    user agent, robots.txt for its first URL), it downloads each item with Scrapy's own
    download handler under those same headers and settings, one after the other, and
    answers for all of them at once. An item whose URL robots.txt refuses, that is too
    long, that fails or that does not answer 2xx (a redirect, a 404, a 503 to retry) is
    left to a request of its own through the whole stack, whose middlewares decide (and
    record) what becomes of it. Saves the scheduler, the engine, the middlewares and the
    spider middlewares of all but one request per batch: most of what an item cost."""

    def __init__(self, crawler: Crawler) -> None:
        from zeroarchive.media.keepalive import KeepAlivePool

        self.crawler = crawler
        self._robots: Any = None
        # The keep-alive connections of finished batches, for their hosts' next ones.
        self.pool = KeepAlivePool()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MediaBatchDownloaderMiddleware:
        if not media_enabled(crawler.settings):
            # Without a message: the spider middleware's line already says media are off.
            raise NotConfigured()
        middleware = cls(crawler)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_closed(self) -> None:
        self.pool.close()

    def _robots_middleware(self) -> Any:
        if self._robots is None:
            from middlewares.robots import RobotsTxtDownloaderMiddleware

            engine = self.crawler.engine
            middlewares = engine.downloader.middleware.middlewares if engine else ()
            self._robots = next(
                (m for m in middlewares if isinstance(m, RobotsTxtDownloaderMiddleware)), False
            )
        return self._robots

    def _plain(self, request: Request, url: str) -> bool:
        """Whether ``url`` may be fetched inside the batch: not too long, and allowed by
        the robots.txt its host's first item was checked against."""
        if len(url) > MAX_URL_LENGTH:
            return False
        robots = self._robots_middleware()
        if not robots or request.meta.get("dont_obey_robotstxt"):
            return True
        from scrapy.robotstxt import RobotParser

        parser = robots._parsers.get(urlsplit(url).netloc)
        if not isinstance(parser, RobotParser):
            return parser is None  # none (robots.txt missing): allowed; still coming: not here
        agent = robots._robotstxt_useragent or request.headers.get(b"User-Agent")
        return bool(parser.allowed(url, agent or robots._default_useragent))

    def _keepalive(self, request: Request) -> KeepAlive | None:
        """The keep-alive client of a batch's host (zeroarchive/media/keepalive.py), when
        its request goes straight to the address the crawl's resolver checked: not
        through a proxy or from a bound address, over plain HTTP(S). A connection an
        earlier batch of the host left open is taken again."""
        from zeroarchive.media.keepalive import is_literal

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None  # the client runs on asyncio's loop: under another reactor, Scrapy's
        if request.meta.get("proxy") or request.meta.get("bindaddress"):
            return None
        parts = urlsplit(request.url)
        host = parts.hostname or ""
        if parts.scheme not in ("http", "https") or not host:
            return None
        address = host if is_literal(host) else dnscache.get(host)
        if not isinstance(address, str):
            return None  # resolved by another kind of resolver: Scrapy's handler connects
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return None
        headers = [
            (name, value)
            for name, values in request.headers.items()
            if name.lower() not in _OWN_HEADERS
            for value in values
        ]
        timeout = request.meta.get("download_timeout") or 180.0
        maxsize = request.meta.get("download_maxsize") or 0
        return self.pool.take(parts.scheme, host, port, address, headers, maxsize, timeout)

    async def process_request(self, request: Request) -> Response | None:
        from zeroarchive.media.fetch import RESULTS, Fetched, batch_items, item_meta, single_request
        from zeroarchive.media.keepalive import NotPlain

        if not archive_meta(request).get("batch"):
            return None
        engine = self.crawler.engine
        assert engine is not None
        handlers = engine.downloader.handlers
        results: list[Any] = []
        fetched = 0
        # A batch holds its answers until its last one: past one item's limit of bytes
        # (media_max_bytes), the rest go on their own, so no batch holds more than two.
        budget = request.meta.get("download_maxsize") or 0
        held = 0
        keepalive = self._keepalive(request)
        # Kept for the host's next batch only when every answer was read whole.
        done = False
        try:
            for item, spare in batch_items(request):
                if not self._plain(request, item.url) or (budget and held >= budget):
                    results.append(single_request(request, item, spare))
                    continue
                meta = item_meta(request, item, spare)
                url = item.url if _SAFE_URL.match(item.url) else safe_url_string(item.url)
                answer: Fetched | None = None
                if keepalive is not None:
                    try:
                        got = await keepalive.get(_target(url))
                    except NotPlain as exc:
                        # This item and the rest through Scrapy's handler, as before.
                        logger.debug("Media item %s: %s; through the handler", url, exc)
                        keepalive = None
                    else:
                        if not 200 <= got.status < 300:
                            results.append(single_request(request, item, spare))
                            continue
                        raw_type = got.headers.get(b"content-type")
                        content_type = None if raw_type is None else raw_type.decode("latin-1")
                        answer = Fetched(url, content_type, got.body, meta)
                if answer is None:
                    answer = await self._handler_fetch(handlers, request, url, meta)
                    if answer is None:
                        results.append(single_request(request, item, spare))
                        continue
                results.append(answer)
                fetched += 1
                held += len(answer.body)
            done = True
        finally:
            if keepalive is not None:
                if done:
                    self.pool.give(keepalive)
                else:
                    keepalive.close()
        count(self.crawler.stats, "media/batched", archive_meta(request).get("site_id"), fetched)
        request.meta[RESULTS] = results
        return Response(request.url, status=200, request=request)

    async def _handler_fetch(
        self, handlers: Any, request: Request, url: str, meta: dict[str, Any]
    ) -> Fetched | None:
        """One item with Scrapy's own download handler, under the batch's headers and
        settings (proxy, timeout, size limit, cookies), uncompressed: Scrapy's
        decompression is a middleware this bypasses. None: not a plain 2xx answer."""
        from zeroarchive.media.fetch import Fetched

        sub = request.replace(url=url, meta={**request.meta, META_KEY: meta})
        sub.headers.pop(b"Accept-Encoding", None)
        try:
            response = await handlers.download_request_async(sub)
        except Exception as exc:
            logger.debug("Media item %s: %r; asked for on its own", url, exc)
            return None
        if not 200 <= response.status < 300:
            return None
        raw_type = response.headers.get("Content-Type")
        content_type = None if raw_type is None else raw_type.decode("latin-1")
        return Fetched(sub.url, content_type, response.body, meta)


#: Headers the keep-alive client does not pass on: its own (Host), and Accept-Encoding
#: (the batch's items are stored as served: Scrapy's decompression is not in this path).
_OWN_HEADERS = (b"host", b"accept-encoding", b"connection", b"content-length")
#: URLs Scrapy's Request would keep as they are (safe_url_string changes nothing).
_SAFE_URL = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*(?<![?#])\Z")


def _target(url: str) -> str:
    """The request target of ``url``: its path (``/`` if none) and query.

    >>> _target("https://a.example/i/x.png?w=1#f"), _target("http://a.example")
    ('/i/x.png?w=1', '/')
    """
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
