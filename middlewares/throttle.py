"""Backing off when a site says "too many requests" (429, and for sites that answer a
crawler that way, 403): the request is retried after a growing pause (``THROTTLE_BASE``
seconds, doubled each time, at most ``THROTTLE_MAX``), or after the server's
``Retry-After`` when that is longer, and the whole site waits meanwhile.

Requests choose the statuses treated so with ``meta["throttle_http_codes"]`` (default
``THROTTLE_HTTP_CODES``). After ``THROTTLE_TIMES`` pauses the response goes on as a failure.
Runs before the retry middleware (550) on responses, so those statuses are handled here.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from dataclasses import dataclass

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings

from middlewares.retry_backoff import NOT_BEFORE
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count

logger = logging.getLogger(__name__)

CODES_META = "throttle_http_codes"
TIMES_META = "throttle_times"


@dataclass(frozen=True)
class ThrottleConfig:
    http_codes: frozenset[int]
    base: float
    cap: float
    times: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ThrottleConfig:
        if not settings.getbool("THROTTLE_ENABLED"):
            raise NotConfigured("THROTTLE_ENABLED is off")
        config = cls(
            http_codes=frozenset(int(code) for code in settings.getlist("THROTTLE_HTTP_CODES")),
            base=settings.getfloat("THROTTLE_BASE"),
            cap=settings.getfloat("THROTTLE_MAX"),
            times=settings.getint("THROTTLE_TIMES"),
        )
        if config.base < 0 or config.cap < config.base or config.times < 0:
            raise ValueError(f"THROTTLE_* settings: need 0 <= BASE <= MAX, TIMES >= 0: {config}")
        return config


def retry_after_seconds(value: str | None, now: float) -> float:
    """Seconds a ``Retry-After`` header asks for (delta seconds or an HTTP date); 0 if none.

    >>> retry_after_seconds("120", 0)
    120.0
    >>> retry_after_seconds("Thu, 01 Jan 1970 00:01:00 GMT", 30)
    30.0
    >>> retry_after_seconds("soon", 0), retry_after_seconds(None, 0)
    (0.0, 0.0)
    """
    if not value:
        return 0.0
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, when.timestamp() - now)


def pause_seconds(times: int, retry_after: float, base: float, cap: float) -> float:
    """The pause before the ``times``-th retry: doubling from ``base``, or ``retry_after``
    when longer, never over ``cap``.

    >>> [pause_seconds(n, 0, 5, 60) for n in (1, 2, 3, 5)]
    [5.0, 10.0, 20.0, 60.0]
    >>> pause_seconds(1, 30, 5, 60), pause_seconds(1, 900, 5, 60)
    (30.0, 60.0)
    """
    return float(min(max(base * 2 ** (times - 1), retry_after), cap))


class ThrottleDownloaderMiddleware:
    def __init__(self, crawler: Crawler, config: ThrottleConfig) -> None:
        self.crawler = crawler
        self.config = config
        # Download slot -> time before which no request of that slot may start.
        self.paused_until: dict[str, float] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ThrottleDownloaderMiddleware:
        return cls(crawler, ThrottleConfig.from_settings(crawler.settings))

    async def process_request(self, request: Request) -> None:
        slot = request.meta.get("download_slot")
        if slot is None:
            return
        wait = self.paused_until.get(slot, 0.0) - time.time()
        if wait > 0:
            await asyncio.sleep(wait)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        codes = request.meta.get(CODES_META, self.config.http_codes)
        if response.status not in codes:
            return response
        site_id = request.meta.get(META_KEY, {}).get("site_id")
        stats = self.crawler.stats
        count(stats, f"throttled/http_{response.status}", site_id)
        times = request.meta.get(TIMES_META, 0) + 1
        if times > self.config.times:
            logger.error(
                "Still refused (%d) after %d pauses, giving up on %s",
                response.status,
                self.config.times,
                request.url,
            )
            count(stats, "throttled/gave_up", site_id)
            # The retry middleware must not try again at once what we gave up on.
            request.meta["dont_retry"] = True
            return response
        header = response.headers.get("Retry-After")
        now = time.time()
        retry_after = retry_after_seconds(header.decode("latin-1") if header else None, now)
        pause = pause_seconds(times, retry_after, self.config.base, self.config.cap)
        slot = request.meta.get("download_slot")
        if slot is not None:
            self.paused_until[slot] = max(self.paused_until.get(slot, 0.0), now + pause)
        logger.warning(
            "%s answered %d: pausing the site %.1f s (pause %d of at most %d)",
            request.url,
            response.status,
            pause,
            times,
            self.config.times,
        )
        retry = request.replace(dont_filter=True)
        retry.meta[TIMES_META] = times
        retry.meta[NOT_BEFORE] = now + pause
        return retry
